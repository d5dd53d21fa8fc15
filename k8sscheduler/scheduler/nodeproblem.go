package scheduler

import (
	corev1 "k8s.io/api/core/v1"
)

// nodeProblem reports a malformed node annotation once per distinct error, as a Warning
// Event on the node: the node still schedules from its labels.
func (s *Scheduler) nodeProblem(n *corev1.Node, err error) {
	s.nodeMu.Lock()
	seen := s.nodeBad[n.Name] == err.Error()
	s.nodeBad[n.Name] = err.Error()
	s.nodeMu.Unlock()
	if !seen {
		ref := &corev1.Node{}
		ref.Name, ref.UID = n.Name, n.UID
		s.events.Event(ref, corev1.EventTypeWarning, "BadGPUAnnotation", err.Error())
	}
}
