package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/slurmapi"
	"github.com/sluicehq/sluice/slurmapi/launch"
	"github.com/sluicehq/sluice/test/e2e"
)

// TestSubmittedEnvironmentIsTheUsersAloneOnRig submits a job whose
// environment holds a secret and the user's own token, through a submit
// batch, lets it start, and then reads every object of the job's namespace
// that a Kubernetes `view` user may read (every namespaced resource but
// Secrets), the submit batches and the job's REST view: the secret is in
// none of them, the token is nowhere at all, and the job's environment
// Secret holds the secret and is what its pods mount.
func TestSubmittedEnvironmentIsTheUsersAloneOnRig(t *testing.T) {
	const secret = "s3cr3t-value"
	ts, b := batchServer(t, 20*time.Millisecond)
	ctx := context.Background()
	tok, err := slurmapi.MintToken(rigKey, "alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "SECRET_TOKEN=" + secret, "SLURM_JWT=" + tok, "COPIED_TOKEN=" + tok,
		"BASH_FUNC_module%%=() {  echo module\n}", SimDurationEnv + "=10m"}
	body, _ := json.Marshal(map[string]any{"script": "#!/bin/bash\n#SBATCH -J env -N 2 -p h100 --gres=gpu:1 -t 30\nsrun hostname\n",
		"job": map[string]any{"account": "nlp", "environment": env}})
	status, doc := call(t, ts, "alice", "POST", "/slurm/v0.0.45/job/submit", string(body))
	if status != http.StatusOK {
		t.Fatalf("submit: %d %v", status, doc)
	}
	id := uint32(doc["job_id"].(float64))

	leaks := func(what string, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{secret, tok} {
			if strings.Contains(string(b), s) {
				t.Errorf("%s shows %.12s...", what, s)
			}
		}
	}
	cms := batches(t, b)
	if len(cms) == 0 {
		t.Fatal("the job was not batched")
	}
	for _, cm := range cms {
		leaks("submit batch "+cm.Name, cm)
	}

	runQueue(t, b)
	waitMaterialized(t, b, []uint32{id})
	pg := storedGroup(t, b, id)
	if s := pg.Spec.Slurm; len(s.Environment) != 1 || s.Environment[SimDurationEnv] != "10m" || s.SealedEnvironment == "" {
		t.Errorf("spec.slurm: environment of %v, sealed %d bytes; want only the simulation knob in plain", keys(s.Environment), len(s.SealedEnvironment))
	}
	// A job sealed under another token key (the server's key was rotated since
	// it was submitted) cannot start: its PodCreateFailed Event names the
	// cause, and no value.
	rotated, err := New(e2e.Rig(t).RESTConfig(), Options{Namespace: "default", IDBlock: 10, TokenKey: []byte("a-rotated-token-key-0123456789ab")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := rotated.Submit(ctx, &slurmapi.JobDesc{User: "alice", Account: "nlp", Partition: "h100", Script: "#!/bin/bash\ntrue\n",
		Nodes: 1, Tasks: 1, CPUsPerTask: 1, Environment: []string{"SECRET_TOKEN=" + secret}})
	if err != nil {
		t.Fatal(err)
	}
	clearSlurmJobsBut(t, b, id, res.JobID)
	runSite(t, b)
	ns := pg.Namespace
	var pods corev1.PodList
	e2e.WaitFor(t, fmt.Sprintf("job %d's 2 pods", id), time.Minute, func(ctx context.Context) (bool, error) {
		err := b.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.JobIDLabel: fmt.Sprint(id)})
		return err == nil && len(pods.Items) == 2, fmt.Errorf("%d pods (%v)", len(pods.Items), err)
	})
	e2e.WaitFor(t, fmt.Sprintf("job %d's PodCreateFailed Event", res.JobID), time.Minute, func(ctx context.Context) (bool, error) {
		var events corev1.EventList
		if err := b.c.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == PodGroupName(res.JobID) && e.Reason == v1alpha1.ReasonPodCreateFailed {
				if !strings.Contains(e.Message, "does not open with the server's token key") {
					t.Errorf("the refusal %q does not name the cause", e.Message)
				}
				return true, nil
			}
		}
		return false, fmt.Errorf("%d Events, none PodCreateFailed of job %d", len(events.Items), res.JobID)
	})
	time.Sleep(time.Second) // the Service's endpoints

	// What a `view` user of the namespace may read: every namespaced resource but Secrets.
	cfg := e2e.Rig(t).RESTConfig()
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := disc.ServerPreferredNamespacedResources()
	if err != nil && lists == nil {
		t.Fatal(err)
	}
	read := map[string]int{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || (gv.Group == "" && r.Name == "secrets") || !hasVerb(r.Verbs, "list") {
				continue
			}
			objs, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Errorf("list %s: %v", r.Name, err)
				continue
			}
			read[r.Name] = len(objs.Items)
			for _, o := range objs.Items {
				leaks(r.Name+" "+o.GetName(), o.Object)
			}
		}
	}
	for _, r := range []string{"pods", "podgroups", "configmaps", "services", "events", "endpoints", "endpointslices"} {
		if read[r] == 0 {
			t.Errorf("read no %s in %s (read %v): the test proves nothing of them", r, ns, read)
		}
	}
	_, view := call(t, ts, "alice", "GET", fmt.Sprintf("/slurm/v0.0.45/job/%d", id), "")
	leaks("the job's REST view", view)

	// The job's environment Secret holds the user's variables, no token, and
	// every pod mounts it.
	var secrets corev1.SecretList
	if err := b.c.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{v1alpha1.JobIDLabel: fmt.Sprint(id)}); err != nil {
		t.Fatal(err)
	}
	var envSecret *corev1.Secret
	for i, s := range secrets.Items {
		if strings.HasPrefix(s.Name, pg.Name+"-env-") {
			envSecret = &secrets.Items[i]
		}
	}
	if envSecret == nil {
		t.Fatalf("no environment Secret among %d Secrets of job %d", len(secrets.Items), id)
	}
	var file launch.UserEnvironment
	if err := json.Unmarshal(envSecret.Data[EnvSecretField], &file); err != nil {
		t.Fatal(err)
	}
	if file.Variables["SECRET_TOKEN"] != secret || file.Variables["PATH"] != "/usr/bin:/bin" || file.Variables["BASH_FUNC_module%%"] == "" ||
		len(file.Variables) != 3 {
		t.Errorf("the environment Secret holds %v", keys(file.Variables))
	}
	if !ownedBy(envSecret, pg) || envSecret.Immutable == nil || !*envSecret.Immutable {
		t.Errorf("Secret %s: owners %v, immutable %v", envSecret.Name, envSecret.OwnerReferences, envSecret.Immutable)
	}
	for i := range pods.Items {
		checkEnvMount(t, &pods.Items[i], envSecret.Name)
	}
}

func hasVerb(verbs []string, v string) bool {
	for _, have := range verbs {
		if have == v {
			return true
		}
	}
	return false
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// clearSlurmJobsBut removes the Slurm jobs earlier tests left in slurm-nlp
// (they would hold its GPUs), all but the jobs keep.
func clearSlurmJobsBut(t *testing.T, b *Backend, keep ...uint32) {
	t.Helper()
	ctx := context.Background()
	var pgs v1alpha1.PodGroupList
	if err := b.c.List(ctx, &pgs, client.InNamespace(Namespace("nlp")), client.HasLabels{v1alpha1.JobIDLabel}); err != nil {
		t.Fatal(err)
	}
	for i := range pgs.Items {
		if !slices.Contains(keep, jobID(&pgs.Items[i])) {
			_ = b.c.Delete(ctx, &pgs.Items[i])
		}
	}
}

func jobID(pg *v1alpha1.PodGroup) uint32 {
	id, _ := strconv.ParseUint(pg.Labels[v1alpha1.JobIDLabel], 10, 32)
	return uint32(id)
}
