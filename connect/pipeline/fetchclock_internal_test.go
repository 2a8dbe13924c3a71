package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/definition"
)

// A bucket past poll_interval is quiet only once its broker's fetch answer
// read after its last records is settled by the next fetch written; while
// it waits, the poll's deadline is the bound (poll_interval plus one fetch
// wait) and a settling write past poll_interval wakes the poll. Another
// broker's answer does not count, and without any answer the bound makes
// it quiet.
func TestQuietWaitsForSettledFetchAnswer(t *testing.T) {
	const pollInterval, wait = 100 * time.Millisecond, 100 * time.Millisecond
	c := &consumer{t: definition.Topic{PollInterval: pollInterval, MaxInFlight: 1}, buckets: map[tp]*bucket{}, flying: map[tp][]*flight{}, depth: 1}
	c.fetched, c.fetchWait = newFetchClock(&c.wake), wait
	k := tp{"a", 0}
	last := time.Now().Add(-pollInterval - 10*time.Millisecond)
	b := &bucket{recs: []*kgo.Record{{}}, last: last, first: last, node: 1}
	c.buckets[k] = b
	read := func(node int32) { c.fetched.OnBrokerRead(kgo.BrokerMetadata{NodeID: node}, fetchKey, 100, 0, 0, nil) }
	write := func(node int32, key int16) {
		c.fetched.OnBrokerWrite(kgo.BrokerMetadata{NodeID: node}, key, 100, 0, 0, nil)
	}
	quiet := func() bool { return c.quiet(b, time.Now()) }

	if quiet() {
		t.Fatal("quiet with no fetch answered since its last records")
	}
	at, ok := c.nextIdleFlush()
	if want := last.Add(pollInterval + wait); !ok || !at.Equal(want) {
		t.Fatalf("next idle flush %v %v, want the bound %v", at, ok, want)
	}
	if from := c.fetched.wakeFrom.Load(); from != last.Add(pollInterval).UnixNano() {
		t.Fatalf("a fetch wakes the poll from %v, want from %v", time.Unix(0, from), last.Add(pollInterval))
	}
	read(2)
	write(2, fetchKey)
	read(1)     // read, not settled: its records may not have been polled yet
	write(1, 3) // a Metadata request settles nothing
	if quiet() {
		t.Fatal("quiet on another broker's answer, or on an answer not settled")
	}
	_, disarm := c.wake.arm(context.Background()) // takes the pokes so far (another broker's fetch pokes too: harmless)
	disarm()
	ctx, disarm := c.wake.arm(context.Background())
	write(1, fetchKey)
	if !quiet() {
		t.Fatal("not quiet after its broker's answer was settled")
	}
	select {
	case <-ctx.Done():
	default:
		t.Fatal("the settling fetch did not wake the poll")
	}
	disarm()
	if at, ok := c.nextIdleFlush(); !ok || !at.Equal(last.Add(pollInterval)) || c.fetched.wakeFrom.Load() != 0 {
		t.Fatalf("next idle flush %v %v (fetches wake from %d): want %v, no fetch waking", at, ok, c.fetched.wakeFrom.Load(), last.Add(pollInterval))
	}

	// Records just arrived: a fetch written before poll_interval passed
	// does not wake the poll (a steady stream's every fetch would).
	b.last = time.Now()
	c.nextIdleFlush()
	ctx, disarm = c.wake.arm(context.Background())
	defer disarm()
	if ctx.Err() != nil {
		t.Fatal("a poke left over")
	}
	read(1)
	write(1, fetchKey)
	if ctx.Err() != nil {
		t.Fatal("a fetch written before poll_interval passed woke the poll")
	}

	// A broker that answers nothing: quiet at the bound.
	b.last = time.Now().Add(-pollInterval - wait)
	b.node = 3
	if !quiet() {
		t.Fatal("not quiet at poll_interval plus one fetch wait")
	}
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
