package agent

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/sluicehq/sluice/remediation/health"
)

// eventWriter reports XIDs as Events on the node, so application-level XIDs (which raise no
// condition) are still visible with `kubectl describe node`.
type eventWriter struct {
	broadcaster record.EventBroadcaster // nil when the recorder is not the API server's
	recorder    record.EventRecorder
	node        *corev1.ObjectReference
}

func newEventWriter(client kubernetes.Interface, nodeName string) *eventWriter {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return &eventWriter{
		broadcaster: b,
		recorder:    b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "sluice-agent", Host: nodeName}),
		// Node events refer to the node with its name as UID, as the kubelet's do, so
		// `kubectl describe node` finds them.
		node: &corev1.ObjectReference{Kind: "Node", Name: nodeName, UID: types.UID(nodeName)},
	}
}

func (w *eventWriter) xid(x health.XIDRecord, action health.Action, desc string) {
	reason := "GPUXid"
	if action == health.ActionNone {
		reason = "GPUXidApplication"
	}
	w.recorder.Event(w.node, corev1.EventTypeWarning, reason,
		fmt.Sprintf("%s (GPU %d): %s. Recommended action: %s.", x.UUID, x.GPU, desc, action.Advice()))
}

func (w *eventWriter) close() {
	if w.broadcaster != nil {
		w.broadcaster.Shutdown()
	}
}
