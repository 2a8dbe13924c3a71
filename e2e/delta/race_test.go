package delta_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// conflicts reads the sink's commit_conflicts metric.
func conflicts(t *testing.T, inst *hostclient.Instance) int {
	t.Helper()
	n, ok := sinkMetrics(t, inst)["commit_conflicts"].(float64)
	if !ok {
		t.Fatal("no commit_conflicts metric")
	}
	return int(n)
}

// againstFlatOutPeer has a peer writer — another C host process with its own
// sink instance — append one-record batches to the table as fast as it can,
// while the sink under test appends 100 batches of 5 records 50 ms apart.
// Every batch of the sink must commit on its first delivery, and delta-rs
// must read every row of both writers exactly once. It reports the sink's
// commit latencies and lost races, and asserts them only loosely: the CI
// machine is small and shared.
func againstFlatOutPeer(t *testing.T, uri string, cfg map[string]any) {
	py(t, createEvents, uri)
	const batches, per = 100, 5
	peer := newHarness(t).open("peer", cfg)
	inst := newHarness(t).open("sink", cfg)

	var stop atomic.Bool
	var wg sync.WaitGroup
	var peerCommits, peerRetries int
	wg.Add(1)
	go func() { // the peer: flat out, redelivering a failed batch as the runtime would
		defer wg.Done()
		for n := 0; !stop.Load(); n++ {
			b := events("peer", 1_000_000+n, 1)
			for b.Attempt = 1; ; b.Attempt++ {
				if err := peer.Consume(b); err == nil {
					break
				} else if b.Attempt >= 10 {
					t.Errorf("peer batch %d: %v", n, err)
					return
				}
				peerRetries++
			}
			peerCommits++
		}
	}()

	lat := make([]time.Duration, 0, batches)
	var lost []int
	var failed []string
	prev := conflicts(t, inst)
	for n := range batches {
		b := events("sink", n*per, per)
		start := time.Now()
		err := inst.Consume(b)
		lat = append(lat, time.Since(start))
		if err != nil {
			failed = append(failed, fmt.Sprintf("batch %d: %v", n, err))
			for b.Attempt = 2; err != nil && b.Attempt <= 10; b.Attempt++ {
				err = inst.Consume(b) // as the runtime would, so the read-back below still means something
			}
		}
		c := conflicts(t, inst)
		lost = append(lost, c-prev)
		prev = c
		time.Sleep(50 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()

	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	pct := func(p float64) time.Duration { return sorted[int(p*float64(len(sorted)-1))] }
	totalLost := 0
	for _, l := range lost {
		totalLost += l
	}
	t.Logf("sink: %d/%d batches committed first time; latency p50 %v p99 %v max %v; lost races %d (max %d per batch); "+
		"peer: %d commits, %d retried deliveries", batches-len(failed), batches, pct(0.5).Round(time.Millisecond),
		pct(0.99).Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond), totalLost, slices.Max(lost),
		peerCommits, peerRetries)
	if len(failed) > 0 {
		t.Errorf("%d batches failed: %v", len(failed), failed)
	}

	// Every row of both writers, exactly once.
	got := ids(t, uri)
	want := make([]int, 0, batches*per+peerCommits)
	for i := range batches * per {
		want = append(want, i)
	}
	for i := range peerCommits {
		want = append(want, 1_000_000+i)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("table holds %d rows, want %d (sink 0..%d, peer %d rows)", len(got), len(want), batches*per-1, peerCommits)
	}
	// Loose bounds for a 2-core CI machine; the targets (p99 <= 150 ms,
	// <= 2 lost races per batch) are what a quiet machine shows. With the
	// other e2e packages and builds running beside it, one batch lost 14
	// races once; before the fix it lost 20 and gave up.
	if p99 := pct(0.99); p99 > 2*time.Second {
		t.Errorf("p99 commit latency %v", p99)
	}
	if m := slices.Max(lost); m > 18 {
		t.Errorf("%d races lost by one batch", m)
	}
}

func TestCommitsAgainstFlatOutPeer(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "events"))
	againstFlatOutPeer(t, uri, map[string]any{"table_uri": uri})
}

func TestS3CommitsAgainstFlatOutPeer(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	uri := "s3://" + bucket + "/events"
	againstFlatOutPeer(t, uri, with(minio(t, svc), "table_uri", uri))
}
