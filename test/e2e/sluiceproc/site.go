package sluiceproc

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/k8sscheduler/apis/crds"
	"github.com/sluicehq/sluice/slurmapi/kube"
)

// InstallSite installs Sluice's CRDs and the example site (partitions,
// queues, QOS of examples.Site) on the cluster at cfg, and returns a client
// for Sluice's kinds that can also watch them. Objects already there (an
// earlier test on the same rig) are kept as they are.
func InstallSite(t testing.TB, cfg *rest.Config) client.WithWatch {
	t.Helper()
	ctx := context.Background()
	if err := crds.Install(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	scheme, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := examples.Objects(examples.Site)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("apply %T %s: %v", o, o.GetName(), err)
		}
	}
	return c
}
