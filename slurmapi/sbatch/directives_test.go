package sbatch

import (
	"reflect"
	"strings"
	"testing"
)

func TestDirectiveArgs(t *testing.T) {
	cases := []struct {
		name    string
		script  string
		want    []string
		wantErr string
	}{
		{"basic", "#!/bin/bash\n#SBATCH -p h100\n#SBATCH --time=1:00:00\nsrun x\n", []string{"-p", "h100", "--time=1:00:00"}, ""},
		{"several per line", "#!/bin/sh\n#SBATCH -N 2 --ntasks-per-node=8\n", []string{"-N", "2", "--ntasks-per-node=8"}, ""},
		{"stops at first command", "#!/bin/sh\n#SBATCH -p a\necho hi\n#SBATCH -p b\n", []string{"-p", "a"}, ""},
		{"comments and blanks do not stop", "#!/bin/sh\n\n# a comment\n   # indented comment\n#SBATCH -p a\n", []string{"-p", "a"}, ""},
		{"column 0 only", "#!/bin/sh\n  #SBATCH -p a\n#SBATCH -p b\n", []string{"-p", "b"}, ""},
		{"case sensitive", "#!/bin/sh\n#sbatch -p a\n#SBATCH -p b\n", []string{"-p", "b"}, ""},
		{"double quotes group", "#!/bin/sh\n#SBATCH --job-name=\"my job\"\n", []string{"--job-name=my job"}, ""},
		{"single quotes group", "#!/bin/sh\n#SBATCH --comment 'a # b'\n", []string{"--comment", "a # b"}, ""},
		{"escaped quote", "#!/bin/sh\n#SBATCH --comment=say\\\"hi\\\"\n", []string{"--comment=say\"hi\""}, ""},
		{"escaped space", "#!/bin/sh\n#SBATCH -J a\\ b\n", []string{"-J", "a b"}, ""},
		{"trailing comment", "#!/bin/sh\n#SBATCH -p h100 # the big ones\n", []string{"-p", "h100"}, ""},
		{"comment glued to word", "#!/bin/sh\n#SBATCH -p h100#x\n", []string{"-p", "h100"}, ""},
		{"CRLF", "#!/bin/sh\r\n#SBATCH -p h100\r\n", []string{"-p", "h100"}, ""},
		{"no space after magic", "#!/bin/sh\n#SBATCH--time=5\n", []string{"--time=5"}, ""},
		{"commented-out directive", "#!/bin/sh\n##SBATCH -p a\n", nil, ""},
		{"unmatched quote", "#!/bin/sh\n#SBATCH -J \"oops\n", nil, "line 2: unmatched \""},
	}
	for _, tc := range cases {
		got, err := DirectiveArgs(tc.script)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}

func FuzzDirectiveArgs(f *testing.F) {
	f.Add("#!/bin/bash\n#SBATCH -p h100 --time=1:00\nsrun x\n")
	f.Add("#SBATCH -J 'a b' \"c\\\"d\" # x\n")
	f.Fuzz(func(t *testing.T, script string) {
		args, err := DirectiveArgs(script)
		if err != nil {
			return
		}
		// Whatever the directives say, parsing them must not panic, and
		// an error must be an error, never a half-filled result.
		opts, _, _, perr := Parse(args)
		if perr == nil && opts == nil {
			t.Fatal("Parse returned neither options nor an error")
		}
	})
}
