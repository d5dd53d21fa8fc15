package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"
)

// Values of the annotations written at bind time beside GPUAssignmentAnnotation, which the
// webhook points container environment variables at (VisibleDevicesEnv, GPUPortionEnv and
// the MPS variables): their format is what the NVIDIA container runtime and CUDA read.

// DeviceIDs names the assignment's GPUs as VisibleDevicesEnv takes them: each GPU's UUID,
// its index where the node publishes no UUID.
func (a GPUAssignment) DeviceIDs() []string {
	ids := make([]string, len(a.GPUs))
	for i, g := range a.GPUs {
		ids[i] = g.UUID
		if ids[i] == "" {
			ids[i] = strconv.Itoa(int(g.Index))
		}
	}
	return ids
}

// FormatVisibleDevices writes a VisibleDevicesAnnotation value: the device ids
// comma-separated.
func FormatVisibleDevices(ids []string) string { return strings.Join(ids, ",") }

// ParseVisibleDevices reads a VisibleDevicesAnnotation value; an empty value names none.
func ParseVisibleDevices(value string) []string {
	if value == "" {
		return nil
	}
	return strings.Split(value, ",")
}

// FormatGPUPortion writes a GPUPortionAnnotation value: the portion in decimal, as short
// as reads back exactly ("1", "0.25").
func FormatGPUPortion(portion float64) string { return strconv.FormatFloat(portion, 'f', -1, 64) }

// ParseGPUPortion reads a GPUPortionAnnotation value, refusing a portion outside [0,1]
// as ParseGPUAssignment does.
func ParseGPUPortion(value string) (float64, error) {
	return parseValue(GPUPortionAnnotation, value, func(s string) (float64, error) {
		p, err := strconv.ParseFloat(s, 64)
		if err == nil && (p < 0 || p > 1) {
			err = fmt.Errorf("%v is not in [0,1]", p)
		}
		return p, err
	})
}

// FormatMPSThreadPercentage writes an MPSThreadPercentageAnnotation value: a percentage
// of the GPU's streaming multiprocessors, in decimal.
func FormatMPSThreadPercentage(percent int) string { return strconv.Itoa(percent) }

// ParseMPSThreadPercentage reads an MPSThreadPercentageAnnotation value, refusing one
// outside 1..100.
func ParseMPSThreadPercentage(value string) (int, error) {
	return parseValue(MPSThreadPercentageAnnotation, value, func(s string) (int, error) {
		p, err := strconv.Atoi(s)
		if err == nil && (p < 1 || p > 100) {
			err = fmt.Errorf("%d is not in 1..100", p)
		}
		return p, err
	})
}

// FormatMPSMemoryLimit writes an MPSMemoryLimitAnnotation value from the limit of each
// device in MiB, the devices numbered as the container sees them (from 0, in the order
// of VisibleDevicesEnv): "0=4096M,1=4096M", as CUDA_MPS_PINNED_DEVICE_MEM_LIMIT takes it.
func FormatMPSMemoryLimit(perDeviceMiB []int64) string {
	parts := make([]string, len(perDeviceMiB))
	for i, mib := range perDeviceMiB {
		parts[i] = strconv.Itoa(i) + "=" + strconv.FormatInt(mib, 10) + "M"
	}
	return strings.Join(parts, ",")
}

// ParseMPSMemoryLimit reads an MPSMemoryLimitAnnotation value as FormatMPSMemoryLimit
// writes it (every device in order, in MiB); an empty value limits none.
func ParseMPSMemoryLimit(value string) ([]int64, error) {
	if value == "" {
		return nil, nil
	}
	parts := strings.Split(value, ",")
	out := make([]int64, len(parts))
	for i, part := range parts {
		dev, limit, ok := strings.Cut(part, "=")
		mib, found := strings.CutSuffix(limit, "M")
		n, err := strconv.ParseInt(mib, 10, 64)
		if !ok || !found || dev != strconv.Itoa(i) || err != nil || n < 0 {
			return nil, fmt.Errorf("%s: %q is not %d=<MiB>M", MPSMemoryLimitAnnotation, part, i)
		}
		out[i] = n
	}
	return out, nil
}
