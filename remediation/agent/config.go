// Package agent is the per-node GPU and InfiniBand health agent (`sluice agent`): it reads
// NVML (through go-nvml's nvml.Interface) and /sys/class/infiniband, listens for XID
// events, and publishes the findings as NodeConditions and the per-GPU health annotation.
package agent

import (
	"errors"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/client-go/rest"
)

// Config configures one agent, which watches the node it runs on.
type Config struct {
	// NodeName is the Kubernetes node this agent reports on (required; in a DaemonSet, from
	// the downward API's spec.nodeName).
	NodeName string
	// RESTConfig reaches the API server (required). The agent needs get/patch on nodes,
	// patch on nodes/status and create on events.
	RESTConfig *rest.Config
	// NVML is the NVML library; nil loads the real one (libnvidia-ml.so.1). When it cannot be
	// initialised the GPU conditions are Unknown, unless FaultFile is set: then the node is
	// simulated, its GPUs are read from the sluice.dev/gpus annotation and only injected
	// faults are reported.
	NVML nvml.Interface
	// SysfsRoot is the InfiniBand class directory; default /sys/class/infiniband.
	SysfsRoot string
	// ExpectedIBPorts is how many InfiniBand ports the node must have at least. Without it
	// (0) the node must keep every port the agent has seen since it started.
	ExpectedIBPorts int
	// IBRateGbps is an optional floor on every port's rate per GPU model, keyed by a
	// substring of the NVML model name (e.g. {"H100": 400}); the longest key the node's
	// first GPU model contains applies. Without it a port is still judged against the rate
	// of the node's other ports on the same adapter model and against the best rate it has
	// run at (see health.Expectations).
	IBRateGbps map[string]float64
	// IBSymbolErrors is how many symbol errors a port may gain between two polls before
	// its link counts as degraded; default 10.
	IBSymbolErrors uint64
	// ExpectedGPUs is the GPU count the node must enumerate; fewer means the rest are lost
	// from the bus. 0 uses the node's nvidia.com/gpu.count label.
	ExpectedGPUs int
	// FaultFile is a JSON Faults file laid over the readings (fault injection for the rig
	// and for tests). Empty disables injection.
	FaultFile string
	// PollInterval is how often NVML and sysfs are read; default 10s. XID events and fault
	// file changes are handled at once, between polls.
	PollInterval time.Duration
	// FaultFilePoll is how often the fault file is checked for a change; default 250ms.
	FaultFilePoll time.Duration
	// EventWait bounds one EventSet.Wait call, and so how long shutdown can take; default 1s.
	EventWait time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if c.NodeName == "" {
		return c, errors.New("agent: NodeName is required")
	}
	if c.RESTConfig == nil {
		return c, errors.New("agent: RESTConfig is required")
	}
	if c.SysfsRoot == "" {
		c.SysfsRoot = "/sys/class/infiniband"
	}
	if c.IBSymbolErrors == 0 {
		c.IBSymbolErrors = 10
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 10 * time.Second
	}
	if c.FaultFilePoll <= 0 {
		c.FaultFilePoll = 250 * time.Millisecond
	}
	if c.EventWait <= 0 {
		c.EventWait = time.Second
	}
	return c, nil
}

// ibRateFor returns the expected InfiniBand rate for a GPU model, 0 if none is configured.
func (c Config) ibRateFor(model string) float64 {
	best, rate := "", 0.0
	for key, r := range c.IBRateGbps {
		// The longest matching key wins, so "H100 NVL" can differ from "H100".
		if strings.Contains(model, key) && len(key) > len(best) {
			best, rate = key, r
		}
	}
	return rate
}
