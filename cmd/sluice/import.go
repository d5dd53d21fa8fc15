package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sluicehq/sluice/k8sscheduler/apis/scheduling/v1alpha1"
	"github.com/sluicehq/sluice/k8sscheduler/kai"
	"github.com/sluicehq/sluice/slurmapi/cli"
	"github.com/sluicehq/sluice/slurmapi/kube"
)

func init() {
	register(command{name: "import", summary: "write Sluice objects from another scheduler's (import kai: Queues from KAI's Queues)", run: runImport})
}

func runImport(args []string) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")
	dryRun := fs.Bool("dry-run", false, "print what would change and change nothing")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: sluice import kai [flags]\n\nWrites a Sluice Queue for each of the cluster's KAI Queues (scheduling.run.ai/v2): the\nsame name, parent, quota, limit, over-quota weight and priority, for every partition.\nQueues written before are updated; a Sluice Queue not written from KAI is left alone.\nRunning it again changes nothing. See docs/kai-compatibility.md.\n\nFlags:")
		fs.PrintDefaults()
	}
	if len(args) == 0 || args[0] != "kai" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fs.Usage()
			return nil
		}
		return cli.UsageError{Msg: "name what to import from: sluice import kai [--dry-run]"}
	}
	if help, err := cli.ParseFlags(fs, args[1:]); help || err != nil {
		return err
	}
	cfg, err := loadRESTConfig(*kubeconfig)
	if err != nil {
		return err
	}
	return importKAI(context.Background(), cfg, os.Stdout, *dryRun)
}

// importKAI plans the Sluice Queues of the cluster's KAI Queues, prints the plan and,
// unless dryRun, applies it. A KAI Queue that cannot become a Sluice Queue fails the
// import after the others are written.
func importKAI(ctx context.Context, cfg *rest.Config, out io.Writer, dryRun bool) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	list, err := dyn.Resource(kai.QueuesGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("reading KAI Queues (%s): %w", kai.QueuesGVR.GroupVersion(), err)
	}
	var queues []*kai.Queue
	for i := range list.Items {
		q, err := kai.DecodeQueue(&list.Items[i])
		if err != nil {
			return fmt.Errorf("KAI Queue %s: %w", list.Items[i].GetName(), err)
		}
		queues = append(queues, q)
	}
	scheme, err := kube.Scheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	var have v1alpha1.QueueList
	if err := c.List(ctx, &have); err != nil {
		return fmt.Errorf("reading Sluice Queues: %w", err)
	}
	plan := kai.PlanQueues(queues, have.Items, false)
	failed := printQueuePlan(out, plan, dryRun)
	if !dryRun {
		if err := kai.ApplyQueues(ctx, c, plan); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d KAI Queue(s) could not be imported (see above)", failed)
	}
	return nil
}

// printQueuePlan writes one line per queue (what is or would be done, and the queue as it
// will be), then the translation's warnings; it returns how many KAI Queues cannot be
// translated.
func printQueuePlan(w io.Writer, plan []kai.QueueChange, dryRun bool) (failed int) {
	counts := map[kai.Action]int{}
	for _, ch := range plan {
		counts[ch.Action]++
		verb := string(ch.Action)
		if dryRun && (ch.Action == kai.Create || ch.Action == kai.Update) {
			verb = "would " + verb
		}
		switch {
		case ch.Want == nil:
			failed++
			fmt.Fprintf(w, "%-16s %s: %s\n", "cannot import", ch.Name, ch.Reason)
		case ch.Action == kai.Skip:
			fmt.Fprintf(w, "%-16s %s: %s\n", verb, ch.Name, ch.Reason)
		default:
			fmt.Fprintf(w, "%-16s %s\n", verb, describeQueue(ch.Want))
			if ch.Reason != "" {
				fmt.Fprintf(w, "%-16s   note: %s\n", "", ch.Reason)
			}
		}
	}
	if len(plan) == 0 {
		fmt.Fprintln(w, "no KAI Queues")
		return 0
	}
	var sum []string
	for _, a := range []kai.Action{kai.Create, kai.Update, kai.Unchanged, kai.Skip} {
		if counts[a] > 0 {
			sum = append(sum, fmt.Sprintf("%d %s", counts[a], a))
		}
	}
	if dryRun {
		sum = append(sum, "dry run: nothing written")
	}
	fmt.Fprintln(w, strings.Join(sum, ", "))
	return failed
}

// describeQueue is a queue on one line: name, parent, priority and each resource's
// quota/limit/weight.
func describeQueue(q *v1alpha1.Queue) string {
	var b strings.Builder
	b.WriteString(q.Name)
	if q.Spec.ParentQueue != "" {
		fmt.Fprintf(&b, " parent=%s", q.Spec.ParentQueue)
	}
	fmt.Fprintf(&b, " priority=%d", q.Spec.Priority)
	for _, p := range q.Spec.Quotas {
		for _, r := range []struct {
			name string
			q    *v1alpha1.ResourceQuota
		}{{"gpu", p.GPU}, {"cpu", p.CPU}, {"memory", p.Memory}} {
			if r.q == nil {
				continue
			}
			fmt.Fprintf(&b, " %s=%s/%s/%s", r.name, qtyOr(r.q.Quota, "0"), qtyOr(r.q.Limit, "-"), weightOr(r.q.OverQuotaWeight))
		}
	}
	return b.String()
}

func qtyOr(q *resource.Quantity, none string) string {
	if q == nil {
		return none
	}
	return q.String()
}

func weightOr(w *int32) string {
	if w == nil {
		return "1"
	}
	return fmt.Sprint(*w)
}
