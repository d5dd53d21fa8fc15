package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/remediation/agent"
	"github.com/sluicehq/sluice/slurmapi/cli"
)

func init() {
	register(command{name: "agent", summary: "run the per-node GPU and InfiniBand health agent (a DaemonSet on GPU nodes)", run: runAgent})
}

func runAgent(args []string) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	node := fs.String("node-name", os.Getenv("NODE_NAME"), "the node this agent reports on (default $NODE_NAME, from the downward API)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster, then $KUBECONFIG)")
	sysfs := fs.String("sysfs-root", "/sys/class/infiniband", "InfiniBand sysfs class directory")
	ibPorts := fs.Int("ib-ports", 0, "InfiniBand ports the node must have at least (0: every port seen since the agent started)")
	ibRates := fs.String("ib-rate", "", "optional floor on port rates per GPU model in Gb/s, e.g. H100=400,A100=200 (ports are judged against their peers and their best rate without it)")
	ibSymbols := fs.Uint64("ib-symbol-errors", 10, "symbol errors a port may gain between two polls before its link counts as degraded")
	gpus := fs.Int("expected-gpus", 0, "GPUs the node must enumerate (0: the nvidia.com/gpu.count label)")
	faultFile := fs.String("fault-file", "", "JSON fault-injection file laid over the readings (the rig's simulated faults)")
	poll := fs.Duration("poll", 10*time.Second, "how often NVML and sysfs are read (XID events are handled at once)")
	list := fs.Bool("list-gpus", false, "read the GPUs through NVML once, print them as JSON lines (index, uuid, model, memoryMiB, lost) and exit; needs no cluster")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice agent --node-name NODE [flags]\n\nWatches the node's GPUs (NVML: XID events, NVLink, PCIe, row remapping, ECC, lost GPUs)\nand InfiniBand ports, and publishes what it finds as NodeConditions and per-GPU health.\n\nFlags:")
		fs.PrintDefaults()
	}
	if help, err := cli.ParseFlags(fs, args); help || err != nil {
		return err
	}
	if *list {
		return listGPUs(os.Stdout)
	}
	if *node == "" {
		return cli.UsageError{Msg: "--node-name (or $NODE_NAME) is required"}
	}
	rates, err := parseRates(*ibRates)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	restConfig, err := loadRESTConfig(*kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return agent.Run(ctx, agent.Config{
		NodeName:        *node,
		RESTConfig:      restConfig,
		SysfsRoot:       *sysfs,
		ExpectedIBPorts: *ibPorts,
		IBRateGbps:      rates,
		IBSymbolErrors:  *ibSymbols,
		ExpectedGPUs:    *gpus,
		FaultFile:       *faultFile,
		PollInterval:    *poll,
	})
}

// parseRates reads "H100=400,A100=200".
func parseRates(s string) (map[string]float64, error) {
	rates := map[string]float64{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		model, v, ok := strings.Cut(kv, "=")
		rate, err := strconv.ParseFloat(v, 64)
		if !ok || model == "" || err != nil || rate <= 0 {
			return nil, fmt.Errorf("--ib-rate %q: want MODEL=GBPS pairs such as H100=400", kv)
		}
		rates[model] = rate
	}
	return rates, nil
}

// listGPUs prints what NVML reads of each GPU, one JSON object a line.
func listGPUs(w io.Writer) error {
	gpus, err := agent.Inventory()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	for _, g := range gpus {
		if err := enc.Encode(map[string]any{"index": g.Index, "uuid": g.UUID, "model": g.Model, "memoryMiB": g.MemoryMiB, "lost": g.Lost}); err != nil {
			return err
		}
	}
	return nil
}
