package dra

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/test/cluster"
	"github.com/sluicehq/sluice/test/e2e"
	"github.com/sluicehq/sluice/test/e2e/sluiceproc"
)

// waitLong bounds waiting for the rig, never what the test asserts.
const waitLong = 2 * time.Minute

// TestGPUsThroughDRA is issue 38's "done when" on a real `sluice server` with its
// webhook and ledger, on nodes whose GPUs come only through DRA:
//   - a Kubernetes Job whose pods each claim one GPU from a ResourceClaimTemplate is
//     admitted, placed by Sluice and its claims allocated on the pods' nodes;
//   - a Slurm job asking --gres=gpu:2 on the h100 partition, told its GPUs come through
//     DRA (spec.gpuDeviceClass), runs with a claim of 2 GPUs per pod instead of
//     nvidia.com/gpu, and sacct shows gres/gpu=2 allocated.
func TestGPUsThroughDRA(t *testing.T) {
	rig := e2e.Rig(t)
	crs := sluiceproc.InstallSite(t, rig.RESTConfig())
	part := &v1alpha1.Partition{}
	if err := crs.Get(context.Background(), client.ObjectKey{Name: "h100"}, part); err != nil {
		t.Fatal(err)
	}
	part.Spec.GPUDeviceClass = cluster.DeviceClassGPU
	if err := crs.Update(context.Background(), part); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile, tok := sluiceproc.KeyAndToken(t, dir, "alice")
	srv := sluiceproc.Start(t, "sluice server", map[string]any{
		"kubeconfig": rig.Kubeconfig, "stateDir": filepath.Join(dir, "state"), "listen": "127.0.0.1:0",
		"leaderElection": map[string]any{"enabled": false},
		"webhook":        map[string]any{"enabled": true, "addr": "127.0.0.1:0", "clientCAFile": rig.WebhookClientCA},
		"rest":           map[string]any{"jwtKeyFile": keyFile},
		"slurm":          map[string]any{"users": map[string]any{"alice": map[string]any{"uid": 1001, "gid": 1001}}},
	})
	k8s := rig.Client()
	vision := e2e.TeamNamespace(t, rig, "vision")
	waitForWebhook(t, k8s, vision)

	// The Kubernetes Job: 2 pods, a GPU each, claimed from a template.
	tmpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "one-gpu", Namespace: vision},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: cluster.DeviceClassGPU, Count: 1}}}}}}}
	if _, err := k8s.ResourceV1().ResourceClaimTemplates(vision).Create(context.Background(), tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "infer"}, Spec: batchv1.JobSpec{
		Parallelism: ptr.To(int32(2)), Completions: ptr.To(int32(2)), BackoffLimit: ptr.To(int32(0)),
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.QueueLabel: "vision"}, Annotations: cluster.SimulatedRun(time.Hour, 0)},
			Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName, RestartPolicy: corev1.RestartPolicyNever,
				ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl.Name}},
				Containers: []corev1.Container{{Name: "main", Image: "registry.example/infer:latest", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}}}},
	}}
	if _, err := k8s.BatchV1().Jobs(vision).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobPods := waitClaimsAllocated(t, k8s, vision, "job-name="+job.Name, 2, 1)
	for _, p := range jobPods {
		if p.Spec.SchedulerName != v1alpha1.DefaultSchedulerName {
			t.Errorf("pod %s scheduled by %q, want Sluice", p.Name, p.Spec.SchedulerName)
		}
	}

	// The Slurm job: --gres=gpu:2 on each of 2 nodes of the DRA partition.
	id := e2e.Submit(t, srv.Addr(), tok, `{"script":"#!/bin/bash\ntrue\n","job":{"partition":"h100","nodes":"2","tres_per_node":"gres/gpu:2",`+
		`"environment":["PATH=/bin:/usr/bin","`+kube.SimDurationEnv+`=3s"]}}`)
	nlp := kube.Namespace("nlp")
	pods := waitClaimsAllocated(t, k8s, nlp, fmt.Sprintf("%s=%d", v1alpha1.JobIDLabel, id), 2, 2)
	for _, p := range pods {
		c := p.Spec.Containers[0]
		if _, ok := c.Resources.Requests[v1alpha1.GPUResource]; ok {
			t.Errorf("Slurm pod %s asks nvidia.com/gpu of a device plugin the DRA nodes do not run", p.Name)
		}
		if len(p.Spec.ResourceClaims) != 1 || *p.Spec.ResourceClaims[0].ResourceClaimName != kube.GPUClaim(p.Name) {
			t.Errorf("Slurm pod %s claims %+v, want its claim %s", p.Name, p.Spec.ResourceClaims, kube.GPUClaim(p.Name))
		}
	}
	// sacct: the job ends (kwok runs its pods 3 s) with 2 GPUs per node allocated.
	e2e.WaitFor(t, fmt.Sprintf("sacct shows job %d completed with gres/gpu=4", id), waitLong, func(ctx context.Context) (bool, error) {
		j, err := sacctJob(ctx, srv.Addr(), tok, id)
		if err != nil {
			return false, err
		}
		if states := fmt.Sprint(j.State.Current); !strings.Contains(states, "COMPLETED") {
			return false, fmt.Errorf("job %d is %s", id, states)
		}
		if n := gres(j.TRES.Allocated, "gpu"); n != 4 {
			return false, fmt.Errorf("job %d allocated gres/gpu=%d (%+v), want 4: 2 per node", id, n, j.TRES.Allocated)
		}
		return true, nil
	})
}

// waitForWebhook waits until the server's webhook is in effect: a dry-run pod of the
// queue comes back with Sluice's queue label.
func waitForWebhook(t *testing.T, kube kubernetes.Interface, ns string) {
	t.Helper()
	e2e.WaitFor(t, "the webhook in effect", waitLong, func(ctx context.Context) (bool, error) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: map[string]string{v1alpha1.QueueLabel: "vision"}},
			Spec: corev1.PodSpec{SchedulerName: v1alpha1.DefaultSchedulerName, Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
		got, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return got.Annotations[v1alpha1.PodGroupAnnotation] != "" || got.Labels[v1alpha1.QueueLabel] != "", fmt.Errorf("no sign of the webhook yet")
	})
}

// waitClaimsAllocated waits for n pods of the selector to be bound, each with its
// claims allocated on its node, gpus devices in all, reserved for it, and returns them.
func waitClaimsAllocated(t *testing.T, kube kubernetes.Interface, ns, selector string, n, gpus int) []corev1.Pod {
	t.Helper()
	var out []corev1.Pod
	e2e.WaitFor(t, fmt.Sprintf("%d pods of %s bound with %d GPUs claimed each", n, selector, gpus), waitLong, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		if len(list.Items) != n {
			return false, fmt.Errorf("%d pods", len(list.Items))
		}
		seen := map[string]bool{}
		for _, p := range list.Items {
			if p.Spec.NodeName == "" {
				return false, fmt.Errorf("pod %s not bound", p.Name)
			}
			devs := 0
			for _, pc := range p.Spec.ResourceClaims {
				name := ptr.Deref(pc.ResourceClaimName, "")
				for _, st := range p.Status.ResourceClaimStatuses {
					if st.Name == pc.Name && st.ResourceClaimName != nil {
						name = *st.ResourceClaimName
					}
				}
				rc, err := kube.ResourceV1().ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				if rc.Status.Allocation == nil || !slices.ContainsFunc(rc.Status.ReservedFor, func(r resourcev1.ResourceClaimConsumerReference) bool { return r.UID == p.UID }) {
					return false, fmt.Errorf("claim %s of pod %s: allocated %v, reserved for %+v", rc.Name, p.Name, rc.Status.Allocation != nil, rc.Status.ReservedFor)
				}
				for _, r := range rc.Status.Allocation.Devices.Results {
					if r.Pool != p.Spec.NodeName {
						return false, fmt.Errorf("pod %s on %s got device %s of %s", p.Name, p.Spec.NodeName, r.Device, r.Pool)
					}
					if seen[r.Pool+"/"+r.Device] {
						return false, fmt.Errorf("device %s of %s given twice", r.Device, r.Pool)
					}
					seen[r.Pool+"/"+r.Device] = true
					devs++
				}
			}
			if devs != gpus {
				return false, fmt.Errorf("pod %s claims %d devices, want %d", p.Name, devs, gpus)
			}
			a, err := v1alpha1.ParseGPUAssignment(p.Annotations[v1alpha1.GPUAssignmentAnnotation])
			if err != nil || len(a.GPUs) != gpus {
				return false, fmt.Errorf("pod %s names GPUs %q: %v", p.Name, p.Annotations[v1alpha1.GPUAssignmentAnnotation], err)
			}
		}
		out = list.Items
		return true, nil
	})
	return out
}

type tres struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

type dbJob struct {
	State struct {
		Current []string `json:"current"`
	} `json:"state"`
	TRES struct {
		Allocated []tres `json:"allocated"`
	} `json:"tres"`
}

func gres(l []tres, name string) int64 {
	for _, x := range l {
		if x.Type == "gres" && x.Name == name {
			return x.Count
		}
	}
	return 0
}

// sacctJob reads one job from the ledger through slurmdb/job/{id}.
func sacctJob(ctx context.Context, addr, tok string, id int) (*dbJob, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/slurmdb/v0.0.44/job/%d", addr, id), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-SLURM-USER-TOKEN", tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var doc struct {
		Jobs []dbJob `json:"jobs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusOK || len(doc.Jobs) != 1 {
		return nil, fmt.Errorf("slurmdb/job/%d: %s %v (%d jobs)", id, resp.Status, err, len(doc.Jobs))
	}
	return &doc.Jobs[0], nil
}
