package kube

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const testPasswd = `# the site's users
root:x:0:0:root:/root:/bin/bash

alice:x:1001:1001:Alice:/home/alice:/bin/bash
bob:x:1002:100::/home/bob:/bin/sh
  carol:x:1003:100:Carol, Lab 3:/nfs/home/carol:/bin/zsh
alice:x:9999:9999:a second alice:/elsewhere:/bin/sh
`

const testGroup = `root:x:0:
alice:x:1001:
users:x:100:
nlp:x:2000:alice,bob
vision:*:2001: carol , alice
# a comment
gpu:x:3000:bob,,erin
`

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPasswdFiles: users, their primary and supplementary groups and homes
// as getpwnam and getgrouplist give them; comments and blank lines skipped;
// the first of two lines for one name counts.
func TestPasswdFiles(t *testing.T) {
	dir := t.TempDir()
	passwd, group := filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
	writeFile(t, passwd, testPasswd)
	writeFile(t, group, testGroup)
	files, err := NewPasswdFiles(passwd, group)
	if err != nil {
		t.Fatal(err)
	}
	noGroups, err := NewPasswdFiles(passwd, "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		src  *PasswdFiles
		user string
		want UserIDs
	}{
		{files, "alice", UserIDs{UID: 1001, GID: 1001, Groups: []int64{1001, 2000, 2001}, Home: "/home/alice"}},
		{files, "bob", UserIDs{UID: 1002, GID: 100, Groups: []int64{100, 2000, 3000}, Home: "/home/bob"}},
		{files, "carol", UserIDs{UID: 1003, GID: 100, Groups: []int64{100, 2001}, Home: "/nfs/home/carol"}},
		{files, "root", UserIDs{UID: 0, GID: 0, Groups: []int64{0}, Home: "/root"}},
		{noGroups, "bob", UserIDs{UID: 1002, GID: 100, Groups: []int64{100}, Home: "/home/bob"}},
	}
	for _, tc := range tests {
		got, err := tc.src.Lookup(context.Background(), tc.user)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %s = %+v, %v; want %+v", tc.src, tc.user, got, err, tc.want)
		}
	}
	// erin is a member of a group but has no passwd line: no uid.
	if got, err := files.Lookup(context.Background(), "erin"); !errors.Is(err, ErrUnknownUser) {
		t.Errorf("erin = %+v, %v; want unknown", got, err)
	}
}

// TestPasswdFilesMalformed: a line no lookup can trust is reported with its
// file and line number, when the server starts and after an edit.
func TestPasswdFilesMalformed(t *testing.T) {
	tests := []struct {
		name, passwd, group string
		want                string
	}{
		{"too few passwd fields", "alice:x:1001:1001:/home/alice:/bin/sh\n", "", "passwd line 1: want 7 fields (name:password:uid:gid:gecos:home:shell), got 6"},
		{"uid not a number", "# ok\n\nalice:x:1001:1001::/h:/bin/sh\nbob:x:10o2:100::/h:/bin/sh\n", "", `passwd line 4: uid "10o2": want a number`},
		{"negative gid", "alice:x:1001:-1::/h:/bin/sh\n", "", `passwd line 1: gid "-1": want a number`},
		{"uid (uid_t)-1", "alice:x:4294967295:1::/h:/bin/sh\n", "", `passwd line 1: uid "4294967295"`},
		{"empty name", ":x:1001:1001::/h:/bin/sh\n", "", "passwd line 1: empty user name"},
		{"group line with too many fields", "alice:x:1001:1001::/h:/bin/sh\n", "nlp:x:2000:alice:extra\n", "group line 1: want 4 fields (name:password:gid:member1,member2), got 5"},
		{"group gid not a number", "alice:x:1001:1001::/h:/bin/sh\n", "users:x:100:\nnlp:x::alice\n", `group line 2: gid "": want a number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			passwd, group := filepath.Join(dir, "passwd"), ""
			writeFile(t, passwd, tc.passwd)
			if tc.group != "" {
				group = filepath.Join(dir, "group")
				writeFile(t, group, tc.group)
			}
			_, err := NewPasswdFiles(passwd, group)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, tc.want)) {
				t.Errorf("got %v, want an error saying %q", err, filepath.Join(dir, tc.want))
			}
		})
	}
	if _, err := NewPasswdFiles("", "/etc/group"); err == nil {
		t.Error("a group file alone accepted")
	}
	if _, err := NewPasswdFiles(filepath.Join(t.TempDir(), "missing"), ""); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing passwd file: %v", err)
	}
}

// TestPasswdFilesReload: an edit of either file (a ConfigMap update) is seen
// at the next lookup, without a restart; an edit that breaks a file fails
// lookups, saying where, until it is fixed.
func TestPasswdFilesReload(t *testing.T) {
	dir := t.TempDir()
	passwd, group := filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
	writeFile(t, passwd, "alice:x:1001:1001::/home/alice:/bin/sh\n")
	writeFile(t, group, "")
	files, err := NewPasswdFiles(passwd, group)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := files.Lookup(ctx, "bob"); !errors.Is(err, ErrUnknownUser) {
		t.Fatalf("bob before the edit: %v, want unknown", err)
	}
	later := time.Now().Add(time.Minute) // a new modification time, whatever the filesystem's resolution
	edit := func(path, text string) {
		t.Helper()
		writeFile(t, path, text)
		later = later.Add(time.Minute)
		if err := os.Chtimes(path, later, later); err != nil {
			t.Fatal(err)
		}
	}
	edit(passwd, "alice:x:1001:1001::/home/alice:/bin/sh\nbob:x:1002:100::/home/bob:/bin/sh\n")
	if got, err := files.Lookup(ctx, "bob"); err != nil || got.UID != 1002 {
		t.Errorf("bob after adding him: %+v, %v", got, err)
	}
	edit(group, "nlp:x:2000:bob\n")
	if got, err := files.Lookup(ctx, "bob"); err != nil || !reflect.DeepEqual(got.Groups, []int64{100, 2000}) {
		t.Errorf("bob after adding him to nlp: %+v, %v", got, err)
	}
	edit(passwd, "alice:x:1001\n")
	if _, err := files.Lookup(ctx, "alice"); err == nil || !strings.Contains(err.Error(), passwd+" line 1") {
		t.Errorf("alice after breaking the file: %v, want an error naming %s line 1", err, passwd)
	}
	edit(passwd, "alice:x:1001:1001::/home/alice:/bin/sh\n")
	if got, err := files.Lookup(ctx, "alice"); err != nil || got.UID != 1001 {
		t.Errorf("alice after the fix: %+v, %v", got, err)
	}
	if _, err := files.Lookup(ctx, "bob"); !errors.Is(err, ErrUnknownUser) {
		t.Errorf("bob after removing him: %v, want unknown", err)
	}
}
