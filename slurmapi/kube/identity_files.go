package kube

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PasswdFiles are a site's users in /etc/passwd and /etc/group form
// (slurm.identity.passwdFile, groupFile), typically a ConfigMap mounted
// into the server. A user's groups are the groups that list them as a
// member, and their primary group. The files are read again when either
// changes (its modification time or size), so a site edits the ConfigMap
// without restarting the server; a file that no longer parses fails every
// lookup, saying where, until it is fixed, rather than quietly serving the
// last copy.
type PasswdFiles struct {
	passwd, group string // group "" means no group file

	mu     sync.Mutex
	stamps [2]fileStamp
	users  map[string]UserIDs
	err    error // the last read's, for the files as stamped
}

// fileStamp tells one version of a file from the next.
type fileStamp struct {
	mod  time.Time
	size int64
}

// NewPasswdFiles reads passwd and group (group may be ""), reporting the
// first malformed line of either with its file and line number.
func NewPasswdFiles(passwd, group string) (*PasswdFiles, error) {
	if passwd == "" {
		return nil, fmt.Errorf("a group file (%s) needs a passwd file: the passwd file maps users to uids", group)
	}
	p := &PasswdFiles{passwd: passwd, group: group}
	if _, err := p.current(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *PasswdFiles) String() string {
	if p.group == "" {
		return "passwd file " + p.passwd
	}
	return fmt.Sprintf("passwd file %s and group file %s", p.passwd, p.group)
}

// Lookup is user's identity in the files.
func (p *PasswdFiles) Lookup(_ context.Context, user string) (UserIDs, error) {
	users, err := p.current()
	if err != nil {
		return UserIDs{}, err
	}
	ids, ok := users[user]
	if !ok {
		return UserIDs{}, fmt.Errorf("user %q %w (not in %s)", user, ErrUnknownUser, p)
	}
	return ids, nil
}

// current is the users of the files as they are now: read again when a
// file changed since the last read. A stat per lookup is far cheaper than
// a submission; a watch would miss the symlink swap of a ConfigMap update.
func (p *PasswdFiles) current() (map[string]UserIDs, error) {
	var stamps [2]fileStamp
	for i, path := range []string{p.passwd, p.group} {
		if path == "" {
			continue
		}
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		stamps[i] = fileStamp{mod: fi.ModTime(), size: fi.Size()}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.users != nil || p.err != nil {
		if stamps == p.stamps {
			return p.users, p.err
		}
	}
	p.users, p.err = readPasswdFiles(p.passwd, p.group)
	p.stamps = stamps
	return p.users, p.err
}

// readPasswdFiles parses passwd and group (group may be "") into users.
func readPasswdFiles(passwd, group string) (map[string]UserIDs, error) {
	data, err := os.ReadFile(passwd)
	if err != nil {
		return nil, err
	}
	users, err := parsePasswd(passwd, data)
	if err != nil {
		return nil, err
	}
	if group == "" {
		return users, nil
	}
	if data, err = os.ReadFile(group); err != nil {
		return nil, err
	}
	members, err := parseGroup(group, data)
	if err != nil {
		return nil, err
	}
	for name, ids := range users {
		ids.Groups = append(ids.Groups, members[name]...)
		users[name] = ids.withPrimary()
	}
	return users, nil
}

// parsePasswd reads passwd(5) lines, name:password:uid:gid:gecos:home:shell.
// Blank lines and # comments are skipped; of a name listed twice the first
// line counts, as getpwnam(3) finds it.
func parsePasswd(path string, data []byte) (map[string]UserIDs, error) {
	users := map[string]UserIDs{}
	err := eachLine(path, data, 7, "name:password:uid:gid:gecos:home:shell", func(f []string) error {
		uid, err := parseID("uid", f[2])
		if err != nil {
			return err
		}
		gid, err := parseID("gid", f[3])
		if err != nil {
			return err
		}
		if f[0] == "" {
			return fmt.Errorf("empty user name")
		}
		if _, dup := users[f[0]]; !dup {
			users[f[0]] = UserIDs{UID: uid, GID: gid, Home: f[5]}.withPrimary()
		}
		return nil
	})
	return users, err
}

// parseGroup reads group(5) lines, name:password:gid:member,member into
// each member's gids.
func parseGroup(path string, data []byte) (map[string][]int64, error) {
	members := map[string][]int64{}
	err := eachLine(path, data, 4, "name:password:gid:member1,member2", func(f []string) error {
		gid, err := parseID("gid", f[2])
		if err != nil {
			return err
		}
		for _, m := range strings.Split(f[3], ",") {
			if m = strings.TrimSpace(m); m != "" {
				members[m] = append(members[m], gid)
			}
		}
		return nil
	})
	return members, err
}

// eachLine calls fn with the fields of every line of data that is not
// blank or a comment; a line with another number of fields than want, or
// that fn refuses, is an error naming path and the line's number.
func eachLine(path string, data []byte, want int, form string, fn func([]string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) != want {
			return fmt.Errorf("%s line %d: want %d fields (%s), got %d", path, n, want, form, len(f))
		}
		if err := fn(f); err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// parseID reads a uid or gid: a number from 0 to 2^32-2 (2^32-1 is (uid_t)-1,
// "no id", to the kernel).
func parseID(what, s string) (int64, error) {
	id, err := strconv.ParseUint(s, 10, 32)
	if err != nil || id == 1<<32-1 {
		return 0, fmt.Errorf("%s %q: want a number from 0 to %d", what, s, uint32(1<<32-2))
	}
	return int64(id), nil
}
