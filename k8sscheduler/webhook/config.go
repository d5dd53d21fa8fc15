// Package webhook is the mutating admission webhook for pods Sluice
// schedules. On pod creation it defaults the queue label, validates the
// KAI-compatible GPU-sharing annotations and wires every container of a GPU
// pod to the GPU assignment the scheduler writes at bind time, so a real
// kubelet hands the container its GPUs without any per-pod ConfigMap.
//
// The server is controller-runtime's webhook server; its CA and serving
// certificate are made and rotated by cert-controller's rotator in a Secret
// (certs.go), which also keeps the CA bundle of the MutatingWebhookConfiguration
// the server installs at start: failurePolicy Fail, limited by a CEL
// match condition to pods naming a Sluice scheduler, so other pods never
// depend on the webhook. With GovernGPUs a second webhook of the same
// registration also takes the GPU pods of other schedulers, and pods that
// tolerate Sluice's GPU taint, outside the exempt namespaces (governgpus.go).
package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
)

// MutatePath is the URL path the webhook serves AdmissionReviews on.
const MutatePath = "/mutate-pods"

// Config configures New. CertDir, Client and RESTConfig are required.
type Config struct {
	// Addr is the host:port the webhook serves HTTPS on. Default
	// "127.0.0.1:9443"; a port of 0 picks a free one (see Server.Addr).
	Addr string
	// CertDir is where the webhook server reads its serving certificate and key
	// (tls.crt, tls.key), reloading them when they change. With CertSecret the
	// server writes them there itself from the Secret; without it they are
	// provided, with the CA that signed them (ca.crt), by whoever manages them
	// (a mounted Secret). Created with mode 0700 when missing.
	CertDir string
	// CertSecret is the Secret cert-controller's rotator keeps the webhook's CA and
	// serving certificate in (ca.crt, ca.key, tls.crt, tls.key), creating and
	// renewing them and putting the CA in the MutatingWebhookConfiguration; the server
	// creates it, empty, when missing. Every replica naming the same Secret serves
	// the same CA. Empty: the certificate in CertDir is served as it is and its
	// ca.crt registered at start.
	CertSecret types.NamespacedName
	// Hosts are the DNS names the serving certificate is valid for: the host
	// of the URL the API server calls (localhost under `sluice dev`; the
	// first host is the URL's) or the Service's DNS names
	// (NAME.NAMESPACE.svc first, as the API server calls it) in the chart.
	// IP addresses are ignored with a warning: cert-controller writes DNS
	// names only. Default: localhost.
	Hosts []string
	// Service is the in-cluster Service in front of the webhook, which Run registers
	// (the chart); nil registers URL() (outside the cluster). An empty Path means
	// MutatePath.
	Service *admissionregistrationv1.ServiceReference
	// SchedulerNames are the schedulerNames of the pods the webhook
	// handles; pods naming any other scheduler are admitted untouched.
	// Default ["sluice"]; add "kai-scheduler" to take KAI manifests as
	// they are.
	SchedulerNames []string
	// DefaultQueue is the queue of a pod that names none, in a namespace
	// that names none. Default "default".
	DefaultQueue string
	// Informers, when set, is the shared informer cache (run by the caller) the webhook
	// reads namespaces and Queues from; when nil it runs informers of its own through
	// Client and Queues. With Informers, Queues only turns the queue check on.
	Informers crcache.Informers
	// Client reads namespaces (through an informer) for their queue label.
	Client kubernetes.Interface
	// RESTConfig reaches the API server for the registration and the certificate
	// rotator.
	RESTConfig *rest.Config
	// Queues reads the Queues (through an informer) for their spec.namespaceSelector:
	// a pod naming a queue its namespace may not use is refused. nil checks no queue
	// access (the server always sets it).
	Queues dynamic.Interface
	// Owners reads a pod's owners (as unstructured objects) so the webhook can
	// name the pod's PodGroup at admission, as the pod grouper would, sparing
	// the pod a patch. nil names only bare pods' groups (they need no read).
	// The owners read for one pod are reused for the other pods of the same
	// workload (keyed by its controlling owner's UID) for 30 s, so a Job's
	// burst of pods costs one read of the Job, not one per pod.
	Owners client.Reader
	// JobIDs hands out Slurm-style job ids (slurmapi/kube.JobIDs.Next, shared with sbatch).
	// With it a bare pod is admitted as a group of one (jobstate.GroupOfOne): numbered
	// here, its PodGroup written only if it has to wait or is evicted. nil leaves bare
	// pods to the pod grouper, which writes a PodGroup for each.
	JobIDs func(context.Context) (uint32, error)
	// ClientCAFile is a PEM file of the CA (or CAs) whose client certificate the API
	// server presents to webhooks (configured through the API server's
	// --admission-control-config-file; see docs/install.md). When set, a caller without
	// such a certificate fails the TLS handshake: it learns nothing and takes no job id.
	// Empty accepts any caller that reaches the port (a warning at start).
	ClientCAFile string
	// ClientNames, when set, are the only CommonNames accepted from ClientCAFile's
	// certificates (for a CA that also signs other clients).
	ClientNames []string
	// GovernGPUs, when enabled, makes every GPU pod Sluice's: those of other schedulers
	// are adopted or refused, and the GPU taint is tolerated by Sluice's pods only
	// (governgpus.go); the registration follows it.
	GovernGPUs GovernGPUs
	// Log receives certificate rotations and request errors; the zero Logger discards.
	Log logr.Logger
}

// withDefaults fills the zero fields with their defaults and checks the rest.
func (c Config) withDefaults() (Config, error) {
	var err error
	if c.CertDir == "" {
		return c, errors.New("webhook: Config.CertDir is required (the serving certificate is read from it)")
	}
	if c.Client == nil {
		return c, errors.New("webhook: Config.Client is required (namespaces are read for their queue label)")
	}
	if c.RESTConfig == nil {
		return c, errors.New("webhook: Config.RESTConfig is required (the webhook registers itself)")
	}
	if (c.CertSecret.Name == "") != (c.CertSecret.Namespace == "") {
		return c, fmt.Errorf("webhook: Config.CertSecret %q needs both a namespace and a name", c.CertSecret)
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:9443"
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return c, fmt.Errorf("webhook: Config.Addr %q: %w", c.Addr, err)
	}
	var names, ips []string
	for _, h := range c.Hosts {
		if net.ParseIP(h) != nil {
			ips = append(ips, h)
		} else {
			names = append(names, h)
		}
	}
	if len(names) == 0 {
		names = []string{"localhost"}
	}
	c.Hosts = names
	if len(c.SchedulerNames) == 0 {
		c.SchedulerNames = []string{v1alpha1.DefaultSchedulerName}
	}
	if err := validSchedulerNames(c.SchedulerNames); err != nil {
		return c, err
	}
	if c.GovernGPUs, err = c.GovernGPUs.withDefaults(); err != nil {
		return c, err
	}
	if c.DefaultQueue == "" {
		c.DefaultQueue = v1alpha1.DefaultQueue
	}
	if len(ips) > 0 {
		c.Log.Info("webhook: hosts that are IP addresses are not in the serving certificate (cert-controller writes DNS names only); the API server calls https://"+c.Hosts[0],
			"ignored", ips)
	}
	return c, nil
}
