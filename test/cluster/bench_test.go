package cluster

import (
	"context"
	"errors"
	"testing"
)

// BenchmarkStart measures a rig's start with the default spec, from Start to
// every node Ready. Stop is outside the timing. Run it with a small count:
//
//	go test -run '^$' -bench Start -benchtime 3x ./test/cluster/
func BenchmarkStart(b *testing.B) {
	if _, err := resolveAssets(""); errors.Is(err, ErrAssetsMissing) {
		b.Skip(err)
	}
	for i := 0; i < b.N; i++ {
		c, err := Start(context.Background(), Options{Spec: DefaultSpec(), Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		c.Stop()
		if err := c.Leftovers(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
