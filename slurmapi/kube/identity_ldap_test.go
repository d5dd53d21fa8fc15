package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/sluicehq/sluice/slurmapi/launch/launchtest"
)

const (
	testSuffix   = "dc=example,dc=org"
	testRootDN   = "cn=admin," + testSuffix
	testRootPW   = "secret"
	testPeople   = "ou=people," + testSuffix
	testGroups   = "ou=groups," + testSuffix
	requireSlapd = "SLUICE_REQUIRE_SLAPD" // hack/test-deps.sh sets it: CI fails rather than skips
)

// testDirectory is two posixAccount users and their posixGroups, as a site's
// directory holds them.
const testDirectory = `dn: dc=example,dc=org
objectClass: dcObject
objectClass: organization
o: Example
dc: example

dn: ou=people,dc=example,dc=org
objectClass: organizationalUnit
ou: people

dn: ou=groups,dc=example,dc=org
objectClass: organizationalUnit
ou: groups

dn: uid=alice,ou=people,dc=example,dc=org
objectClass: account
objectClass: posixAccount
uid: alice
cn: Alice
uidNumber: 10001
gidNumber: 10000
homeDirectory: /home/alice

dn: uid=bob,ou=people,dc=example,dc=org
objectClass: account
objectClass: posixAccount
uid: bob
cn: Bob
uidNumber: 10002
gidNumber: 10000
homeDirectory: /nfs/home/bob

dn: cn=users,ou=groups,dc=example,dc=org
objectClass: posixGroup
cn: users
gidNumber: 10000

dn: cn=nlp,ou=groups,dc=example,dc=org
objectClass: posixGroup
cn: nlp
gidNumber: 20001
memberUid: alice
memberUid: bob

dn: cn=vision,ou=groups,dc=example,dc=org
objectClass: posixGroup
cn: vision
gidNumber: 20002
memberUid: bob
`

// slapd is a real OpenLDAP server, Debian's, run by the test on a free
// loopback port with its own configuration and database in a temporary
// directory.
type slapd struct {
	url  string
	cmd  *exec.Cmd
	once sync.Once
}

// startSlapd loads testDirectory into a fresh database and serves it. The
// test is skipped where slapd is not installed (unless SLUICE_REQUIRE_SLAPD
// is set); the server's whole process group is killed when the test ends.
func startSlapd(t *testing.T) *slapd {
	t.Helper()
	bin, err := exec.LookPath("slapd")
	if err != nil {
		bin = "/usr/sbin/slapd"
	}
	if _, err := os.Stat(bin); err != nil {
		msg := "slapd is not installed (Debian: apt-get install slapd ldap-utils; hack/test-deps.sh installs it)"
		if os.Getenv(requireSlapd) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "db"), 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "slapd.conf")
	writeFile(t, conf, fmt.Sprintf(`include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/nis.schema
pidfile %[1]s/slapd.pid
modulepath /usr/lib/ldap
moduleload back_mdb
database mdb
maxsize 10485760
suffix %[2]q
rootdn %[3]q
rootpw %[4]s
directory %[1]s/db
`, dir, testSuffix, testRootDN, testRootPW))
	data := filepath.Join(dir, "data.ldif")
	writeFile(t, data, testDirectory)
	// slapadd is slapd under another name: it loads the database offline.
	if out, err := exec.Command(bin, "-T", "add", "-f", conf, "-l", data).CombinedOutput(); err != nil {
		t.Fatalf("slapadd: %v\n%s", err, out)
	}
	s := &slapd{url: "ldap://" + launchtest.FreeAddr(t)}
	var log strings.Builder
	// -d 0: in the foreground, so the test owns the process and its end.
	s.cmd = exec.Command(bin, "-f", conf, "-h", s.url+"/", "-d", "0")
	s.cmd.Stdout, s.cmd.Stderr = &log, &log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		conn, err := ldap.DialURL(s.url)
		if err == nil {
			conn.Close()
			return s
		}
		if time.Now().After(deadline) {
			s.stop()
			t.Fatalf("slapd not serving %s after 10s: %v\n%s", s.url, err, log.String())
		}
	}
}

// stop kills slapd's process group and reaps it; the directory is then
// unreachable.
func (s *slapd) stop() {
	s.once.Do(func() {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		_ = s.cmd.Wait()
	})
}

func testLDAPOptions(url string) LDAPOptions {
	return LDAPOptions{URL: url, UserBase: testPeople, GroupBase: testGroups, Timeout: 5 * time.Second}
}

// TestLDAPDirectory looks users up in a real slapd: uid, primary gid, the
// groups that list them and their home; anonymously and bound; a name that
// would widen the filter finds no one; a user not there is unknown, a wrong
// password is not.
func TestLDAPDirectory(t *testing.T) {
	srv := startSlapd(t)
	password := filepath.Join(t.TempDir(), "password")
	writeFile(t, password, testRootPW+"\n") // as a Secret often holds it
	wrong := filepath.Join(t.TempDir(), "wrong")
	writeFile(t, wrong, "not it")
	anonymous := testLDAPOptions(srv.url)
	bound := anonymous
	bound.BindDN, bound.BindPasswordFile = testRootDN, password
	badBind := bound
	badBind.BindPasswordFile = wrong
	noGroups := anonymous
	noGroups.GroupBase = ""
	badBase := anonymous
	badBase.GroupBase = "ou=nothing," + testSuffix
	alice := UserIDs{UID: 10001, GID: 10000, Groups: []int64{20001}, Home: "/home/alice"}
	tests := []struct {
		name    string
		opts    LDAPOptions
		user    string
		want    UserIDs
		unknown bool
		wantErr string
	}{
		{"anonymous", anonymous, "alice", alice, false, ""},
		{"bound", bound, "bob", UserIDs{UID: 10002, GID: 10000, Groups: []int64{20001, 20002}, Home: "/nfs/home/bob"}, false, ""},
		{"no group base: the primary group only", noGroups, "alice", UserIDs{UID: 10001, GID: 10000, Home: "/home/alice"}, false, ""},
		{"not in the directory", anonymous, "carol", UserIDs{}, true, ""},
		{"a wildcard is a name, not a pattern", anonymous, "*", UserIDs{}, true, ""},
		{"a name cannot close the filter", anonymous, "nobody)(uid=*", UserIDs{}, true, ""},
		{"wrong bind password", badBind, "alice", UserIDs{}, false, "bind as " + testRootDN},
		{"a base that does not exist", badBase, "alice", UserIDs{}, false, "ou=nothing," + testSuffix + " does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewLDAPDirectory(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.Lookup(context.Background(), tc.user)
			switch {
			case tc.unknown:
				if !errors.Is(err, ErrUnknownUser) {
					t.Errorf("%q = %+v, %v; want unknown", tc.user, got, err)
				}
			case tc.wantErr != "":
				if err == nil || errors.Is(err, ErrUnknownUser) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("%q = %+v, %v; want an error (not unknown) saying %q", tc.user, got, err, tc.wantErr)
				}
			case err != nil || !reflect.DeepEqual(got, tc.want):
				t.Errorf("%q = %+v, %v; want %+v", tc.user, got, err, tc.want)
			}
		})
	}
}

// TestLDAPDirectoryCache: answers are reused for the TTL (a user added is
// seen once an unknown answer expires); while the directory is down a user
// seen before keeps their identity and one never seen gets an error saying
// the directory is unreachable, which the UserMap reports as unavailable
// (a retry), never as an unknown user.
func TestLDAPDirectoryCache(t *testing.T) {
	srv := startSlapd(t)
	d, err := NewLDAPDirectory(testLDAPOptions(srv.url))
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	d.now = func() time.Time { return clock }
	ctx := context.Background()
	if _, err := d.Lookup(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lookup(ctx, "carol"); !errors.Is(err, ErrUnknownUser) {
		t.Fatalf("carol: %v, want unknown", err)
	}
	addCarol(t, srv.url)
	if _, err := d.Lookup(ctx, "carol"); !errors.Is(err, ErrUnknownUser) {
		t.Errorf("carol, just added, within the cache's time: %v, want the cached unknown", err)
	}
	clock = clock.Add(ldapUnknownTTL + time.Second)
	if got, err := d.Lookup(ctx, "carol"); err != nil || got.UID != 10003 {
		t.Errorf("carol once the unknown answer expired: %+v, %v", got, err)
	}

	srv.stop()
	clock = clock.Add(DefaultLDAPCacheTTL + time.Minute) // every answer expired
	if got, err := d.Lookup(ctx, "alice"); err != nil || got.UID != 10001 {
		t.Errorf("alice, seen before, while the directory is down: %+v, %v; want her last identity", got, err)
	}
	m := UserMap{Sources: []IdentitySource{d}, Unmapped: UnmappedRefuse}
	_, err = m.Lookup(ctx, "bob")
	if !errors.Is(err, ErrIdentityUnavailable) || errors.Is(err, ErrUnknownUser) || !strings.Contains(err.Error(), "is unreachable") {
		t.Errorf("bob, never seen, while the directory is down: %v; want unavailable, saying the directory is unreachable", err)
	}
}

// addCarol adds a third user as the directory's administrator.
func addCarol(t *testing.T, url string) {
	t.Helper()
	conn, err := ldap.DialURL(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Bind(testRootDN, testRootPW); err != nil {
		t.Fatal(err)
	}
	add := ldap.NewAddRequest("uid=carol,"+testPeople, nil)
	add.Attribute("objectClass", []string{"account", "posixAccount"})
	add.Attribute("uid", []string{"carol"})
	add.Attribute("cn", []string{"Carol"})
	add.Attribute("uidNumber", []string{"10003"})
	add.Attribute("gidNumber", []string{"10000"})
	add.Attribute("homeDirectory", []string{"/home/carol"})
	if err := conn.Add(add); err != nil {
		t.Fatal(err)
	}
}

// TestLDAPDirectoryTimeout: a directory that accepts connections and never
// answers costs a lookup its timeout, not a hung submission.
func TestLDAPDirectoryTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16) // held open, never answered
	t.Cleanup(func() {
		l.Close()
		for len(accepted) > 0 {
			(<-accepted).Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	opts := testLDAPOptions("ldap://" + l.Addr().String())
	opts.Timeout = 300 * time.Millisecond
	d, err := NewLDAPDirectory(opts)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = d.Lookup(context.Background(), "alice")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("lookup took %s with a %s timeout", took, opts.Timeout)
	}
	if err == nil || errors.Is(err, ErrUnknownUser) || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("got %v; want an error saying the directory is unreachable", err)
	}
}

// TestLDAPOptionsValidate: options no lookup could work with are refused at
// start, saying what to write.
func TestLDAPOptionsValidate(t *testing.T) {
	ok := LDAPOptions{URL: "ldaps://ldap.example.org", UserBase: testPeople}
	tests := []struct {
		change func(*LDAPOptions)
		want   string
	}{
		{func(o *LDAPOptions) { o.URL = "ldap.example.org" }, "want ldap://host[:port] or ldaps://host[:port]"},
		{func(o *LDAPOptions) { o.URL = "http://ldap.example.org" }, "want ldap://host[:port]"},
		{func(o *LDAPOptions) { o.UserBase = "" }, "userBase"},
		{func(o *LDAPOptions) { o.BindDN = testRootDN }, "bindDN needs bindPasswordFile"},
		{func(o *LDAPOptions) { o.UserFilter = "(uid=alice)" }, "want one %s"},
		{func(o *LDAPOptions) { o.GroupFilter = "(memberUid=%s" }, "groupFilter"},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
	for _, tc := range tests {
		o := ok
		tc.change(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", o, err, tc.want)
		}
	}
}
