package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-ldap/ldap/v3"
)

// Defaults of LDAPOptions: RFC 2307 (posixAccount, posixGroup), as sssd and
// nslcd read a directory.
const (
	DefaultLDAPUserFilter  = "(&(objectClass=posixAccount)(uid=%s))"
	DefaultLDAPGroupFilter = "(&(objectClass=posixGroup)(memberUid=%s))"
	DefaultLDAPCacheTTL    = 5 * time.Minute
	DefaultLDAPTimeout     = 5 * time.Second
	// ldapUnknownTTL bounds how long a user the directory did not know
	// stays unknown, so a user just added is not refused for the whole TTL.
	ldapUnknownTTL = 30 * time.Second
)

// LDAPOptions are where and how a site's directory is searched
// (slurm.identity.ldap).
type LDAPOptions struct {
	// URL is ldap://host[:port] or ldaps://host[:port].
	URL string
	// BindDN and the password in BindPasswordFile (a mounted Secret, read
	// at each connection, so a rotated password needs no restart) bind
	// before searching; an empty BindDN searches anonymously.
	BindDN, BindPasswordFile string
	// CAFile is the PEM certificates an ldaps:// server's certificate must
	// chain to; empty: the system's.
	CAFile string
	// UserBase and UserFilter find a user's entry (uidNumber, gidNumber,
	// homeDirectory); %s in the filter is the user's name, escaped.
	UserBase, UserFilter string
	// GroupBase and GroupFilter find the groups a user is a member of
	// (their gidNumber); an empty GroupBase looks up no groups (the
	// primary group only).
	GroupBase, GroupFilter string
	// CacheTTL is how long an answer is used before the directory is asked
	// again, so a burst of submissions asks once.
	CacheTTL time.Duration
	// Timeout bounds one lookup: connect, bind and searches.
	Timeout time.Duration
}

// withDefaults fills what o leaves empty.
func (o LDAPOptions) withDefaults() LDAPOptions {
	if o.UserFilter == "" {
		o.UserFilter = DefaultLDAPUserFilter
	}
	if o.GroupFilter == "" {
		o.GroupFilter = DefaultLDAPGroupFilter
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultLDAPCacheTTL
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultLDAPTimeout
	}
	return o
}

// Validate reports options no lookup could work with.
func (o LDAPOptions) Validate() error {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "ldap" && u.Scheme != "ldaps") || u.Host == "" {
		return fmt.Errorf("url %q: want ldap://host[:port] or ldaps://host[:port]", o.URL)
	}
	if o.UserBase == "" {
		return errors.New("userBase: the DN under which users are searched is required")
	}
	if o.BindDN != "" && o.BindPasswordFile == "" {
		return errors.New("bindDN needs bindPasswordFile (a file holding the password, e.g. a mounted Secret)")
	}
	o = o.withDefaults()
	for name, f := range map[string]string{"userFilter": o.UserFilter, "groupFilter": o.GroupFilter} {
		if strings.Count(f, "%s") != 1 {
			return fmt.Errorf("%s %q: want one %%s, where the user name goes", name, f)
		}
		if _, err := ldap.CompileFilter(searchFilter(f, "user")); err != nil {
			return fmt.Errorf("%s %q: %v", name, f, err)
		}
	}
	return nil
}

// searchFilter is filter with user, escaped, in place of %s.
func searchFilter(filter, user string) string {
	return strings.Replace(filter, "%s", ldap.EscapeFilter(user), 1)
}

// LDAPDirectory looks users up in a site's LDAP directory (RFC 2307
// attributes). Answers are cached for CacheTTL (unknown users for at most
// 30 s); concurrent lookups of one user share one search. While the
// directory cannot be reached, a user looked up before keeps the identity it
// last had, as sssd's offline cache does, so running sites do not stop at a
// directory restart; a user never seen gets an error saying the directory
// is unreachable.
type LDAPDirectory struct {
	opts LDAPOptions
	tls  *tls.Config
	now  func() time.Time

	mu      sync.Mutex
	cache   map[string]ldapAnswer
	lookups map[string]*ldapLookup
}

// ldapAnswer is one cached answer: ids, or unknown.
type ldapAnswer struct {
	ids     UserIDs
	unknown bool
	expires time.Time
}

// ldapLookup is a search under way; done is closed once its fields are set.
type ldapLookup struct {
	done   chan struct{}
	answer ldapAnswer
	err    error
}

// NewLDAPDirectory checks opts; it does not connect (the directory may be
// down while the server starts: lookups say so).
func NewLDAPDirectory(opts LDAPOptions) (*LDAPDirectory, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	d := &LDAPDirectory{opts: opts.withDefaults(), now: time.Now, cache: map[string]ldapAnswer{}, lookups: map[string]*ldapLookup{}}
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("caFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("caFile %s: no PEM certificate in it", opts.CAFile)
		}
		d.tls = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return d, nil
}

func (d *LDAPDirectory) String() string { return "LDAP directory " + d.opts.URL }

// Lookup is user's identity in the directory.
func (d *LDAPDirectory) Lookup(ctx context.Context, user string) (UserIDs, error) {
	d.mu.Lock()
	cached, ok := d.cache[user]
	if ok && d.now().Before(cached.expires) {
		d.mu.Unlock()
		return d.result(user, cached)
	}
	l, running := d.lookups[user]
	if !running {
		l = &ldapLookup{done: make(chan struct{})}
		d.lookups[user] = l
	}
	d.mu.Unlock()
	if !running {
		d.run(user, l)
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return UserIDs{}, fmt.Errorf("%s: %w", d, ctx.Err())
	}
	if l.err != nil {
		if ok && !cached.unknown { // the last identity it had, while the directory is away
			return cached.ids, nil
		}
		return UserIDs{}, l.err
	}
	return d.result(user, l.answer)
}

// run searches for user, for everyone waiting on l, and caches the answer.
// It is bounded by the directory's own Timeout, not by the first caller's
// context: the answer serves every waiter and the cache.
func (d *LDAPDirectory) run(user string, l *ldapLookup) {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.Timeout)
	defer cancel()
	ids, err := d.search(ctx, user)
	now := d.now()
	switch {
	case errors.Is(err, ErrUnknownUser):
		l.answer = ldapAnswer{unknown: true, expires: now.Add(min(d.opts.CacheTTL, ldapUnknownTTL))}
	case err != nil:
		l.err = err
	default:
		l.answer = ldapAnswer{ids: ids, expires: now.Add(d.opts.CacheTTL)}
	}
	d.mu.Lock()
	if l.err == nil {
		d.cache[user] = l.answer
	}
	delete(d.lookups, user)
	d.mu.Unlock()
	close(l.done)
}

func (d *LDAPDirectory) result(user string, a ldapAnswer) (UserIDs, error) {
	if a.unknown {
		return UserIDs{}, fmt.Errorf("user %q %w (not in %s)", user, ErrUnknownUser, d)
	}
	return a.ids, nil
}

// search connects, binds and reads user's entry and groups.
func (d *LDAPDirectory) search(ctx context.Context, user string) (UserIDs, error) {
	deadline, _ := ctx.Deadline()
	opts := []ldap.DialOpt{ldap.DialWithDialer(&net.Dialer{Deadline: deadline})}
	if d.tls != nil {
		opts = append(opts, ldap.DialWithTLSConfig(d.tls))
	}
	conn, err := ldap.DialURL(d.opts.URL, opts...)
	if err != nil {
		return UserIDs{}, fmt.Errorf("%s is unreachable: %w", d, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() }) // a hung server ends with the lookup
	defer stop()
	conn.SetTimeout(time.Until(deadline))
	if d.opts.BindDN != "" {
		password, err := os.ReadFile(d.opts.BindPasswordFile)
		if err != nil {
			return UserIDs{}, fmt.Errorf("%s: bind password: %w", d, err)
		}
		if err := conn.Bind(d.opts.BindDN, strings.TrimRight(string(password), "\r\n")); err != nil {
			return UserIDs{}, d.failed(ctx, "bind as "+d.opts.BindDN, err)
		}
	}
	entries, err := d.find(ctx, conn, d.opts.UserBase, searchFilter(d.opts.UserFilter, user), 2,
		"uidNumber", "gidNumber", "homeDirectory")
	if err != nil {
		return UserIDs{}, err
	}
	switch len(entries) {
	case 0:
		return UserIDs{}, fmt.Errorf("user %q %w", user, ErrUnknownUser)
	case 1:
	default:
		return UserIDs{}, fmt.Errorf("%s: user %q matches %s and %s: make userFilter match one entry", d, user, entries[0].DN, entries[1].DN)
	}
	e := entries[0]
	ids := UserIDs{Home: e.GetAttributeValue("homeDirectory")}
	if ids.UID, err = ldapID(e, "uidNumber"); err != nil {
		return UserIDs{}, fmt.Errorf("%s: %w", d, err)
	}
	if ids.GID, err = ldapID(e, "gidNumber"); err != nil {
		return UserIDs{}, fmt.Errorf("%s: %w", d, err)
	}
	if d.opts.GroupBase == "" {
		return ids, nil
	}
	groups, err := d.find(ctx, conn, d.opts.GroupBase, searchFilter(d.opts.GroupFilter, user), 0, "gidNumber")
	if err != nil {
		return UserIDs{}, err
	}
	for _, g := range groups {
		gid, err := ldapID(g, "gidNumber")
		if err != nil {
			return UserIDs{}, fmt.Errorf("%s: %w", d, err)
		}
		ids.Groups = append(ids.Groups, gid)
	}
	return ids, nil
}

// find is the entries under base that match filter, at most limit (0: any).
func (d *LDAPDirectory) find(ctx context.Context, conn *ldap.Conn, base, filter string, limit int, attrs ...string) ([]*ldap.Entry, error) {
	req := ldap.NewSearchRequest(base, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, limit,
		int(d.opts.Timeout.Seconds()+1), false, filter, attrs, nil)
	res, err := conn.Search(req)
	if ldap.IsErrorWithCode(err, ldap.LDAPResultSizeLimitExceeded) && res != nil && len(res.Entries) > 0 {
		return res.Entries, nil // more than limit: the caller says what that means
	}
	if ldap.IsErrorWithCode(err, ldap.LDAPResultNoSuchObject) {
		return nil, fmt.Errorf("%s: %s does not exist in the directory: check userBase and groupBase", d, base)
	}
	if err != nil {
		return nil, d.failed(ctx, "search "+base+" for "+filter, err)
	}
	return res.Entries, nil
}

// failed words a failed bind or search: a lookup cut off (timeout, closed
// connection) is the directory being unreachable.
func (d *LDAPDirectory) failed(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil || ldap.IsErrorAnyOf(err, ldap.ErrorNetwork) {
		return fmt.Errorf("%s is unreachable (%s: %v)", d, what, err)
	}
	return fmt.Errorf("%s: %s: %w", d, what, err)
}

// ldapID is the number in e's attribute attr (uidNumber, gidNumber).
func ldapID(e *ldap.Entry, attr string) (int64, error) {
	v := e.GetAttributeValue(attr)
	if v == "" {
		return 0, fmt.Errorf("%s has no %s", e.DN, attr)
	}
	id, err := parseID(attr, v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", e.DN, err)
	}
	return id, nil
}
