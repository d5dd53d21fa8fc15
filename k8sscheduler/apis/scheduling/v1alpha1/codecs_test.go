package v1alpha1

import (
	"errors"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// codecCase is one check of a label or annotation codec.
type codecCase struct {
	name  string
	check func(t *testing.T)
}

// roundTrip: v formatted then parsed is v again, and its text is want ("" to skip that
// check: JSON values, whose text is the encoder's).
func roundTrip[T any](name string, v T, want string, format func(T) string, parse func(string) (T, error)) codecCase {
	return codecCase{name, func(t *testing.T) {
		s := format(v)
		if want != "" && s != want {
			t.Errorf("format(%#v) = %q, want %q", v, s, want)
		}
		got, err := parse(s)
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Errorf("parse(%q) = %#v, %v; want %#v", s, got, err, v)
		}
	}}
}

// refused: parsing value is an error.
func refused[T any](name, value string, parse func(string) (T, error)) codecCase {
	return codecCase{name, func(t *testing.T) {
		if got, err := parse(value); err == nil {
			t.Errorf("parse(%q) = %#v, want an error", value, got)
		}
	}}
}

// fallback: parsing value gives want, the codec's documented reading of a value it does
// not take as written.
func fallback[T any](name, value string, parse func(string) T, want T) codecCase {
	return codecCase{name, func(t *testing.T) {
		if got := parse(value); !reflect.DeepEqual(got, want) {
			t.Errorf("parse(%q) = %#v, want %#v", value, got, want)
		}
	}}
}

// noErr makes a codec that cannot fail fit roundTrip.
func noErr[T any](parse func(string) T) func(string) (T, error) {
	return func(s string) (T, error) { return parse(s), nil }
}

// TestCodecs round-trips the codec of every structured sluice.dev/ label and annotation
// value, and checks what each makes of a value no writer writes.
func TestCodecs(t *testing.T) {
	begin := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	submit := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)
	selector := corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: FeatureLabel("ib"), Operator: corev1.NodeSelectorOpExists}},
		MatchFields:      []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"n3"}}},
	}}}
	other := corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "sluice.dev/rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"r1"}}},
	}}}
	assignment := GPUAssignment{GPUs: []AssignedGPU{{Index: 0, UUID: "GPU-a"}, {Index: 3}}, Portion: 0.25, GPUMemoryMiB: 4096, MPS: true}
	validation := NodeValidation{Kind: ValidationIdle, Pod: "validate-n1", StartedAt: begin, FinishedAt: begin.Add(12 * time.Second), Result: ValidationPassed}

	for _, c := range []codecCase{
		// Job labels.
		roundTrip(JobIDLabel, uint32(4294967295), "4294967295", FormatJobID, ParseJobID),
		refused(JobIDLabel+" above uint32", "4294967296", ParseJobID),
		refused(JobIDLabel+" negative", "-1", ParseJobID),
		fallback(JobIDLabel+" missing (JobIDOf)", "", func(string) uint32 { return JobIDOf(nil) }, 0),
		fallback(JobIDLabel+" not a number (JobIDOf)", "x", func(s string) uint32 { return JobIDOf(map[string]string{JobIDLabel: s}) }, 0),
		roundTrip(NodeIndexLabel, 7, "7", FormatNodeIndex, ParseNodeIndex),
		refused(NodeIndexLabel+" not a number", "one", ParseNodeIndex),

		// Job annotations.
		roundTrip(PriorityAnnotation, int64(1)<<40, "1099511627776", FormatPriority, ParsePriority),
		refused(PriorityAnnotation+" not a number", "high", ParsePriority),
		roundTrip(NiceAnnotation, int64(-100), "-100", FormatNice, ParseNice),
		refused(NiceAnnotation+" not a number", "1.5", ParseNice),
		roundTrip(BeginTimeAnnotation, begin, "2026-03-04T05:06:07Z", FormatBeginTime, ParseBeginTime),
		refused(BeginTimeAnnotation+" not RFC 3339", "tomorrow", ParseBeginTime),
		roundTrip(SubmitTimeAnnotation, submit, "2026-03-04T05:06:07.123456789Z", FormatSubmitTime, ParseSubmitTime),
		refused(SubmitTimeAnnotation+" empty", "", ParseSubmitTime),

		// Placement.
		roundTrip(PartitionsAnnotation, []string{"gpu", "cpu"}, "gpu,cpu", FormatPartitions, noErr(ParsePartitions)),
		fallback(PartitionsAnnotation+" empty", "", ParsePartitions, nil),
		roundTrip(ExclusiveAnnotation, true, "true", FormatExclusive, noErr(ParseExclusive)),
		fallback(ExclusiveAnnotation+" as ParseBool reads it", "1", ParseExclusive, true),
		fallback(ExclusiveAnnotation+" not a boolean", "yes", ParseExclusive, false),
		roundTrip(SwitchesAnnotation, 2, "2", FormatSwitches, ParseSwitches),
		refused(SwitchesAnnotation+" not a number", "two", ParseSwitches),
		roundTrip(SwitchesWaitAnnotation, 90*time.Second, "90", FormatSwitchesWait, ParseSwitchesWait),
		refused(SwitchesWaitAnnotation+" a Go duration", "90s", ParseSwitchesWait),
		roundTrip(NodeConstraintAnnotation, NodeConstraint{Constraint: "rack=r1&ib", NodeList: "n[1-3]", Exclude: "n3"},
			"--constraint=rack=r1&ib --nodelist=n[1-3] --exclude=n3", NodeConstraint.Format, noErr(ParseNodeConstraint)),
		roundTrip(NodeConstraintAnnotation+" exclude only", NodeConstraint{Exclude: "n3"}, "--exclude=n3", NodeConstraint.Format, noErr(ParseNodeConstraint)),
		fallback(NodeConstraintAnnotation+" unknown option", "--reservation=r --constraint=ib", ParseNodeConstraint, NodeConstraint{Constraint: "ib"}),
		roundTrip("feature label", "ib", "sluice.dev/feature.ib", FeatureLabel, func(k string) (string, error) {
			if f, ok := FeatureOfLabel(k); ok {
				return f, nil
			}
			return "", errNoFeature
		}),
		fallback("feature label without a name", FeatureLabelPrefix, func(k string) bool { _, ok := FeatureOfLabel(k); return ok }, false),
		fallback("another label", "sluice.dev/partition", func(k string) bool { _, ok := FeatureOfLabel(k); return ok }, false),
		roundTrip(NodeAffinityAnnotation, selector, "", FormatNodeAffinity, ParseNodeAffinity),
		refused(NodeAffinityAnnotation+" a list", "[]", ParseNodeAffinity),
		roundTrip(NodeAffinityChoicesAnnotation, []corev1.NodeSelector{selector, other}, "", FormatNodeAffinityChoices, ParseNodeAffinityChoices),
		refused(NodeAffinityChoicesAnnotation+" no choice", "[]", ParseNodeAffinityChoices),
		refused(NodeAffinityChoicesAnnotation+" one selector", FormatNodeAffinity(selector), ParseNodeAffinityChoices),

		// GPUs.
		roundTrip(GPUAssignmentAnnotation, assignment, "", GPUAssignment.Encode, ParseGPUAssignment),
		refused(GPUAssignmentAnnotation+" portion above 1", `{"gpus":[],"portion":2}`, ParseGPUAssignment),
		roundTrip(VisibleDevicesAnnotation, assignment.DeviceIDs(), "GPU-a,3", FormatVisibleDevices, noErr(ParseVisibleDevices)),
		fallback(VisibleDevicesAnnotation+" empty", "", ParseVisibleDevices, nil),
		roundTrip(GPUPortionAnnotation, 0.25, "0.25", FormatGPUPortion, ParseGPUPortion),
		roundTrip(GPUPortionAnnotation+" whole", 1.0, "1", FormatGPUPortion, ParseGPUPortion),
		refused(GPUPortionAnnotation+" above 1", "1.5", ParseGPUPortion),
		roundTrip(MPSThreadPercentageAnnotation, 25, "25", FormatMPSThreadPercentage, ParseMPSThreadPercentage),
		refused(MPSThreadPercentageAnnotation+" 0", "0", ParseMPSThreadPercentage),
		roundTrip(MPSMemoryLimitAnnotation, []int64{4096, 4096}, "0=4096M,1=4096M", FormatMPSMemoryLimit, ParseMPSMemoryLimit),
		refused(MPSMemoryLimitAnnotation+" devices out of order", "1=4096M,0=4096M", ParseMPSMemoryLimit),
		refused(MPSMemoryLimitAnnotation+" in GiB", "0=4G", ParseMPSMemoryLimit),
		roundTrip(NodeGPUsAnnotation, []NodeGPU{{Index: 1, UUID: "GPU-b", Model: "H100", MemoryMiB: 81559, Healthy: true}}, "", FormatNodeGPUs, ParseNodeGPUs),

		// Nodes.
		roundTrip(LastValidationAnnotation, validation, "", NodeValidation.Format, func(s string) (NodeValidation, error) {
			v, _, err := ParseLastValidation(map[string]string{LastValidationAnnotation: s})
			return v, err
		}),

		// Submit batches.
		roundTrip(PendingReasonsAnnotation, map[string]BatchedWait{"41": {Reason: "Resources", Message: "needs 1 GPU"}, "42": {Reason: "Priority"}},
			`[{"reason":"Priority","jobs":[42]},{"reason":"Resources","message":"needs 1 GPU","jobs":[41]}]`, FormatPendingReasons, ParsePendingReasons),

		// The rig's simulated runs.
		roundTrip(SimDurationAnnotation, 1500*time.Millisecond, "1.5s", FormatSimDuration, ParseSimDuration),
		refused(SimDurationAnnotation+" without a unit", "30", ParseSimDuration),
		roundTrip(SimExitCodeAnnotation, 3, "3", FormatSimExitCode, ParseSimExitCode),
		refused(SimExitCodeAnnotation+" not a number", "failed", ParseSimExitCode),
	} {
		t.Run(c.name, c.check)
	}
}

var errNoFeature = errors.New("no feature")
