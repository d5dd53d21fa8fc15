package cli

import (
	"flag"
	"io"
	"testing"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args      []string
		wantHelp  bool
		wantUsage bool
	}{
		{[]string{"--help"}, true, false},
		{[]string{"--bogus"}, false, true},
		{[]string{"--n", "3"}, false, false},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Int("n", 0, "")
		help, err := ParseFlags(fs, tt.args)
		_, isUsage := err.(UsageError)
		if help != tt.wantHelp || isUsage != tt.wantUsage || (err != nil) != tt.wantUsage {
			t.Errorf("ParseFlags(%q) = %v, %v", tt.args, help, err)
		}
	}
}
