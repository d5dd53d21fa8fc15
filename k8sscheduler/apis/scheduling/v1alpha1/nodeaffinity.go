package v1alpha1

import (
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// FormatNodeAffinity writes a NodeAffinityAnnotation value: the node selector as JSON.
func FormatNodeAffinity(ns corev1.NodeSelector) string {
	b, _ := json.Marshal(ns) // plain API struct: cannot fail
	return string(b)
}

// ParseNodeAffinity reads a NodeAffinityAnnotation value.
func ParseNodeAffinity(value string) (corev1.NodeSelector, error) {
	var ns corev1.NodeSelector
	if err := json.Unmarshal([]byte(value), &ns); err != nil {
		return ns, fmt.Errorf("annotation %s is not a JSON node selector: %w", NodeAffinityAnnotation, err)
	}
	return ns, nil
}

// FormatNodeAffinityChoices writes a NodeAffinityChoicesAnnotation value: the choices'
// node selectors as a JSON list, in the order they are tried.
func FormatNodeAffinityChoices(choices []corev1.NodeSelector) string {
	b, _ := json.Marshal(choices) // plain API structs: cannot fail
	return string(b)
}

// ParseNodeAffinityChoices reads a NodeAffinityChoicesAnnotation value, refusing an
// empty list (a matching or has choices).
func ParseNodeAffinityChoices(value string) ([]corev1.NodeSelector, error) {
	var choices []corev1.NodeSelector
	err := json.Unmarshal([]byte(value), &choices)
	if err == nil && len(choices) == 0 {
		err = errors.New("no choice")
	}
	if err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON list of node selectors: %w", NodeAffinityChoicesAnnotation, err)
	}
	return choices, nil
}
