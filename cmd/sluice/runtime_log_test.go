package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Lines that client-go (klog) and controller-runtime log reach the server's
// own logger, in its format, not stderr in klog's format or a stack trace.
func TestLibraryLogsGoThroughTheServersLogger(t *testing.T) {
	var buf bytes.Buffer
	routeLibraryLogs(slog.New(slog.NewTextHandler(&buf, nil)))
	klog.InfoS("from client-go", "lease", "sluice-server")
	klog.Flush()
	ctrllog.Log.WithName("cache").Info("from controller-runtime", "kind", "Pod")
	out := buf.String()
	for _, want := range []string{`msg="from client-go" lease=sluice-server`, `msg="from controller-runtime"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the server's log lacks %q; it holds:\n%s", want, out)
		}
	}
}
