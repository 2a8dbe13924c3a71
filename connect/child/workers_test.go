package child_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/connect/child"
)

// A library's child has --workers threads, or one per batch its blocks may
// have in flight plus one for metrics and close, within the host's range.
func TestWorkersFor(t *testing.T) {
	for _, c := range []struct{ least, inFlight, want int }{
		{4, 1, 4},   // one block, one batch at a time: --workers
		{4, 3, 4},   // three blocks: 3 + 1
		{4, 4, 5},   // a fourth batch must not leave metrics() waiting
		{4, 64, 65}, // one block with max_in_flight = 64
		{8, 2, 8},   // --workers above the need stays
		{4, 64 * 5, child.MaxWorkers},
	} {
		if got := child.WorkersFor(c.least, c.inFlight); got != c.want {
			t.Errorf("WorkersFor(%d, %d) = %d, want %d", c.least, c.inFlight, got, c.want)
		}
	}
}
