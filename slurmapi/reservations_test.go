package slurmapi

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// resvStore is a Backend holding reservations in memory; everything else is nil.
type resvStore struct {
	Backend
	cat  *Catalog
	list []Reservation
}

func (f *resvStore) Catalog(context.Context) (*Catalog, error) { return f.cat, nil }

func (f *resvStore) Reservations(context.Context) ([]Reservation, error) {
	return slices.Clone(f.list), nil
}

func (f *resvStore) CreateReservation(_ context.Context, r Reservation) error {
	if slices.ContainsFunc(f.list, func(x Reservation) bool { return x.Name == r.Name }) {
		return BadRequest(ErrReservationNameDup, "name", "exists")
	}
	f.list = append(f.list, r)
	return nil
}

func (f *resvStore) UpdateReservation(_ context.Context, name string, change func(*Reservation) *Error) error {
	for i := range f.list {
		if f.list[i].Name == name {
			r := f.list[i]
			r.Users, r.Accounts, r.Flags = slices.Clone(r.Users), slices.Clone(r.Accounts), slices.Clone(r.Flags)
			if e := change(&r); e != nil {
				return e
			}
			f.list[i] = r
			return nil
		}
	}
	return NotFound(ErrReservationInvalid, "reservation_name", "no %s", name)
}

func (f *resvStore) DeleteReservation(_ context.Context, name string) error {
	for i := range f.list {
		if f.list[i].Name == name {
			f.list = slices.Delete(f.list, i, i+1)
			return nil
		}
	}
	return NotFound(ErrReservationInvalid, "reservation_name", "no %s", name)
}

var resvNow = time.Now().Truncate(time.Second)

func nlpHack() Reservation {
	return Reservation{Name: "nlp-hack", Start: resvNow.Add(2 * time.Minute), End: resvNow.Add(12 * time.Minute), ByDuration: true,
		Nodes: []string{"h100-0", "h100-1"}, NamedNodes: true, Accounts: []string{"nlp"}, Flags: []string{"SPEC_NODES"}, CPUs: 128, GPUs: 16}
}

func newResvServer(t *testing.T) (*httptest.Server, *resvStore) {
	t.Helper()
	store := &resvStore{cat: testCatalog(), list: []Reservation{nlpHack()}}
	srv, err := NewServer(Config{Auth: *testAuth(), Hostname: "ctl"}, store)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts, store
}

// reservations/ and reservation/{name} answer in every version's shape, each field a
// property the version has (Conform drops the others).
func TestReservationsInEveryVersion(t *testing.T) {
	ts, _ := newResvServer(t)
	alice := tokenFor(t, "alice")
	for _, v := range []string{"v0.0.41", "v0.0.42", "v0.0.43", "v0.0.44", "v0.0.45"} {
		for _, path := range []string{"/slurm/" + v + "/reservations/", "/slurm/" + v + "/reservation/nlp-hack"} {
			r := do(t, ts, "GET", path, alice, "")
			if r.status != 200 {
				t.Fatalf("%s: %d %s", path, r.status, r.body)
			}
			list, _ := r.doc["reservations"].([]any)
			if len(list) != 1 {
				t.Fatalf("%s: %d reservations: %s", path, len(list), r.body)
			}
			got := list[0].(map[string]any)
			for k, want := range map[string]any{"name": "nlp-hack", "node_list": "h100-[0-1]", "accounts": "nlp", "users": "",
				"node_count": 2.0, "core_count": 128.0, "tres": "cpu=128,gres/gpu=16", "partition": ""} {
				if got[k] != want {
					t.Errorf("%s: %s = %v, want %v", path, k, got[k], want)
				}
			}
			if fmt.Sprint(got["flags"]) != "[SPEC_NODES]" {
				t.Errorf("%s: flags %v", path, got["flags"])
			}
			for _, k := range []string{"start_time", "end_time"} {
				if nv, _ := got[k].(map[string]any); nv["number"] != float64(nlpHack().Start.Unix()) && k == "start_time" {
					t.Errorf("%s: %s = %v", path, k, got[k])
				}
			}
		}
	}
	r := do(t, ts, "GET", "/slurm/v0.0.44/reservation/nope", alice, "")
	if e := firstError(t, r); r.status != 404 || e["error_number"] != float64(ErrReservationInvalid) {
		t.Errorf("unknown reservation: %d %v", r.status, e)
	}
}

// Writes: operators and administrators create, change and delete; every bad input is a
// 4xx with an errors[] entry.
func TestReservationWrites(t *testing.T) {
	start := fmt.Sprint(resvNow.Add(time.Hour).Unix())
	good := `{"name":"fw","start_time":` + start + `,"duration":60,"node_list":["h100-[2-3]"],"users":["root"],"flags":["MAINT","IGNORE_JOBS"]}`
	cases := []struct {
		name, user, method, path, body string
		status, number                 int
	}{
		{"user may not create", "alice", "POST", "/slurm/v0.0.44/reservation", good, 403, ErrAccessDenied},
		{"user may not delete", "alice", "DELETE", "/slurm/v0.0.44/reservation/nlp-hack", "", 403, ErrAccessDenied},
		{"no create before v0.0.43", "slurm", "POST", "/slurm/v0.0.42/reservation", good, 404, ErrRestUnknownURL},
		{"bad JSON", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":`, 400, ErrRestFailParsing},
		{"no name", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"start_time":` + start + `,"duration":5,"node_list":"h100-0","users":"root"}`, 400, ErrReservationInvalid},
		{"bad name", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"Big_One","start_time":` + start + `,"duration":5,"node_list":"h100-0","users":"root"}`, 400, ErrReservationInvalid},
		{"no start", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"x","duration":5,"node_list":"h100-0","users":"root"}`, 400, ErrInvalidTimeValue},
		{"bad start text", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"x","start_time":"soon","duration":5,"node_list":"h100-0","users":"root"}`, 400, ErrInvalidTimeValue},
		{"no end", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"x","start_time":` + start + `,"node_list":"h100-0","users":"root"}`, 400, ErrInvalidTimeValue},
		{"ended", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"x","start_time":1000,"duration":5,"node_list":"h100-0","users":"root"}`, 400, ErrInvalidTimeValue},
		{"nobody", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"x","start_time":` + start + `,"duration":5,"node_list":"h100-0"}`, 400, ErrReservationEmpty},
		{"no nodes", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"x","start_time":` + start + `,"duration":5,"users":"root"}`, 400, ErrInvalidNodeCount},
		{"bad node list", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"x","start_time":` + start + `,"duration":5,"node_list":"h100-[3-","users":"root"}`, 400, ErrInvalidNodeName},
		{"unknown flag", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"x","start_time":` + start + `,"duration":5,"node_list":"h100-0","users":"root","flags":["OVERLAP"]}`, 400, ErrNotSupported},
		{"unsupported field", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"x","start_time":` + start + `,"duration":5,"core_count":4,"users":"root"}`, 400, ErrNotSupported},
		{"unknown partition", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"x","start_time":` + start + `,"duration":5,"node_count":2,"partition":"tpu","users":"root"}`, 400, ErrInvalidPartition},
		{"unknown account", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"x","start_time":` + start + `,"duration":5,"node_list":"h100-0","accounts":"physics"}`, 400, ErrInvalidAccount},
		{"part nodes without partition", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"x","start_time":` + start + `,"duration":5,"node_list":"ALL","users":"root","flags":["PART_NODES"]}`, 400, ErrReservationInvalid},
		{"end and duration", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"x","start_time":` + start + `,"end_time":` + start + `,"duration":5,"node_list":"h100-0","users":"root"}`, 400, ErrInvalidTimeValue},
		{"empty list", "slurm", "POST", "/slurm/v0.0.44/reservations", `{"reservations":[]}`, 400, ErrRestInvalidQuery},
		{"delete unknown", "slurm", "DELETE", "/slurm/v0.0.44/reservation/nope", "", 404, ErrReservationInvalid},
		{"update makes it end before it starts", "slurm", "POST", "/slurm/v0.0.44/reservation", `{"name":"nlp-hack","end_time":1000}`, 400, ErrInvalidTimeValue},
	}
	for _, tc := range cases {
		ts, _ := newResvServer(t)
		r := do(t, ts, tc.method, tc.path, tokenFor(t, tc.user), tc.body)
		if r.status != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, r.status, tc.status, r.body)
			continue
		}
		if e := firstError(t, r); e["error_number"] != float64(tc.number) {
			t.Errorf("%s: error %v, want %d", tc.name, e, tc.number)
		}
	}
}

func TestReservationCreateUpdateDelete(t *testing.T) {
	ts, store := newResvServer(t)
	op := tokenFor(t, "slurm")
	body := `{"name":"fw","start_time":"now","duration":60,"node_list":["h100-[2-3]"],"users":["root"],"flags":["MAGNETIC","MAINT"]}`
	if r := do(t, ts, "POST", "/slurm/v0.0.45/reservation", op, body); r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	fw := store.list[1]
	if fw.Name != "fw" || fmt.Sprint(fw.Nodes) != "[h100-2 h100-3]" || !fw.NamedNodes || fw.End.Sub(fw.Start) != time.Hour || !fw.ByDuration ||
		fmt.Sprint(fw.Flags) != "[MAINT MAGNETIC]" || fmt.Sprint(fw.Users) != "[root]" {
		t.Errorf("created %+v", fw)
	}
	// scontrol update ReservationName=nlp-hack Users+=alice Accounts-=nlp Flags-=SPEC_NODES,FLEX Duration=30
	upd := `{"reservations":[{"name":"nlp-hack","users":["+alice"],"accounts":["-nlp"],"flags":["FLEX"],"duration":30}]}`
	if r := do(t, ts, "POST", "/slurm/v0.0.43/reservations", op, upd); r.status != 200 {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	got := store.list[0]
	if fmt.Sprint(got.Users) != "[alice]" || len(got.Accounts) != 0 || got.End.Sub(got.Start) != 30*time.Minute || fmt.Sprint(got.Flags) != "[FLEX SPEC_NODES]" {
		t.Errorf("updated %+v", got)
	}
	if r := do(t, ts, "POST", "/slurm/v0.0.43/reservation", op, `{"name":"nlp-hack","flags":["NO_FLEX"]}`); r.status != 200 || store.list[0].HasFlag("FLEX") {
		t.Errorf("NO_FLEX: %d %s %v", r.status, r.body, store.list[0].Flags)
	}
	if r := do(t, ts, "DELETE", "/slurm/v0.0.43/reservation/fw", tokenFor(t, "boss"), ""); r.status != 200 || len(store.list) != 1 {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
}
