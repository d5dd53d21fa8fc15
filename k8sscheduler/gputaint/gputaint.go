// Package gputaint keeps Sluice's GPU taint (v1alpha1.GPUTaint, NoSchedule) on every node
// that offers GPUs, when the webhook governs GPU pods (webhook.governGPUs): Sluice's pods
// tolerate it (the webhook gives them the toleration) and nobody else's may, so a pod
// that reaches kube-scheduler without passing the webhook still cannot take a GPU node.
//
// It only ever adds the taint. Turning the mode off leaves it where it is, for an admin to
// remove (`kubectl taint nodes --all sluice.dev/gpu:NoSchedule-`): a node whose taint
// vanished by itself would take other schedulers' pods the moment the server stopped.
package gputaint

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// Taint is what the server puts on GPU nodes.
func Taint() corev1.Taint {
	return corev1.Taint{Key: v1alpha1.GPUTaint, Effect: corev1.TaintEffectNoSchedule}
}

// NeedsTaint reports whether a node offers a GPU resource (v1alpha1.IsGPUResource, in its
// capacity or allocatable) and lacks the taint.
func NeedsTaint(n *corev1.Node) bool {
	want := Taint()
	for _, t := range n.Spec.Taints {
		if t.MatchTaint(&want) {
			return false
		}
	}
	for _, rl := range []corev1.ResourceList{n.Status.Allocatable, n.Status.Capacity} {
		for name, q := range rl {
			if v1alpha1.IsGPUResource(string(name)) && !q.IsZero() {
				return true
			}
		}
	}
	return false
}

// Run taints GPU nodes as the node informer of informers (the server's shared cache) shows
// them, until ctx ends. A failed write is retried with backoff.
func Run(ctx context.Context, informers crcache.Informers, client kubernetes.Interface) error {
	log := klog.FromContext(ctx)
	inf, err := informers.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return fmt.Errorf("gputaint: node informer: %w", err)
	}
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 5*time.Minute),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "gputaint"})
	defer queue.ShutDown()
	enqueue := func(obj any) {
		if n, ok := obj.(*corev1.Node); ok && NeedsTaint(n) {
			queue.Add(n.Name)
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return fmt.Errorf("gputaint: node events: %w", err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		name, quit := queue.Get()
		if quit {
			return nil
		}
		if err := taint(ctx, client, name); err != nil && ctx.Err() == nil {
			log.Error(err, "gputaint: tainting a GPU node", "node", name)
			queue.AddRateLimited(name)
		} else {
			queue.Forget(name)
		}
		queue.Done(name)
	}
}

// taint adds the taint to the node's latest version, if it still needs it.
func taint(ctx context.Context, client kubernetes.Interface, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil // gone: nothing to taint
		}
		if err != nil || !NeedsTaint(n) {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, Taint())
		_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}
