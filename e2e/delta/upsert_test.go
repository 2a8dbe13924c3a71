package delta_test

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltatest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// TestUpsertKilledMidCommitThenReplayed: the C host running an upsert
// instance is killed (SIGKILL) at random moments while batches of changes
// are being merged — reading and rewriting files, uploading, committing;
// each new host redelivers from the first batch not answered OK, as a
// runtime does. The table ends as the model says (delta-rs and DuckDB),
// every remove names a live file, and a last replay of every batch
// changes nothing.
func TestUpsertKilledMidCommitThenReplayed(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "cdc"))
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	g := deltatest.NewChangeGen(seed, "op_field")
	cfg := with(map[string]any{"table_uri": uri}, g.UpsertPluginConfig()...)
	m := g.Model()
	var batches []hostclient.Batch
	var next uint64
	per := max(200, deltatest.UpsertKeys()/2)
	for range 60 {
		b, applies := g.Batch("cdc", 0, next, per, m)
		next += uint64(len(b.Records))
		for _, a := range applies {
			a(m)
		}
		batches = append(batches, b)
	}
	deliver := func(inst *hostclient.Instance, from int, acked *atomic.Int64, attempt uint32) {
		for i := from; i < len(batches); i++ {
			b := batches[i]
			b.Attempt = attempt
			if err := inst.Consume(b); err != nil && !strings.Contains(err.Error(), "the plugin rejected") {
				return
			}
			acked.Store(int64(i + 1))
		}
	}
	var acked atomic.Int64
	kills := 0
	for round := 1; acked.Load() < int64(len(batches)) && round <= 60; round++ {
		h := newHarness(t)
		inst := h.open("cdc", cfg)
		done := make(chan struct{})
		go func() { defer close(done); deliver(inst, int(acked.Load()), &acked, uint32(round)) }()
		select {
		case <-done:
		case <-time.After(time.Duration(5+rng.IntN(80)) * time.Millisecond):
			h.host.Kill()
			kills++
			<-done
		}
		t.Logf("round %d: %d of %d batches answered OK", round, acked.Load(), len(batches))
	}
	h := newHarness(t)
	inst := h.open("cdc", cfg)
	deliver(inst, int(acked.Load()), &acked, 20)
	if acked.Load() != int64(len(batches)) {
		t.Fatalf("%d of %d batches answered OK after the kills", acked.Load(), len(batches))
	}
	t.Logf("%d kills", kills)
	f := deltatest.WantUpsertModel(t, nil, uri, m)
	versions := len(f.Versions)
	// Every batch again: all of it is at or below the recorded offsets.
	var again atomic.Int64
	deliver(inst, 0, &again, 21)
	f = deltatest.WantUpsertModel(t, nil, uri, m)
	if len(f.Versions) != versions {
		t.Errorf("%d versions after replaying every batch, want %d", len(f.Versions), versions)
	}
}
