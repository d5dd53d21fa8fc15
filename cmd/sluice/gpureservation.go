package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/kubernetes"

	"github.com/sluicehq/sluice/k8sscheduler/gpureservation"
	"github.com/sluicehq/sluice/slurmapi/cli"
)

func init() {
	register(command{name: "gpu-reservation", summary: "hold a shared GPU for Sluice's fraction pods (runs inside a reservation pod)", run: runGPUReservation})
}

func runGPUReservation(args []string) error {
	fs := flag.NewFlagSet("gpu-reservation", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster, then $KUBECONFIG)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice gpu-reservation\n\nRuns in the reservation pod the scheduler creates for each shared GPU: writes the device\nthe kubelet gave it ($NVIDIA_VISIBLE_DEVICES) on its own pod ($POD_NAMESPACE/$POD_NAME),\nthen holds it until the pod is deleted.\n\nFlags:")
		fs.PrintDefaults()
	}
	if help, err := cli.ParseFlags(fs, args); help || err != nil {
		return err
	}
	rc, err := loadRESTConfig(*kubeconfig)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return gpureservation.Run(ctx, kube, os.Getenv)
}
