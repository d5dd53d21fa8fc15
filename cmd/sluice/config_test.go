package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr string // substring; empty means success
		check   func(t *testing.T, c Config)
	}{
		{name: "empty file means defaults", yaml: "", check: func(t *testing.T, c Config) {
			if c.Listen != ":6820" || c.SchedulerName != "sluice" || !c.LeaderElection.Enabled {
				t.Errorf("defaults not applied: %+v", c)
			}
		}},
		{name: "fields override defaults", yaml: "listen: 127.0.0.1:7000\nlog:\n  format: json\nleaderElection:\n  leaseDuration: 30s\n",
			check: func(t *testing.T, c Config) {
				if c.Listen != "127.0.0.1:7000" || c.Log.Format != "json" || c.Log.Level != "info" {
					t.Errorf("got %+v", c)
				}
				if time.Duration(c.LeaderElection.LeaseDuration) != 30*time.Second {
					t.Errorf("leaseDuration = %s", c.LeaderElection.LeaseDuration)
				}
			}},
		{name: "unknown field names its line", yaml: "listen: :6820\nlisten_addr: x\n", wantErr: "line 2"},
		{name: "nested unknown field", yaml: "log:\n  level: info\n  colour: true\n", wantErr: "line 3"},
		{name: "bad duration names its line", yaml: "shutdownTimeout: soon\n", wantErr: "line 1"},
		{name: "bad log level", yaml: "log:\n  level: loud\n", wantErr: "log.level"},
		{name: "lease ordering", yaml: "leaderElection:\n  renewDeadline: 20s\n", wantErr: "leaseDuration"},
		{name: "lease ordering ignored when disabled", yaml: "leaderElection:\n  enabled: false\n  renewDeadline: 20s\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sluice.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := LoadConfig(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

func TestPickCommandHonoursSymlinkNames(t *testing.T) {
	tests := []struct {
		argv     []string
		wantName string
		wantArgs int
	}{
		{[]string{"/usr/bin/sluice", "server", "--listen", ":1"}, "server", 2},
		{[]string{"/usr/local/bin/version"}, "version", 0},
		{[]string{"sluice"}, "", 0},
	}
	for _, tt := range tests {
		name, args := pickCommand(tt.argv)
		if name != tt.wantName || len(args) != tt.wantArgs {
			t.Errorf("pickCommand(%q) = %q, %q", tt.argv, name, args)
		}
	}
}

func TestUnknownCommandExitsTwo(t *testing.T) {
	var out, errOut strings.Builder
	if code := runMain([]string{"sluice", "sbatchh"}, &out, &errOut); code != 2 {
		t.Fatalf("exit code %d, want 2", code)
	}
	if !strings.Contains(errOut.String(), `unknown command "sbatchh"`) {
		t.Errorf("stderr = %q", errOut.String())
	}
}

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
		help, err := parseFlags(fs, tt.args)
		_, isUsage := err.(usageError)
		if help != tt.wantHelp || isUsage != tt.wantUsage || (err != nil) != tt.wantUsage {
			t.Errorf("parseFlags(%q) = %v, %v", tt.args, help, err)
		}
	}
}
