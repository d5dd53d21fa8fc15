package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// sampleEvery is the GPU sampler's period.
const sampleEvery = 250 * time.Millisecond

// gpuSampler reads every node's GPU capacity and every pod holding GPUs on
// it, again and again while a fault test runs, and keeps each moment a node
// had more GPUs handed out than it has: an over-commit is a double
// allocation even if it lasts one sample.
type gpuSampler struct {
	client kubernetes.Interface
	stop   context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	samples    int
	missed     int // reads that failed (the API server was away)
	violations []string
}

func startSampler(client kubernetes.Interface) *gpuSampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &gpuSampler{client: client, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			s.sample(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(sampleEvery):
			}
		}
	}()
	return s
}

// finish stops sampling and returns what was seen.
func (s *gpuSampler) finish() (samples, missed int, violations []string) {
	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.missed, s.violations
}

func (s *gpuSampler) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// Pods first: a node's capacity does not shrink during a test, so a pod
	// seen bound is always judged against a capacity read after it.
	pods, err := s.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err == nil {
		var nodes *corev1.NodeList
		if nodes, err = s.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
			s.judge(nodes.Items, pods.Items)
			return
		}
	}
	s.mu.Lock()
	s.missed++
	s.mu.Unlock()
}

// judge records every node whose bound, unfinished pods request more GPUs
// than the node has.
func (s *gpuSampler) judge(nodes []corev1.Node, pods []corev1.Pod) {
	capacity := map[string]int64{}
	for _, n := range nodes {
		if q, ok := n.Status.Allocatable["nvidia.com/gpu"]; ok {
			capacity[n.Name] = q.Value()
		}
	}
	used := map[string]int64{}
	holders := map[string][]string{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		var gpus int64
		for _, c := range p.Spec.Containers {
			if q, ok := c.Resources.Requests["nvidia.com/gpu"]; ok {
				gpus += q.Value()
			}
		}
		if gpus > 0 {
			used[p.Spec.NodeName] += gpus
			holders[p.Spec.NodeName] = append(holders[p.Spec.NodeName], p.Namespace+"/"+p.Name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	for node, n := range used {
		if c, ok := capacity[node]; ok && n > c {
			s.violations = append(s.violations, fmt.Sprintf("%s: %s has %d GPUs, pods hold %d: %v",
				time.Now().Format("15:04:05.000"), node, c, n, holders[node]))
		}
	}
}
