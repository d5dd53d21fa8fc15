package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/podgrouper"
	slurmkube "github.com/sluicehq/sluice/slurmapi/kube"
	"github.com/sluicehq/sluice/test/cluster"
)

const (
	poolName   = "h100"
	benchQueue = "bench"
	waitLimit  = 10 * time.Minute
)

// harness runs one contender's two modes on one rig.
type harness struct {
	rig   *cluster.Cluster
	opts  Options
	name  string
	rc    *rest.Config // the admin credentials, unthrottled: creates measure the cluster
	kube  kubernetes.Interface
	crs   client.Client
	sched contender
	// jobIDs numbers Sluice's pods as its webhook would, for the contenders without it.
	jobIDs *slurmkube.JobIDs
}

func newHarness(rig *cluster.Cluster, opts Options, name string) (*harness, error) {
	rc := rig.RESTConfig()
	rc.QPS, rc.Burst = 10000, 20000
	// Pod creates, the run's watch and the bare binder in protobuf, as kube-scheduler and
	// Sluice send built-in objects: JSON would charge the shared API server for the
	// harness's encoding. controller-runtime's client (crs) picks protobuf for built-in
	// kinds and JSON, the only encoding CRDs speak, for the others.
	kube, err := kubernetes.NewForConfig(protobuf(rc))
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	crs, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	h := &harness{rig: rig, opts: opts, name: name, rc: rc, kube: kube, crs: crs}
	switch name {
	case Sluice, SluiceNoWebhook:
		command := opts.ServerCommand
		if len(command) == 0 {
			command = []string{opts.SluiceBinary, "server"}
		}
		kubeconfig := rig.ServerKubeconfig
		if opts.ClusterIdentities {
			if kubeconfig, err = chartServerKubeconfig(context.Background(), rig, opts.Assets, filepath.Dir(rig.Kubeconfig)); err != nil {
				return nil, fmt.Errorf("the server's identity from the chart: %w", err)
			}
		}
		h.sched = &serverProcess{command: command, kubeconfig: kubeconfig, clientCA: rig.WebhookClientCA,
			dir: filepath.Dir(rig.Kubeconfig), kube: kube, noWebhook: name == SluiceNoWebhook}
	case SluiceScheduler:
		h.sched = &sluiceContender{rc: rc, kubeconfig: rig.Kubeconfig, command: opts.SluiceCommand, log: opts.Log}
	}
	if name == SluiceNoWebhook || name == SluiceScheduler {
		// The counter the server (or RunSluice) numbers its own groups from.
		counterNS := serverNamespace
		if name == SluiceScheduler {
			counterNS = metav1.NamespaceDefault
		}
		backend, err := slurmkube.New(rc, slurmkube.Options{Namespace: counterNS})
		if err != nil {
			return nil, err
		}
		h.jobIDs = backend.JobIDs()
	}
	if isSluice(name) {
		if err := h.sluiceSite(context.Background()); err != nil {
			return nil, err
		}
		if err := h.reclaimSite(context.Background()); err != nil {
			return nil, err
		}
	}
	switch name {
	case Bare:
		h.sched = &bareBinder{rc: rc}
	case KubeScheduler:
		ks := &kubeSchedulerProcess{kubeconfig: rig.Kubeconfig, dir: filepath.Dir(rig.Kubeconfig), assets: opts.Assets, log: opts.Log}
		if opts.ClusterIdentities {
			ks.kubeconfig = rig.ComponentKubeconfig("kube-scheduler")
			if err := checkKubeconfigNotExempt(context.Background(), ks.kubeconfig, "system:kube-scheduler"); err != nil {
				return nil, err
			}
		}
		h.sched = ks
	}
	return h, nil
}

// protobuf is rc sending and accepting protobuf: for clients of built-in kinds only.
func protobuf(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.ContentType = runtime.ContentTypeProtobuf
	return rc
}

// sluiceSite is the Queue and Partition every benchmark PodGroup names.
func (h *harness) sluiceSite(ctx context.Context) error {
	if err := h.crs.Create(ctx, &v1alpha1.Partition{ObjectMeta: metav1.ObjectMeta{Name: poolName},
		Spec: v1alpha1.PartitionSpec{NodeSelector: map[string]string{v1alpha1.PartitionLabel: poolName}}}); err != nil {
		return fmt.Errorf("create partition: %w", err)
	}
	// Open to every namespace: each mode runs in a namespace of its own.
	everyNamespace := &metav1.LabelSelector{}
	if err := h.crs.Create(ctx, &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: benchQueue}, Spec: v1alpha1.QueueSpec{NamespaceSelector: everyNamespace}}); err != nil {
		return fmt.Errorf("create queue: %w", err)
	}
	return nil
}

// measure runs one mode in a namespace of its own and removes its pods afterwards, so
// the next run finds the cluster empty.
func (h *harness) measure(ctx context.Context, mode string, rep int) (Result, error) {
	ns := fmt.Sprintf("bench-%s-%d", mode, rep)
	if err := h.namespace(ctx, ns); err != nil {
		return Result{}, err
	}
	w, err := watchPods(ctx, h.kube, ns, h.opts.Pods)
	if err != nil {
		return Result{}, err
	}
	defer w.stop()
	r := Result{Contender: h.name, Mode: mode, Repeat: rep, Pods: h.opts.Pods}
	server, _ := h.sched.(*serverProcess)
	var before apiServerReading
	var began time.Time
	var usage usageProbe
	var startCPU float64
	// created creates the run's pods and records how long the creates took.
	created := func() error {
		t0 := time.Now()
		err := h.createPods(ctx, ns, h.opts.Pods)
		r.Created = time.Since(t0)
		return err
	}
	switch {
	case mode == modeStream:
		// The stream measures a running scheduler, not its start (backlog mode does).
		if usage, before, startCPU, err = h.startReady(ctx, mode, rep, true); err != nil {
			return r, err
		}
		fmt.Fprintf(h.opts.Log, "bench: %s stream %d: start-up and ready pod used %.2f CPU-s (not counted)\n", h.name, rep, startCPU)
		began = time.Now()
		if err := created(); err != nil {
			h.sched.stop()
			return r, err
		}
	case server != nil:
		// Sluice as installed: its webhook admits the backlog while the harness holds the
		// Lease, and its scheduler starts when the harness lets go.
		server.holdLease = true
		defer func() { server.holdLease = false }()
		if usage, before, startCPU, err = h.startReady(ctx, mode, rep, false); err != nil {
			return r, err
		}
		if err := created(); err != nil {
			h.sched.stop()
			return r, err
		}
		if err := w.waitSeen(ctx); err != nil {
			h.sched.stop()
			return r, err
		}
		began = time.Now()
		if err := server.releaseLease(ctx); err != nil {
			h.sched.stop()
			return r, err
		}
	default:
		if before, err = scrapeAPIServer(ctx, h.kube); err != nil {
			return r, err
		}
		if err := created(); err != nil {
			return r, err
		}
		if err := w.waitSeen(ctx); err != nil {
			return r, err
		}
		began = time.Now()
		if usage, err = h.sched.start(ctx); err != nil {
			return r, err
		}
	}
	bound, running, werr := w.wait(ctx, waitLimit)
	r.CPUSeconds, r.PeakRSSMiB = usage()
	r.CPUSeconds -= startCPU
	after, serr := scrapeAPIServer(ctx, h.kube)
	h.sched.stop()
	if werr != nil {
		return r, fmt.Errorf("%s: %w", h.name, werr)
	}
	if serr != nil {
		return r, serr
	}
	r.ToBound, r.ToRunning = bound.Sub(began), running.Sub(began)
	r.BindP50, r.BindP99, r.BindMax = w.bindLatency(began)
	r.Writes = after.writes.minus(before.writes).schedulerWrites()
	r.APIServerCPU = after.cpu - before.cpu
	r.Load = loadAverage()
	fmt.Fprintf(h.opts.Log, "bench: %s %s %d: %.0f pods/s bound, created in %s, server %.2f CPU-s, apiserver %.2f CPU-s, load %s, writes %v\n",
		h.name, mode, rep, r.BoundPerSecond(), round(r.Created), r.CPUSeconds, r.APIServerCPU, r.Load, r.Writes)
	return r, h.clear(ctx, ns, h.opts.Pods)
}

// startReady starts the contender and waits until it is ready (awaitReady), then reads the
// API server's counters and the contender's CPU so far: a run charges neither the start
// (informer lists, discovery, the probe pod) nor the probe. It stops the contender on error.
func (h *harness) startReady(ctx context.Context, mode string, rep int, bound bool) (usageProbe, apiServerReading, float64, error) {
	usage, err := h.sched.start(ctx)
	if err != nil {
		return nil, apiServerReading{}, 0, err
	}
	if err := h.awaitReady(ctx, mode, rep, bound); err != nil {
		h.sched.stop()
		return nil, apiServerReading{}, 0, err
	}
	before, err := scrapeAPIServer(ctx, h.kube)
	if err != nil {
		h.sched.stop()
		return nil, apiServerReading{}, 0, err
	}
	startCPU, _ := usage()
	return usage, before, startCPU, nil
}

// namespace makes sure namespace ns exists and can take pods: they are refused until its
// default ServiceAccount exists. With Options.Claims it also holds the ResourceClaimTemplate
// the pods name, made before any of them, as a user's manifests would.
func (h *harness) namespace(ctx context.Context, ns string) error {
	_, err := h.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := poll(ctx, func() bool {
		_, err := h.kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	}); err != nil {
		return fmt.Errorf("namespace %s never got its ServiceAccount: %w", ns, err)
	}
	if !h.opts.Claims {
		return nil
	}
	_, err = h.kube.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, gpuClaimTemplate(ns), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ResourceClaimTemplate %s/%s: %w", ns, gpuClaimTemplateName, err)
	}
	return nil
}

// gpuClaimTemplateName is the ResourceClaimTemplate of one GPU every pod names with
// Options.Claims; gpuClaimName is the pod's claim, which its container uses.
const (
	gpuClaimTemplateName = "bench-gpu"
	gpuClaimName         = "gpu"
)

// gpuClaimTemplate asks for exactly one device of the rig driver's GPU class.
func gpuClaimTemplate(ns string) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: gpuClaimTemplateName, Namespace: ns},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: cluster.DeviceClassGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}}}}}}
}

// readyNamespace holds the pod that tells a started scheduler is ready.
const readyNamespace = "bench-ready"

// awaitReady waits until the scheduler binds one probe pod (in a namespace of its own, so
// the run's watch does not count it), then removes it and waits until it is gone, so the
// run finds every GPU free. For Sluice as installed the probe must also have passed its
// admission webhook (it carries a job id): a server just started registers the webhook
// after it starts, and until then the API server admits pods without it, or refuses them
// while an earlier run's registration names a port nobody listens on. With bound false
// (a backlog: the scheduler waits for the Lease) the probe need only be admitted.
func (h *harness) awaitReady(ctx context.Context, mode string, rep int, bound bool) error {
	if err := h.namespace(ctx, readyNamespace); err != nil {
		return err
	}
	pods := h.kube.CoreV1().Pods(readyNamespace)
	zero := int64(0)
	for try := 0; ; try++ {
		name := fmt.Sprintf("ready-%s-%d-%d", mode, rep, try)
		var created, ready, admitted bool
		err := poll(ctx, func() bool {
			if !created {
				// Tried until it is: the API server refuses pods while the registration
				// names a stopped server.
				err := h.createPod(ctx, readyNamespace, name, benchQueue)
				if created = err == nil || apierrors.IsAlreadyExists(err); !created {
					return false
				}
			}
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			admitted = h.name != Sluice || p.Labels[v1alpha1.JobIDLabel] != ""
			ready = admitted && (!bound || p.Spec.NodeName != "")
			// A probe admitted without the webhook is removed and another one tried.
			return ready || !admitted
		})
		if err != nil {
			return fmt.Errorf("the scheduler never bound pod %s/%s: %w", readyNamespace, name, err)
		}
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			return fmt.Errorf("delete pod %s/%s: %w", readyNamespace, name, err)
		}
		if err := poll(ctx, func() bool {
			_, err := pods.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}); err != nil {
			return err
		}
		if err := h.clearClaims(ctx, readyNamespace); err != nil {
			return err
		}
		if ready {
			return nil
		}
	}
}

// createPods creates n pods named p0..p(n-1) from Options.Creators goroutines.
func (h *harness) createPods(ctx context.Context, ns string, n int) error {
	return h.parallel(ctx, n, func(i int) error { return h.createPod(ctx, ns, "p"+strconv.Itoa(i), benchQueue) })
}

// parallel calls fn for 0..n-1 from Options.Creators goroutines and returns the first
// error; a goroutine stops at its first error.
func (h *harness) parallel(ctx context.Context, n int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, h.opts.Creators)
	for range h.opts.Creators {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs // nil when the channel is empty
}

// createPod creates one single-GPU pod as a user writes it: the scheduler's name and a
// queue label (which other schedulers ignore), nothing else. For Sluice's contenders
// without the webhook, the pod also carries what the webhook adds
// to a bare pod: the partition label, a job id from the Slurm API's counter (blocks of
// ids, as the webhook takes them) and the PodGroup named by it, which makes each a group
// of one: a PodGroup is written only for one that has to wait or is evicted.
func (h *harness) createPod(ctx context.Context, ns, name, queue string) error {
	pod := h.pod(ns, name, queue)
	if h.jobIDs != nil { // a contender without the webhook
		id, err := h.jobIDs.Next(ctx)
		if err != nil {
			return fmt.Errorf("a job id for pod %s: %w", name, err)
		}
		pod.Labels = map[string]string{v1alpha1.QueueLabel: queue, v1alpha1.PartitionLabel: poolName,
			v1alpha1.JobIDLabel: v1alpha1.FormatJobID(id)}
		pod.Annotations = map[string]string{v1alpha1.PodGroupAnnotation: podgrouper.GroupOfOneName(name, id), v1alpha1.PodGroupDerivedAnnotation: "true"}
	}
	if _, err := h.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod %s: %w", name, err)
	}
	return nil
}

// pod is a single-GPU pod as a user writes it (createPod). With Options.Claims its GPU
// comes from a claim made from the namespace's template, which its container uses, as
// NVIDIA's DRA driver documents, instead of an nvidia.com/gpu request and limit.
func (h *harness) pod(ns, name, queue string) *corev1.Pod {
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), v1alpha1.GPUResource: resource.MustParse("1")},
		Limits:   corev1.ResourceList{v1alpha1.GPUResource: resource.MustParse("1")}}
	var claims []corev1.PodResourceClaim
	if h.opts.Claims {
		res = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			Claims: []corev1.ResourceClaim{{Name: gpuClaimName}}}
		claims = []corev1.PodResourceClaim{{Name: gpuClaimName, ResourceClaimTemplateName: ptr.To(gpuClaimTemplateName)}}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{v1alpha1.QueueLabel: queue}},
		Spec: corev1.PodSpec{SchedulerName: h.sched.schedulerName(), ResourceClaims: claims,
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: res}}}}
	if h.opts.Constrained {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: v1alpha1.PartitionLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{poolName}}}}}}}}
		pod.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoSchedule}}
	}
	return pod
}

// clear force-deletes the mode's n pods, one request each from many goroutines (a
// DeleteCollection of thousands of pods outlives the API server's request timeout),
// and waits until they are gone.
func (h *harness) clear(ctx context.Context, ns string, n int) error {
	zero := int64(0)
	err := h.parallel(ctx, n, func(i int) error {
		err := h.kube.CoreV1().Pods(ns).Delete(ctx, "p"+strconv.Itoa(i), metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := poll(ctx, func() bool {
		l, err := h.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && len(l.Items) == 0
	}); err != nil {
		return err
	}
	if err := h.clearClaims(ctx, ns); err != nil {
		return err
	}
	if !isSluice(h.name) {
		return nil
	}
	// The groups go too (the grouper's with their pods, by garbage collection), so the
	// next mode's window counts none of their deletes.
	if err := h.crs.DeleteAllOf(ctx, &v1alpha1.PodGroup{}, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("delete PodGroups: %w", err)
	}
	return poll(ctx, func() bool {
		var l v1alpha1.PodGroupList
		err := h.crs.List(ctx, &l, client.InNamespace(ns), client.Limit(1))
		return err == nil && len(l.Items) == 0
	})
}

// clearClaims waits until the resource claim controller has freed the devices of the
// claims made for the namespace's pods, all gone (it takes each pod off its claim's
// consumers and lifts the allocation and its finalizer), then deletes the claims, which is
// the garbage collector's work and the rig runs none, and waits until they are gone: so the
// next run finds every device free and counts none of their writes.
func (h *harness) clearClaims(ctx context.Context, ns string) error {
	if !h.opts.Claims {
		return nil
	}
	api := h.kube.ResourceV1().ResourceClaims(ns)
	var claims []resourcev1.ResourceClaim
	freed := func() bool {
		l, err := api.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		claims = l.Items
		return !slices.ContainsFunc(claims, func(c resourcev1.ResourceClaim) bool {
			return c.Status.Allocation != nil || len(c.Status.ReservedFor) > 0
		})
	}
	if err := poll(ctx, freed); err != nil {
		return fmt.Errorf("the devices of %s's ResourceClaims never freed: %w (%s)", ns, err, describeClaims(claims))
	}
	err := h.parallel(ctx, len(claims), func(i int) error {
		if err := api.Delete(ctx, claims[i].Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete ResourceClaim: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	gone := func() bool {
		l, err := api.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		claims = l.Items
		return len(claims) == 0
	}
	if err := poll(ctx, gone); err != nil {
		return fmt.Errorf("the ResourceClaims of %s not gone: %w (%s)", ns, err, describeClaims(claims))
	}
	return nil
}

// describeClaims tells how many claims there are and what holds the first one.
func describeClaims(claims []resourcev1.ResourceClaim) string {
	if len(claims) == 0 {
		return "no claims"
	}
	c := claims[0]
	return fmt.Sprintf("%d claims; %s: finalizers %v, reserved for %v, allocated %v, deleted %v",
		len(claims), c.Name, c.Finalizers, c.Status.ReservedFor, c.Status.Allocation != nil, c.DeletionTimestamp != nil)
}

// poll checks done every 200ms for up to waitLimit.
func poll(ctx context.Context, done func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	for !done() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}
