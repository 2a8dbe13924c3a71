package pipeline_test

import (
	"fmt"
	"testing"

	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
)

// A block whose fetches may wait as long as its poll_interval is warned
// about at start; one whose fetches wait less is not.
func TestFetchWaitNotBelowPollIntervalWarned(t *testing.T) {
	for _, c := range []struct {
		waitMs int
		warned bool
	}{{100, true}, {250, true}, {50, false}} {
		t.Run(fmt.Sprint(c.waitMs, "ms"), func(t *testing.T) {
			kf := cluster(t, "a")
			block := fmt.Sprintf("[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\npoll_interval = \"100ms\"\n\n[topics.properties]\n\"fetch.wait.max.ms\" = %d\n", c.waitMs)
			h := newHarness(t, kf, block, fake(&fakeplugin.Plugin{}))
			h.start()
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			if got := h.logged("event=fetch_wait_not_below_poll_interval"); got != c.warned {
				t.Errorf("warned %v, want %v; logs:\n%s", got, c.warned, h.logs.String())
			}
		})
	}
}
