package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/definition"
)

// clockedConsumer is a consumer with the fetch clock and one bucket of
// partition a/0, led by broker 1, whose last records came at last.
func clockedConsumer(pollInterval, wait time.Duration, last time.Time) (*consumer, *bucket) {
	c := &consumer{t: definition.Topic{PollInterval: pollInterval, MaxInFlight: 1}, buckets: map[tp]*bucket{}, flying: map[tp][]*flight{}, depth: 1}
	c.fetched, c.fetchWait = newFetchClock(&c.wake, pollInterval), wait
	b := &bucket{recs: []*kgo.Record{{}}, last: last, first: last, node: 1}
	c.buckets[tp{"a", 0}] = b
	return c, b
}

// answer is broker node answering a fetch (with records or empty) and the
// client writing its next fetch, which settles the answer.
func answer(f *fetchClock, node int32, records bool) {
	meta := kgo.BrokerMetadata{NodeID: node}
	f.OnBrokerRead(meta, fetchKey, 100, 0, 0, nil)
	if records {
		f.OnFetchBatchRead(meta, "a", 1, kgo.FetchBatchMetrics{})
	}
	f.OnBrokerWrite(meta, fetchKey, 100, 0, 0, nil)
}

// armedAfterLook is the poll armed after the loop looked at c's buckets
// (nextIdleFlush), as the loop arms it; disarmed when the test ends.
func armedAfterLook(t *testing.T, c *consumer) context.Context {
	c.nextIdleFlush()
	ctx, disarm := c.wake.arm(context.Background())
	t.Cleanup(disarm)
	return ctx
}

// woken reports whether the poll armed before was woken within d.
func woken(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return true
	case <-time.After(d):
		return false
	}
}

// A bucket past poll_interval is quiet only once its broker answered a
// fetch after its last records and the client wrote its next fetch
// (settled); until then the poll's deadline is the bound, poll_interval
// plus one fetch wait, after which it is quiet anyway. Another broker's
// answer and an answer read but not settled do not count.
func TestQuietWaitsForSettledFetchAnswer(t *testing.T) {
	const pollInterval, wait = 2 * time.Second, 3 * time.Second
	last := time.Now().Add(-pollInterval - 100*time.Millisecond)
	c, b := clockedConsumer(pollInterval, wait, last)
	quiet := func() bool { return c.quiet(b, time.Now()) }
	if quiet() {
		t.Fatal("quiet with no fetch answered since its last records")
	}
	if at, ok := c.nextIdleFlush(); !ok || !at.Equal(last.Add(pollInterval+wait)) {
		t.Fatalf("next idle flush %v %v, want the bound %v", at, ok, last.Add(pollInterval+wait))
	}
	answer(c.fetched, 2, false)
	c.fetched.OnBrokerRead(kgo.BrokerMetadata{NodeID: 1}, fetchKey, 100, 0, 0, nil)
	c.fetched.OnBrokerWrite(kgo.BrokerMetadata{NodeID: 1}, 3, 100, 0, 0, nil) // a Metadata request settles nothing
	if quiet() {
		t.Fatal("quiet on another broker's answer, or on an answer not settled")
	}
	c.fetched.OnBrokerWrite(kgo.BrokerMetadata{NodeID: 1}, fetchKey, 100, 0, 0, nil)
	if !quiet() {
		t.Fatal("not quiet after its broker's answer was settled")
	}
	if at, ok := c.nextIdleFlush(); !ok || !at.Equal(last.Add(pollInterval)) {
		t.Fatalf("next idle flush %v %v, want %v", at, ok, last.Add(pollInterval))
	}
	// Unknown leader: any broker's settled answer.
	b.node = -1
	if !quiet() {
		t.Fatal("a bucket of unknown leader not quiet after an answer")
	}
	// A broker that answers nothing: quiet at the bound.
	b.node, b.last = 4, time.Now().Add(-pollInterval-wait)
	if !quiet() {
		t.Fatal("not quiet at poll_interval plus one fetch wait")
	}
}

// The settled answer that may end a bucket's wait wakes the poll when it
// was empty: at once when the bucket is poll_interval old, else when it
// is. An answer that held records wakes nothing: its poll returns them.
func TestEmptyFetchAnswerWakesThePoll(t *testing.T) {
	t.Run("past poll_interval", func(t *testing.T) {
		c, _ := clockedConsumer(2*time.Second, 2*time.Second, time.Now().Add(-3*time.Second))
		ctx := armedAfterLook(t, c)
		answer(c.fetched, 1, true)
		if ctx.Err() != nil {
			t.Fatal("an answer with records woke the poll")
		}
		answer(c.fetched, 1, false)
		if ctx.Err() == nil {
			t.Fatal("an empty answer after the bucket's last records did not wake the poll")
		}
	})
	t.Run("before poll_interval", func(t *testing.T) {
		const pollInterval = 300 * time.Millisecond
		c, _ := clockedConsumer(pollInterval, pollInterval, time.Now())
		ctx := armedAfterLook(t, c)
		answer(c.fetched, 1, false)
		if ctx.Err() != nil {
			t.Fatal("woken before the bucket was poll_interval old")
		}
		if !woken(ctx, 10*time.Second) {
			t.Fatal("not woken once the bucket was poll_interval old")
		}
	})
	t.Run("no bucket waits", func(t *testing.T) {
		c, b := clockedConsumer(time.Second, time.Second, time.Now().Add(-2*time.Second))
		b.recs = nil
		ctx := armedAfterLook(t, c)
		answer(c.fetched, 1, false)
		if woken(ctx, 50*time.Millisecond) {
			t.Fatal("woken with no bucket waiting")
		}
	})
}

// Without the runtime's own fetch settings the clock is off and a bucket
// is quiet after poll_interval, as the spec says.
func TestQuietWithFetchSettingsSet(t *testing.T) {
	c := &consumer{t: definition.Topic{PollInterval: 100 * time.Millisecond, MaxInFlight: 1}}
	b := &bucket{recs: []*kgo.Record{{}}, last: time.Now().Add(-101 * time.Millisecond)}
	if !c.quiet(b, time.Now()) {
		t.Fatal("not quiet after poll_interval")
	}
	b.last = time.Now()
	if c.quiet(b, time.Now()) {
		t.Fatal("quiet before poll_interval")
	}
}
