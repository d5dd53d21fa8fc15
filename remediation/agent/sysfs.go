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

// readIB reads every adapter under root/<device> and its ports under
// root/<device>/ports/<port>. A missing root is a node without InfiniBand (zero ports,
// judged against the expected count); an unreadable state or rate file is an error, since
// the port's health is then unknown. The adapter's model, its PCIe link, a port's link
// layer and its error counters are read where the driver provides them and left out
// where it does not.
func readIB(root string) ([]health.IBPort, []health.IBDevice, error) {
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	devDirs, err := filepath.Glob(filepath.Join(root, "*", "ports"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(devDirs)
	var ports []health.IBPort
	devices := make([]health.IBDevice, 0, len(devDirs))
	for _, portsDir := range devDirs {
		devDir := filepath.Dir(portsDir)
		devices = append(devices, readIBDevice(devDir))
		dirs, err := filepath.Glob(filepath.Join(portsDir, "*"))
		if err != nil {
			return nil, nil, err
		}
		sort.Strings(dirs)
		for _, dir := range dirs {
			p, err := readIBPort(filepath.Base(devDir), dir)
			if err != nil {
				return nil, nil, err
			}
			ports = append(ports, p)
		}
	}
	return ports, devices, nil
}

func readIBPort(device, dir string) (health.IBPort, error) {
	p := health.IBPort{Device: device, Port: filepath.Base(dir)}
	state, err := readSysfs(dir, "state")
	if err != nil {
		return p, err
	}
	phys, err := readSysfs(dir, "phys_state")
	if err != nil {
		return p, err
	}
	rate, err := readSysfs(dir, "rate")
	if err != nil {
		return p, err
	}
	p.State, p.PhysState = afterColon(state), afterColon(phys)
	if p.RateGbps, err = parseRate(rate); err != nil {
		return p, err
	}
	p.LinkLayer, _ = readSysfs(dir, "link_layer") // absent on old kernels: not judged
	downed, err1 := readCounter(dir, "counters/link_downed")
	symbols, err2 := readCounter(dir, "counters/symbol_error")
	if err1 == nil && err2 == nil {
		p.Counters = &health.IBCounters{LinkDowned: downed, SymbolErrors: symbols}
	}
	return p, nil
}

// readIBDevice reads an adapter's model and PCIe link; either may be absent (a
// virtual function, a software RDMA device) and is then not judged.
func readIBDevice(dir string) health.IBDevice {
	d := health.IBDevice{Name: filepath.Base(dir)}
	d.HCAType, _ = readSysfs(dir, "hca_type")
	pci := filepath.Join(dir, "device")
	d.PCIe.Width = readInt(pci, "current_link_width")
	d.PCIe.MaxWidth = readInt(pci, "max_link_width")
	d.PCIe.SpeedGTs = readGTs(pci, "current_link_speed")
	d.PCIe.MaxSpeedGTs = readGTs(pci, "max_link_speed")
	return d
}

func readSysfs(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	return strings.TrimSpace(string(b)), err
}

func readCounter(dir, name string) (uint64, error) {
	s, err := readSysfs(dir, name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(s, 10, 64)
}

// readInt reads a number, 0 when absent or not a number ("Unknown" on a virtual function).
func readInt(dir, name string) int {
	s, _ := readSysfs(dir, name)
	v, _ := strconv.Atoi(s)
	return v
}

// readGTs reads a PCIe speed, "16.0 GT/s PCIe" (or "8 GT/s" on older kernels).
func readGTs(dir, name string) float64 {
	s, _ := readSysfs(dir, name)
	num, _, _ := strings.Cut(s, " ")
	v, _ := strconv.ParseFloat(num, 64)
	return v
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
