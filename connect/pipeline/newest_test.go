package pipeline_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
)

// Each delivery carries the newest record timestamp of its batch, whatever
// the records' order, on every attempt: the freshness metrics take it from
// the attempt that returned OK.
func TestDeliveryNewestTimestamp(t *testing.T) {
	kf := cluster(t, "a")
	p := &fakeplugin.Plugin{}
	p.Queue(fakeplugin.Retry("busy"))
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = 4\npoll_interval = \"1h\"\n", fake(p))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i, off := range []time.Duration{3, 9, 1, 5} { // the newest is the second
		recs = append(recs, &kgo.Record{Topic: "a", Timestamp: base.Add(off * time.Second), Value: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	h.start()
	poll.Until(t, 10*time.Second, "the batch delivered with OK", func() bool {
		h.seen.mu.Lock()
		defer h.seen.mu.Unlock()
		return len(h.seen.d) == 2
	})
	h.seen.mu.Lock()
	defer h.seen.mu.Unlock()
	want := base.Add(9 * time.Second)
	for i, outcome := range []pipeline.Outcome{pipeline.Retry, pipeline.OK} {
		d := h.seen.d[i]
		if d.Outcome != outcome || !d.Newest.Equal(want) {
			t.Errorf("delivery %d: %s, newest %v; want %s, %v", i, d.Outcome, d.Newest, outcome, want)
		}
	}
}
