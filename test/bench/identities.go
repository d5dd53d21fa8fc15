package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sluicehq/sluice/test/chart"
	"github.com/sluicehq/sluice/test/cluster"
)

// With Options.ClusterIdentities the contenders authenticate as in a cluster, not with the
// rig's credentials (system:masters, which API Priority and Fairness exempts from every
// queue): Sluice as the chart's ServiceAccount, under the chart's ClusterRole, Role and
// FlowSchema; kube-scheduler as system:kube-scheduler, which the API server's own
// FlowSchemas classify. Both then land at workload-high with the API server's default
// request limits (cluster.Options.DefaultRequestLimits), and a 429 either is answered is
// one a cluster would answer.

// chartServerObjects are the templates that give the server its identity.
var chartServerObjects = []string{"templates/serviceaccounts.yaml", "templates/rbac-server.yaml", "templates/flowschema.yaml"}

// serverTokenTTL outlives the longest benchmark (a scale run takes about half an hour).
const serverTokenTTL = 6 * time.Hour

// chartServerKubeconfig applies the chart's ServiceAccount, RBAC and FlowSchema for the
// server, rendered by helm from charts/sluice as release "sluice" in serverNamespace, and
// writes a kubeconfig holding a token of that ServiceAccount under dir.
func chartServerKubeconfig(ctx context.Context, rig *cluster.Cluster, assets, dir string) (string, error) {
	helm, err := chart.HelmBinary(assets)
	if err != nil {
		return "", err
	}
	var args []string
	for _, t := range chartServerObjects {
		args = append(args, "--show-only", t)
	}
	objs, err := chart.Render(helm, serverNamespace, args...)
	if err != nil {
		return "", err
	}
	if err := createNamespace(ctx, rig.Client(), serverNamespace); err != nil {
		return "", err
	}
	skipped, err := chart.Apply(ctx, rig.RESTConfig(), "sluice-bench", objs)
	if err != nil {
		return "", err
	}
	if len(skipped) > 0 {
		return "", fmt.Errorf("the rig does not serve the chart's %v", skipped)
	}
	sa := ""
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" && o.GetLabels()["app.kubernetes.io/component"] == "server" {
			sa = o.GetName()
		}
	}
	if sa == "" {
		return "", fmt.Errorf("the chart rendered no ServiceAccount for the server (of %s)", chartServerObjects)
	}
	cfg, err := chart.TokenConfig(ctx, rig.Client(), rig.RESTConfig(), serverNamespace, sa, serverTokenTTL, nil)
	if err != nil {
		return "", err
	}
	if err := checkNotExempt(ctx, cfg, "system:serviceaccount:"+serverNamespace+":"+sa); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "sluice-server-sa.kubeconfig")
	if err := chart.WriteKubeconfig(path, sa, cfg); err != nil {
		return "", err
	}
	return path, nil
}

// checkNotExempt asks the API server who cfg authenticates as (a SelfSubjectReview): it
// must be user, outside system:masters, or priority and fairness would exempt it and the
// run would show nothing about them.
func checkNotExempt(ctx context.Context, cfg *rest.Config, user string) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("who is %s (SelfSubjectReview): %w", user, err)
	}
	got := review.Status.UserInfo
	if got.Username != user || slices.Contains(got.Groups, "system:masters") {
		return fmt.Errorf("the credentials for %s authenticate as %s in %v: not as in a cluster", user, got.Username, got.Groups)
	}
	return nil
}

// checkKubeconfigNotExempt is checkNotExempt for a kubeconfig file.
func checkKubeconfigNotExempt(ctx context.Context, path, user string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return checkNotExempt(ctx, cfg, user)
}
