package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/remediation/health"
)

// readIB reads every port under root/<device>/ports/<port>. A missing root is a node
// without InfiniBand (zero ports, judged against the expected count); an unreadable port
// file is an error, since the port's health is then unknown.
func readIB(root string) ([]health.IBPort, error) {
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	dirs, err := filepath.Glob(filepath.Join(root, "*", "ports", "*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(dirs)
	out := make([]health.IBPort, 0, len(dirs))
	for _, dir := range dirs {
		p := health.IBPort{Device: filepath.Base(filepath.Dir(filepath.Dir(dir))), Port: filepath.Base(dir)}
		state, err := readSysfs(dir, "state")
		if err != nil {
			return nil, err
		}
		phys, err := readSysfs(dir, "phys_state")
		if err != nil {
			return nil, err
		}
		rate, err := readSysfs(dir, "rate")
		if err != nil {
			return nil, err
		}
		p.State, p.PhysState = afterColon(state), afterColon(phys)
		if p.RateGbps, err = parseRate(rate); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func readSysfs(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	return strings.TrimSpace(string(b)), err
}

// afterColon turns sysfs's "4: ACTIVE" into "ACTIVE".
func afterColon(s string) string {
	if _, v, ok := strings.Cut(s, ":"); ok {
		return strings.TrimSpace(v)
	}
	return s
}

// parseRate reads sysfs's "400 Gb/sec (4X NDR)".
func parseRate(s string) (float64, error) {
	num, _, _ := strings.Cut(s, " ")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, errors.New("infiniband rate " + strconv.Quote(s) + " unreadable")
	}
	return v, nil
}

func itoa(i int) string { return strconv.Itoa(i) }
