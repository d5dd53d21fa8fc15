package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/sluicehq/sluice/k8sscheduler/scheduler"
	"github.com/sluicehq/sluice/slurmapi/kube"
)

// addInformers creates the server's one informer cache per kind, which the scheduler,
// the pod grouper (through the pod transform), the accounting recorder, the Slurm job
// lifecycle, the remediation controller and the webhook all read. Each kind is listed
// and watched once and each object held once, trimmed once to what any of them reads
// (scheduler.SharedTransform); the components keep pointers to its objects or smaller
// conversions of them, never copies. Before this, five caches (three of every pod)
// listed the cluster and held it side by side.
//
// The cache runs on every replica, but an informer starts only when a component first
// asks for its kind: a follower, which runs only the webhook, watches namespaces and
// Queues, not every pod.
func (s *Server) addInformers() error {
	scheme, err := kube.Scheme()
	if err != nil {
		return err
	}
	c, err := crcache.New(s.restConfig, crcache.Options{Scheme: scheme,
		DefaultTransform: scheduler.SharedTransform(s.schedulerNames(), s.observePod)})
	if err != nil {
		return fmt.Errorf("informer cache: %w", err)
	}
	s.informers = c
	s.addComponent(component{name: "informers", run: c.Start})
	return nil
}

// observePod shows each pod, whole, to the pod grouper before the shared cache trims
// it: the grouper creates a workload's PodGroup from all of its pod. addScheduler sets
// the grouper's observer before the cache starts.
func (s *Server) observePod(p *corev1.Pod) {
	if s.podObserver != nil {
		s.podObserver(p)
	}
}
