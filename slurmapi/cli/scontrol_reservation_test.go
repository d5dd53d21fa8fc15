package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/slurmapi/client"
)

func TestParseReservation(t *testing.T) {
	now := time.Date(2025, 3, 1, 8, 0, 0, 0, time.Local)
	at := func(s string) string {
		v, _ := time.ParseInLocation("2006-01-02T15:04", s, time.Local)
		return `{"set":true,"infinite":false,"number":` + jsonInt(v.Unix()) + `}`
	}
	cases := []struct {
		name   string
		args   []string
		update bool
		want   string // the desc as JSON, or the error
	}{
		{"create by duration", []string{"ReservationName=nlp-hack", "StartTime=now+2minutes", "Duration=10", "Nodes=h100-[0-1]", "Accounts=nlp"}, false,
			`{"accounts":["nlp"],"duration":{"set":true,"infinite":false,"number":10},"name":"nlp-hack","node_list":["h100-[0-1]"],"start_time":` + at("2025-03-01T08:02") + `}`},
		{"create by end, count, flags", []string{"reservationname=fw", "starttime=2025-03-04T09:00", "EndTime=2025-03-04T17:00", "NodeCnt=2", "PartitionName=h100", "Users=root,alice", "Flags=MAINT,IGNORE_JOBS"}, false,
			`{"end_time":` + at("2025-03-04T17:00") + `,"flags":["MAINT","IGNORE_JOBS"],"name":"fw","node_count":{"set":true,"infinite":false,"number":2},"partition":"h100","start_time":` + at("2025-03-04T09:00") + `,"users":["root","alice"]}`},
		{"unlimited", []string{"ReservationName=x", "StartTime=now", "Duration=UNLIMITED", "Nodes=h100-0", "Users=root"}, false,
			`{"duration":{"set":true,"infinite":true,"number":0},"name":"x","node_list":["h100-0"],"start_time":` + at("2025-03-01T08:00") + `,"users":["root"]}`},
		{"update with += and -=", []string{"ReservationName=x", "Users+=alice,bob", "Accounts-=nlp", "Flags-=FLEX", "Flags+=MAGNETIC", "Duration=1:00:00"}, true,
			`{"accounts":["-nlp"],"duration":{"set":true,"infinite":false,"number":60},"flags":["MAGNETIC"],"name":"x","users":["+alice","+bob"]}`},
		{"no one", []string{"ReservationName=x", "StartTime=now", "Duration=5", "Nodes=h100-0"}, false,
			"Either Users/Groups and/or Accounts must be specified.  No reservation created."},
		{"no name", []string{"StartTime=now", "Duration=5", "Nodes=h100-0", "Users=root"}, false, "ReservationName must be given"},
		{"no name on update", []string{"Duration=5"}, true, "Reservation must be given.  No reservation update."},
		{"bad start", []string{"ReservationName=x", "StartTime=bogus", "Duration=5", "Users=root"}, false, "Invalid start time StartTime=bogus.  No reservation created."},
		{"bad duration", []string{"ReservationName=x", "StartTime=now", "Duration=soon", "Users=root"}, false, "Invalid duration Duration=soon."},
		{"bad count", []string{"ReservationName=x", "NodeCnt=0", "Users=root"}, false, "Invalid node count NodeCnt=0."},
		{"unknown key", []string{"ReservationName=x", "Bogus=1"}, false, "Unknown parameter Bogus=1.  No reservation created."},
		{"+= where none is taken", []string{"ReservationName=x", "Duration+=5"}, true, "Unknown parameter Duration+=5.  No reservation updated."},
		{"not KEY=VALUE", []string{"ReservationName=x", "MAINT"}, true, "Unknown parameter MAINT."},
	}
	for _, tc := range cases {
		req, err := parseReservation(tc.args, tc.update, now)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			b, _ := json.Marshal(req.desc)
			got = string(b)
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestReservationVerbs(t *testing.T) {
	for _, tc := range []struct {
		verb string
		rest []string
		ok   bool
	}{
		{"create", []string{"reservation", "ReservationName=x", "StartTime=now", "Duration=5", "Nodes=h100-0", "Users=root"}, true},
		{"create", []string{"res", "ReservationName=x", "StartTime=now", "Duration=5", "Nodes=h100-0", "Users=root"}, true},
		{"create", []string{"ReservationName=x", "StartTime=now", "Duration=5", "Nodes=h100-0", "Users=root"}, true},
		{"create", []string{"job", "x"}, false},
		{"delete", []string{"reservation", "nlp-hack"}, true},
		{"delete", []string{"ReservationName=nlp-hack"}, true},
		{"delete", []string{"reservation"}, false},
		{"delete", nil, false},
	} {
		_, err := scontrolReservationVerb(tc.verb, tc.rest)
		if (err == nil) != tc.ok {
			t.Errorf("%s %v: err %v, want ok %v", tc.verb, tc.rest, err, tc.ok)
		}
	}
	if !isReservationUpdate([]string{"ReservationName=x", "Duration=5"}) || !isReservationUpdate([]string{"reservation", "ReservationName=x"}) ||
		isReservationUpdate([]string{"JobId=4", "TimeLimit=5"}) {
		t.Error("isReservationUpdate tells reservations from jobs wrongly")
	}
}

// testReservations are a maintenance window inside its window and a booking before it.
func testReservations() ([]client.Reservation, time.Time) {
	at := func(s string) client.NoVal {
		v, _ := time.ParseInLocation("2006-01-02T15:04:05", s, time.Local)
		return client.Set(v.Unix())
	}
	now, _ := time.ParseInLocation("2006-01-02T15:04:05", "2026-12-06T22:30:00", time.Local)
	return []client.Reservation{
		{Name: "nlp-hack", StartTime: at("2026-12-06T22:40:00"), EndTime: at("2026-12-06T22:50:00"), NodeList: "h100-[0-1]", NodeCount: 2, CoreCount: 128,
			Flags: []string{"SPEC_NODES"}, TRES: "cpu=128,gres/gpu=16", Accounts: "nlp"},
		{Name: "fw", StartTime: at("2026-12-06T22:24:44"), EndTime: at("2027-12-06T22:24:44"), NodeList: "h100-[2-3]", NodeCount: 2, CoreCount: 128,
			Flags: []string{"MAINT", "IGNORE_JOBS", "SPEC_NODES"}, TRES: "cpu=128,gres/gpu=16", Users: "root"},
	}, now
}

// scontrol show reservation in Slurm's layout (Slurm 22.05's, Watts and all).
func TestShowReservationLayout(t *testing.T) {
	list, now := testReservations()
	var b strings.Builder
	for _, r := range list {
		reservationRecord(r, now).write(&b, false)
	}
	reservationRecord(list[0], now).write(&b, true)
	checkGolden(t, "scontrol-show-reservation.golden", b.String())
}

// sinfo -T in Slurm's layout.
func TestSinfoReservations(t *testing.T) {
	list, now := testReservations()
	var b strings.Builder
	writeSinfoReservations(&b, list, now)
	writeSinfoReservations(&b, nil, now)
	checkGolden(t, "sinfo-T.golden", b.String())
}

func TestSqueueReservationColumnAndFilter(t *testing.T) {
	jobs := []client.Job{
		{JobID: 7, Name: "train", UserName: "alice", Partition: "h100", JobState: []string{"PENDING"}, StateReason: "Reservation", Reservation: "nlp-hack"},
		{JobID: 8, Name: "eval", UserName: "bob", Partition: "h100", JobState: []string{"PENDING"}, StateReason: "ReqNodeNotAvail, Reserved for maintenance"},
	}
	var b strings.Builder
	now := time.Unix(1_700_000_000, 0)
	if err := writeTable(&b, "%.4i %.8u %.2t %12v %R", squeueHeaders, false, len(jobs), func(r int, l byte) string {
		return squeueValue(jobs[r], l, now)
	}); err != nil {
		t.Fatal(err)
	}
	want := `JOBI     USER ST RESERVATION  NODELIST(REASON)
   7    alice PD nlp-hack     (Reservation)
   8      bob PD (null)       (ReqNodeNotAvail, Reserved for maintenance)
`
	if b.String() != want {
		t.Errorf("squeue:\n%s\nwant:\n%s", b.String(), want)
	}
	if got := filterJobs(jobs, jobFilter{reservation: "nlp-hack"}); len(got) != 1 || got[0].JobID != 7 {
		t.Errorf("squeue -R nlp-hack kept %v", got)
	}
}

func TestReservedNodeStates(t *testing.T) {
	for _, tc := range []struct {
		states      []string
		long, short string
	}{
		{[]string{"IDLE", "MAINTENANCE"}, "maintenance", "maint"},
		{[]string{"IDLE", "RESERVED"}, "reserved", "resv"},
		{[]string{"MIXED", "RESERVED"}, "mixed", "mix"},
		{[]string{"ALLOCATED", "MAINTENANCE"}, "allocated", "alloc"},
		{[]string{"IDLE", "DRAIN", "MAINTENANCE"}, "drained", "drain"},
	} {
		if l, s := nodeState(tc.states), nodeStateName(tc.states); l != tc.long || s != tc.short {
			t.Errorf("%v: %s/%s, want %s/%s", tc.states, l, s, tc.long, tc.short)
		}
	}
	want, err := sinfoStates("maint,resv")
	if err != nil || !want["maintenance"] || !want["reserved"] {
		t.Errorf("sinfo -t maint,resv: %v %v", want, err)
	}
}

// scontrol show job names the job's reservation after its node requirements, before
// Command, as Slurm does, and says nothing of one it has not.
func TestShowJobReservationLine(t *testing.T) {
	var b strings.Builder
	jobRecord(client.Job{JobID: 7, JobState: []string{"PENDING"}, Reservation: "nlp-hack", Command: "/home/alice/train.sh"}, time.Now()).write(&b, false)
	out := b.String()
	if i, j := strings.Index(out, "   Reservation=nlp-hack\n"), strings.Index(out, "   Command="); i < 0 || j < i {
		t.Errorf("no Reservation line before Command:\n%s", out)
	}
	b.Reset()
	jobRecord(client.Job{JobID: 8, JobState: []string{"PENDING"}}, time.Now()).write(&b, false)
	if strings.Contains(b.String(), "Reservation=") {
		t.Errorf("a job without a reservation shows one:\n%s", b.String())
	}
}
