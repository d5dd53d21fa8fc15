package health

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Conditions turns a poll's findings into one NodeCondition per fault type: True with the
// most severe action as reason and a message naming each GPU, False when healthy, Unknown
// when the source (NVML or sysfs) could not be read at all.
func Conditions(r Readings, findings []Finding, now time.Time) []corev1.NodeCondition {
	byType := map[ConditionType][]Finding{}
	for _, f := range findings {
		byType[f.Condition] = append(byType[f.Condition], f)
	}
	ts := metav1.NewTime(now)
	out := make([]corev1.NodeCondition, 0, len(FaultConditions))
	for _, t := range FaultConditions {
		c := corev1.NodeCondition{Type: corev1.NodeConditionType(t), LastHeartbeatTime: ts, LastTransitionTime: ts}
		switch fs := byType[t]; {
		case t != InfiniBandDegraded && r.NVMLError != "":
			c.Status, c.Reason, c.Message = corev1.ConditionUnknown, ReasonNVMLUnavailable, "NVML unavailable: "+r.NVMLError
		case t == InfiniBandDegraded && r.IBError != "":
			c.Status, c.Reason, c.Message = corev1.ConditionUnknown, ReasonSysfsUnavailable, "InfiniBand unreadable: "+r.IBError
		case len(fs) == 0:
			c.Status, c.Reason, c.Message = corev1.ConditionFalse, ReasonHealthy, "no fault"
		default:
			a := mostSevere(fs)
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, a.Reason(), message(fs, a)
		}
		out = append(out, c)
	}
	return out
}

func mostSevere(fs []Finding) Action {
	a := ActionNone
	for _, f := range fs {
		a = max(a, f.Action)
	}
	return a
}

func message(fs []Finding, a Action) string {
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		if f.GPU < 0 {
			parts = append(parts, f.Detail)
		} else {
			parts = append(parts, f.UUID+" (GPU "+itoa(f.GPU)+"): "+f.Detail)
		}
	}
	return strings.Join(parts, "; ") + ". Recommended action: " + a.Advice() + "."
}

// MergeConditions returns existing with each desired condition put in place of the one of
// the same type. A condition whose status did not change keeps its transition time, so the
// time shows when the fault began, not when it was last seen.
func MergeConditions(existing, desired []corev1.NodeCondition) []corev1.NodeCondition {
	out := append([]corev1.NodeCondition(nil), existing...)
	for _, d := range desired {
		i := conditionIndex(out, d.Type)
		if i < 0 {
			out = append(out, d)
			continue
		}
		if out[i].Status == d.Status {
			d.LastTransitionTime = out[i].LastTransitionTime
		}
		out[i] = d
	}
	return out
}

// ConditionsChanged reports whether merging desired into existing changes anything other
// than heartbeat times, so the agent writes only on change.
func ConditionsChanged(existing, desired []corev1.NodeCondition) bool {
	for _, d := range desired {
		i := conditionIndex(existing, d.Type)
		if i < 0 {
			return true
		}
		e := existing[i]
		if e.Status != d.Status || e.Reason != d.Reason || e.Message != d.Message {
			return true
		}
	}
	return false
}

func conditionIndex(cs []corev1.NodeCondition, t corev1.NodeConditionType) int {
	for i := range cs {
		if cs[i].Type == t {
			return i
		}
	}
	return -1
}
