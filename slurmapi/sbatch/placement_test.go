package sbatch

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseConstraint(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    [][]string
		wantErr string
	}{
		{in: "ib", want: [][]string{{"ib"}}},
		{in: "h100&ib|a100", want: [][]string{{"h100", "ib"}, {"a100"}}},
		{in: "h100,ib", want: [][]string{{"h100", "ib"}}},
		{in: "nvidia.com/gpu.product=H100", want: [][]string{{"nvidia.com/gpu.product=H100"}}},
		{in: "[rack1|rack2]", wantErr: "not supported"},
		{in: "ib*2", wantErr: "not supported"},
		{in: "a||b", wantErr: "no feature"},
		{in: "a b", wantErr: "not a feature"},
		{in: "", wantErr: "empty"},
	} {
		got, err := ParseConstraint(tc.in)
		checkParsed(t, tc.in, got, err, tc.want, tc.wantErr)
	}
}

// checkParsed compares a parse's result with what is wanted: an error containing
// wantErr, or (wantErr "") want itself.
func checkParsed[T any](t *testing.T, in string, got T, err error, want T, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: err %v, want %q", in, err, wantErr)
		}
		return
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%q = %v, %v; want %v", in, got, err, want)
	}
}

func TestParseConstraintChoices(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    [][][]string
		wantErr string
	}{
		{in: "h100&ib|a100", want: [][][]string{{{"h100", "ib"}, {"a100"}}}},
		{in: "[rack1|rack2]", want: [][][]string{{{"rack1"}}, {{"rack2"}}}},
		{in: "ib&[r1|r2&fast]", want: [][][]string{{{"ib", "r1"}}, {{"ib", "r2", "fast"}}}},
		{in: "[r1|r2],ib", want: [][][]string{{{"ib", "r1"}}, {{"ib", "r2"}}}},
		{in: "[a*2&b*4]", wantErr: "node counts per feature"},
		{in: "ib*2", wantErr: "not supported"},
		{in: "[a|b]|c", wantErr: "outside the brackets"},
		{in: "[a|b]&[c|d]", wantErr: "one bracketed group"},
		{in: "(a|b)&c", wantErr: "not supported"},
		{in: "[a||b]", wantErr: "no feature"},
		{in: "[a|b", wantErr: "one bracketed group"},
	} {
		got, err := ParseConstraintChoices(tc.in)
		checkParsed(t, tc.in, got, err, tc.want, tc.wantErr)
	}
}

func TestParseNodeList(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "n1", want: []string{"n1"}},
		{in: "gpu-[01-03,07],login", want: []string{"gpu-01", "gpu-02", "gpu-03", "gpu-07", "login"}},
		{in: "rack[1-2]-n", want: []string{"rack1-n", "rack2-n"}},
		{in: "gpu-[3-1]", wantErr: true},
		{in: "gpu-[1-2", wantErr: true},
		{in: "/etc/hosts", wantErr: true},
		{in: ",", wantErr: true},
		{in: "n[0-4095]", want: func() []string {
			l := make([]string, 4096)
			for i := range l {
				l[i] = fmt.Sprintf("n%d", i)
			}
			return l
		}()},
		{in: "n[0-4096]", wantErr: true},                             // one past the cap
		{in: "n[0-4000],m[0-100]", wantErr: true},                    // over the cap across items
		{in: "n[0-99999999999]", wantErr: true},                      // refused before a name is made
		{in: strings.Repeat("x", 254), wantErr: true},                // longer than a node name
		{in: "n[" + strings.Repeat("0", 300) + "-1]", wantErr: true}, // padding past a name's length
	} {
		got, err := ParseNodeList(tc.in)
		if (err != nil) != tc.wantErr || (!tc.wantErr && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("%q = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestPlacementOptions(t *testing.T) {
	opts, _, warnings, err := Parse([]string{"-C", "ib", "-w", "n[1-2]", "-x", "n3", "--exclusive", "--switches=1@10:00"})
	if err != nil || len(warnings) != 0 {
		t.Fatalf("err %v warnings %v", err, warnings)
	}
	if opts.Constraint != "ib" || opts.NodeList != "n[1-2]" || opts.Exclude != "n3" || !opts.Exclusive || opts.Switches != 1 || opts.SwitchesWait != 10*time.Minute {
		t.Errorf("options %+v", opts)
	}
	for _, bad := range []string{"--switches=0", "--switches=1@soon", "--switches=2@0"} {
		if _, _, _, err := Parse([]string{bad}); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
