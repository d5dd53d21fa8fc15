package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/bridge"
)

// Fair share sees the latest usage the ledger gave; a failed read keeps the last figures.
func TestUsageFeedKeepsTheLastGoodRead(t *testing.T) {
	nlp := []bridge.QueueUsage{{Queue: "nlp", Partition: "h100", Usage: bridge.Resources{GPUMilli: 5000}}}
	vision := []bridge.QueueUsage{{Queue: "vision", Partition: "h100", Usage: bridge.Resources{GPUMilli: 2000}}}
	down := errors.New("ledger unreachable")
	tests := []struct {
		name  string
		reads []func(context.Context) ([]bridge.QueueUsage, error)
		want  []bridge.QueueUsage
	}{
		{name: "never read", want: nil},
		{name: "first read fails", reads: []func(context.Context) ([]bridge.QueueUsage, error){
			func(context.Context) ([]bridge.QueueUsage, error) { return nil, down }}, want: nil},
		{name: "read", reads: []func(context.Context) ([]bridge.QueueUsage, error){
			func(context.Context) ([]bridge.QueueUsage, error) { return nlp, nil }}, want: nlp},
		{name: "failure after a read keeps it", reads: []func(context.Context) ([]bridge.QueueUsage, error){
			func(context.Context) ([]bridge.QueueUsage, error) { return nlp, nil },
			func(context.Context) ([]bridge.QueueUsage, error) { return nil, down }}, want: nlp},
		{name: "a newer read replaces it", reads: []func(context.Context) ([]bridge.QueueUsage, error){
			func(context.Context) ([]bridge.QueueUsage, error) { return nlp, nil },
			func(context.Context) ([]bridge.QueueUsage, error) { return vision, nil }}, want: vision},
		{name: "an empty ledger means no usage", reads: []func(context.Context) ([]bridge.QueueUsage, error){
			func(context.Context) ([]bridge.QueueUsage, error) { return nlp, nil },
			func(context.Context) ([]bridge.QueueUsage, error) { return []bridge.QueueUsage{}, nil }}, want: []bridge.QueueUsage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f usageFeed
			for _, read := range tt.reads {
				f.refresh(context.Background(), read)
			}
			got := f.current()
			if len(got) != len(tt.want) || (got == nil) != (tt.want == nil) {
				t.Fatalf("usage = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i].Queue != tt.want[i].Queue || got[i].Partition != tt.want[i].Partition || got[i].Usage.GPUMilli != tt.want[i].Usage.GPUMilli {
					t.Errorf("usage[%d] = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// The feed reads once at start, then no more often than its period, and stops with ctx.
func TestUsageFeedRunReadsAtStartAndStops(t *testing.T) {
	var f usageFeed
	ctx, cancel := context.WithCancel(context.Background())
	reads := make(chan struct{}, 8)
	done := make(chan struct{})
	go func() {
		f.run(ctx, time.Hour, func(context.Context) ([]bridge.QueueUsage, error) {
			reads <- struct{}{}
			return []bridge.QueueUsage{{Queue: "nlp", Partition: "h100"}}, nil
		})
		close(done)
	}()
	<-reads
	cancel()
	<-done
	if len(reads) != 0 {
		t.Errorf("%d more reads within an hour's period", len(reads))
	}
	if u := f.current(); len(u) != 1 || u[0].Queue != "nlp" {
		t.Errorf("usage after the first read = %+v", u)
	}
}

func TestUsageRefreshDefault(t *testing.T) {
	tests := []struct {
		set, want time.Duration
	}{{0, 30 * time.Second}, {-time.Second, 30 * time.Second}, {time.Minute, time.Minute}}
	for _, tt := range tests {
		if got := (Config{UsageRefresh: tt.set}).withDefaults().UsageRefresh; got != tt.want {
			t.Errorf("UsageRefresh %v -> %v, want %v", tt.set, got, tt.want)
		}
	}
}

// Every cycle's snapshot carries the latest usage read, and none before the first read.
func TestSnapshotCarriesUsage(t *testing.T) {
	s := &Scheduler{cache: newCache()}
	if snap, _ := s.snapshot(time.Now()); snap.Usage != nil {
		t.Fatalf("usage before any read: %+v", snap.Usage)
	}
	want := []bridge.QueueUsage{{Queue: "nlp", Partition: "h100", Usage: bridge.Resources{GPUMilli: 3000}}}
	s.usage.refresh(context.Background(), func(context.Context) ([]bridge.QueueUsage, error) { return want, nil })
	for range 2 { // the same figures until the next read
		snap, _ := s.snapshot(time.Now())
		if len(snap.Usage) != 1 || snap.Usage[0].Queue != "nlp" || snap.Usage[0].Usage.GPUMilli != 3000 {
			t.Fatalf("snapshot usage = %+v, want %+v", snap.Usage, want)
		}
	}
}
