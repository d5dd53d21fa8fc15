package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sluicehq/sluice/k8sscheduler/podgrouper"
	"github.com/sluicehq/sluice/k8sscheduler/scheduler"
	"github.com/sluicehq/sluice/slurmapi/kube"
)

// RunSluice runs what the benchmark measures of Sluice until ctx ends: its scheduler and
// pod grouper, wired as sluice server wires them (the grouper reads the scheduler's pod
// watch, groups get job ids from the Slurm API's counter). The admission webhook's part
// is played by the harness, which creates pods as the webhook would leave them.
func RunSluice(ctx context.Context, rc *rest.Config) error {
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 1000, 2000 // sluice server's client limits
	grouper, err := podgrouper.NewController(rc, []string{sluiceName})
	if err != nil {
		return err
	}
	sched, err := scheduler.New(scheduler.Config{PodObserver: grouper.Observer()}, rc, prometheus.NewRegistry(), nil)
	if err != nil {
		return err
	}
	// One counter write per block of ids, as in sluice server: the writes per pod count them.
	backend, err := kube.New(rc, kube.Options{Namespace: metav1.NamespaceDefault})
	if err != nil {
		return err
	}
	grouper.WithJobIDs(backend.JobIDs().Next)
	var done sync.WaitGroup
	errs := make(chan error, 2)
	done.Go(func() { errs <- sched.Run(ctx) })
	done.Go(func() { errs <- grouper.Run(ctx) })
	done.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// RunSluiceOn is RunSluice with the credentials of a kubeconfig file: what the process
// started for Options.SluiceCommand runs.
func RunSluiceOn(ctx context.Context, kubeconfig string) error {
	crlog.SetLogger(logr.Discard()) // as in Run: no stack trace for a client made before a logger
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return RunSluice(ctx, rc)
}

const sluiceName = "sluice"

// sluiceContender is Sluice, in this process (its figures then include the harness's)
// or, with a command, in a process of its own.
type sluiceContender struct {
	rc         *rest.Config
	kubeconfig string
	command    []string
	log        io.Writer

	cancel context.CancelFunc
	done   sync.WaitGroup
	proc   *childProcess // nil: Sluice runs in this process
}

func (s *sluiceContender) schedulerName() string { return sluiceName }

func (s *sluiceContender) start(ctx context.Context) (usageProbe, error) {
	if len(s.command) > 0 {
		return s.startProcess()
	}
	probe := selfUsage()
	ctx, s.cancel = context.WithCancel(ctx)
	s.done.Go(func() {
		if err := RunSluice(ctx, s.rc); err != nil {
			fmt.Fprintf(s.log, "bench: sluice: %v\n", err)
		}
	})
	return probe, nil
}

func (s *sluiceContender) startProcess() (usageProbe, error) {
	s.proc = &childProcess{}
	args := append(append([]string{}, s.command[1:]...), s.kubeconfig)
	return s.proc.start(filepath.Join(filepath.Dir(s.kubeconfig), "bench-sluice.log"), s.command[0], args...)
}

func (s *sluiceContender) stop() {
	if s.proc == nil {
		s.cancel()
		s.done.Wait()
		return
	}
	s.proc.stop()
	s.proc = nil
}
