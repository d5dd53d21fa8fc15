package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium finds Debian's headless browser; the test skips without it unless
// SLUICE_REQUIRE_CHROMIUM=1 (CI installs it: apt-get install -y chromium).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SLUICE_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("chromium is required (SLUICE_REQUIRE_CHROMIUM=1) but not installed: apt-get install -y chromium")
	}
	t.Skip("chromium not installed (apt-get install -y chromium); set SLUICE_REQUIRE_CHROMIUM=1 to fail instead")
	return ""
}

// runChromium runs one headless Chromium with its own profile; the page's scripts get
// a virtual-time budget to fetch the API and draw before the DOM is dumped or the
// screenshot taken. Chromium in a container without a system bus sometimes dies of a
// signal (a segfault) before loading anything: that crash of the browser, not of the
// page, is retried twice.
func runChromium(t *testing.T, bin string, args ...string) []byte {
	for attempt := 1; ; attempt++ {
		out, stderr, err := chromiumOnce(t, bin, args...)
		var exit *exec.ExitError
		if err == nil {
			return out
		}
		if errors.As(err, &exit) && !exit.ProcessState.Exited() && attempt < 3 {
			t.Logf("chromium died (%v); retrying", err)
			continue
		}
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr)
	}
}

func chromiumOnce(t *testing.T, bin string, args ...string) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=20000", "--window-size=1400,1000"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return out, stderr.String(), fmt.Errorf("chromium did not finish in 2 minutes: %w", ctx.Err())
	}
	return out, stderr.String(), err
}

// screenshotPath is test/output/dashboard.png at the repository root (git-ignored), so
// a person can look at what the test saw.
func screenshotPath(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "test", "output")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "dashboard.png")
}

// testValue finds the element with data-testid id in the dumped DOM and returns its
// data-value and text.
func testValue(t *testing.T, dom, id string) (float64, string) {
	t.Helper()
	re := regexp.MustCompile(`data-testid="` + regexp.QuoteMeta(id) + `" data-value="([^"]*)"[^>]*>([^<]*)<`)
	m := re.FindStringSubmatch(dom)
	if m == nil {
		t.Errorf("the page shows no %s", id)
		return 0, ""
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil && m[1] != "inf" {
		t.Errorf("%s: data-value %q", id, m[1])
	}
	return v, m[2]
}

// comma formats like the page: one decimal, thousands separated.
func comma(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String() + "." + frac
}

// The page, loaded in a real browser against a server with recorded data, shows the
// ledger's numbers; the screenshot is kept for people.
func TestDashboardInChromium(t *testing.T) {
	bin := chromium(t)
	srv, _ := serve(t)
	var o Overview
	get(t, srv, "/ui/api/overview?"+novWindow, &o)
	var g GPUHours
	get(t, srv, "/ui/api/gpu-hours?"+novWindow, &g)
	var top TopUsers
	get(t, srv, "/ui/api/top-users?"+novWindow, &top)
	var fs FairShare
	get(t, srv, "/ui/api/fairshare", &fs)

	page := srv.URL + "/ui/?" + novWindow + "&token=" + tokenOf(t, "ops")
	dom := string(runChromium(t, bin, "--dump-dom", page))
	if !strings.Contains(dom, `data-ready="1"`) {
		t.Fatalf("the page did not finish drawing:\n%s", dom)
	}
	if strings.Contains(dom, `id="error" role="alert">`) && !strings.Contains(dom, `role="alert" hidden`) {
		t.Errorf("the page shows an error: %s", dom)
	}
	want := map[string]float64{
		"kpi-gpu-hours":  o.Utilization.Allocated / 3600,
		"kpi-gpus-held":  o.GPUsHeld,
		"util-allocated": o.Utilization.Allocated / 3600,
		"util-idle":      o.Utilization.Idle / 3600,
		"util-down":      o.Utilization.Down / 3600,
		"util-reported":  o.Utilization.Reported / 3600,
	}
	for _, s := range g.Series {
		want["hours-"+s.Account] = s.Total
	}
	for _, u := range top.Rows {
		want["top-"+u.User] = u.GPUHours
	}
	for id, v := range want {
		got, text := testValue(t, dom, id)
		if got != v || text != comma(v) {
			t.Errorf("%s shows %q (%v), the ledger says %v", id, text, got, v)
		}
	}
	// By hand (see november): 34 allocated, 5,630 idle, 96 down of 5,760 GPU-hours.
	if _, text := testValue(t, dom, "util-idle"); text != "5,630.0" {
		t.Errorf("idle shows %q, want 5,630.0", text)
	}
	for _, r := range fs.Rows {
		if r.Depth == 0 || !r.IsUser() {
			continue
		}
		got, _ := testValue(t, dom, fmt.Sprintf("fs-%s-%s", r.Account, r.User))
		if got != r.FairShare {
			t.Errorf("FairShare of %s/%s shows %v, the ledger says %v", r.Account, r.User, got, r.FairShare)
		}
	}
	if n, _ := regexp.MatchString(`<tr data-job="2">.*?FAILED.*?1:0</td></tr>`, dom); !n {
		t.Errorf("the job table lacks bob's FAILED job 2 with exit code 1:0")
	}
	if c := strings.Count(dom, "<tr data-job="); c != 4 {
		t.Errorf("the job table has %d rows, want 4", c)
	}
	// The node history: gpu-01's 12-hour XID 79 fault (see november).
	if n, _ := regexp.MatchString(`<tr data-node="gpu-01" data-kind="fault"><td>gpu-01</td><td>XID 79</td>.*?<td>12:00:00</td></tr>`, dom); !n {
		t.Errorf("the node history lacks gpu-01's 12-hour XID 79 fault")
	}

	shot := screenshotPath(t)
	_ = os.Remove(shot)
	runChromium(t, bin, "--screenshot="+shot, "--hide-scrollbars", page)
	st, err := os.Stat(shot)
	if err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v (%v)", shot, err, st)
	}
	t.Logf("screenshot: %s", shot)
}

// The page works when the server cannot answer: it shows the error instead of hanging.
func TestDashboardShowsAPIErrors(t *testing.T) {
	bin := chromium(t)
	srv, _ := serve(t)
	dom := string(runChromium(t, bin, "--dump-dom", srv.URL+"/ui/?start=not-a-time&token="+tokenOf(t, "ops")))
	if !strings.Contains(dom, `data-ready="1"`) || !strings.Contains(dom, "want UNIX seconds") {
		t.Errorf("a bad window should end in a visible error:\n%s", dom)
	}
}

// Without a token the page asks for one, saying why, and shows no numbers: its API
// answered 401.
func TestDashboardAsksForAToken(t *testing.T) {
	bin := chromium(t)
	srv, _ := serve(t)
	var body map[string]any
	if code := getWith(t, srv, "/ui/api/overview", nil, &body); code != http.StatusUnauthorized {
		t.Fatalf("the API without a token answered %d, want 401", code)
	}
	for _, tt := range []struct{ query, says string }{
		{"", "no token"},
		{"?token=forged", "token"},
	} {
		dom := string(runChromium(t, bin, "--dump-dom", srv.URL+"/ui/"+tt.query))
		login := regexp.MustCompile(`<form id="login"[^>]*>`).FindString(dom)
		reason := regexp.MustCompile(`<span id="login-reason" role="alert">([^<]*)<`).FindStringSubmatch(dom)
		if !strings.Contains(dom, `data-ready="1"`) || login == "" || strings.Contains(login, "hidden") || reason == nil || !strings.Contains(reason[1], tt.says) {
			t.Errorf("/ui/%s: want the token form saying %q; form %q, reason %q", tt.query, tt.says, login, reason)
		}
		if strings.Contains(dom, `data-testid="kpi-gpu-hours"`) {
			t.Errorf("/ui/%s: the page shows numbers without a token", tt.query)
		}
	}
}
