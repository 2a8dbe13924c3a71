package pipeline_test

import (
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/poll"
)

// A steady stream into a block with the runtime's own fetch settings is
// delivered in full batches. The derived fetches wait as long as
// poll_interval, so each gap between two fetches of the stream is about
// poll_interval: a bucket must count as idle only once its broker answered
// a fetch after its last records (fetchClock), not because the gap passed.
// Without that, the stream came out in batches of one fetch each.
func TestSteadyStreamDerivedFetchesFullBatches(t *testing.T) {
	const total, batch, gap = 1200, 200, 2 * time.Millisecond
	var a ages
	kf := cluster(t, "a")
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = 200\npoll_interval = \"150ms\"\n", fake(a.plugin()))
	h.derivedFetch = true
	h.start()
	trickle(t, kf, "a", total, gap)
	poll.Until(t, 60*time.Second, "every record committed", func() bool { return committed(t, kf, group, "a")["a"] == total })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	sizes, _ := a.get()
	if len(sizes) == 0 {
		t.Fatal("no batch delivered")
	}
	// A producer that stalls for poll_interval on a loaded machine makes
	// a true idle gap: allow one short batch besides the last.
	short := 0
	for _, n := range sizes[:len(sizes)-1] {
		if n < batch {
			short++
		}
	}
	if short > 1 {
		t.Errorf("batch sizes %v: %d short of batch_length %d before the last, want at most 1", sizes, short, batch)
	}
	if dups := duplicates(t, h.lines(), "a", total); dups != 0 {
		t.Errorf("%d duplicates", dups)
	}
}
