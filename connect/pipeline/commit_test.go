package pipeline_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/internal/testenv/poll"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// A broker that answers each offset commit after a second does not hold
// the loop: the batches go to the plugin one after another while the
// commit of the first is in flight, the offsets that land meanwhile go
// together in the next commit, and the shutdown waits for every commit, so
// the group's offset ends at the end. With a synchronous commit per batch
// the ten batches took at least nine seconds; with a commit sent per
// batch, ten commits.
func TestSlowCommitsDoNotHoldTheLoop(t *testing.T) {
	const batches, per, commitDelay = 10, 100, time.Second
	kf := cluster(t, "a")
	var commits atomic.Int64
	kf.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		commits.Add(1)
		kf.SleepControl(func() { time.Sleep(commitDelay) })
		return nil, nil, false
	})
	produce(t, kf, "a", jsonPayloads(0, batches*per)...)
	var mu sync.Mutex
	var at []time.Time
	p := &fakeplugin.Plugin{Decide: func(hostclient.Batch, int) fakeplugin.Result {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, time.Now())
		return fakeplugin.Result{}
	}}
	h := newHarness(t, kf, "[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = 100\npoll_interval = \"50ms\"\n", fake(p))
	h.start()
	poll.Until(t, 60*time.Second, "every batch delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(at) >= batches
	})
	mu.Lock()
	span := at[batches-1].Sub(at[0])
	mu.Unlock()
	if span > 4*commitDelay {
		t.Errorf("the batches took %s from the first to the last, want under %s: the loop waited for commits", span, 4*commitDelay)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	// The first batch's commit, one with the offsets that landed in its
	// second, perhaps a third, and none from the shutdown (nothing left).
	if n := commits.Load(); n > 4 {
		t.Errorf("%d commits for %d batches, want at most 4: the offsets that landed during a commit did not wait for it", n, batches)
	}
	if got := committed(t, kf, group, "a")["a"]; got != batches*per {
		t.Errorf("committed %d after the shutdown, want %d: it did not wait for the commits sent", got, batches*per)
	}
	if dups := duplicates(t, h.lines(), "a", batches*per); dups != 0 {
		t.Errorf("%d duplicates", dups)
	}
}

// A second member joins while the first member's commits are still
// waiting for the broker: they are answered before the partitions go, so
// the new owner starts past what the first delivered; every record is
// delivered once. Two things hold them: the revocation waits for the
// commits sent (awaitCommits), and kgo's join waits for every commit in
// flight; this checks the outcome, not which of the two gave it.
func TestRevocationWaitsForCommitsSent(t *testing.T) {
	const parts, per = 2, 10
	kf := partitioned(t, parts, per)
	kf.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		kf.SleepControl(func() { time.Sleep(time.Second) })
		return nil, nil, false
	})
	pa := &fakeplugin.Plugin{Concurrent: true}
	blocks := "[[topics]]\ntopics = [\"p\"]\nschema = \"json\"\nbatch_length = 10\npoll_interval = \"50ms\"\nmax_in_flight = 2\n"
	a := newHarness(t, kf, blocks, fake(pa))
	a.start()
	poll.Until(t, 30*time.Second, "both partitions delivered by the first member", func() bool { return len(a.lines()) == parts })
	b := newHarness(t, kf, blocks, fake(&fakeplugin.Plugin{Concurrent: true}))
	b.start()
	poll.Until(t, 60*time.Second, "everything committed", func() bool {
		c := committedP(t, kf, parts)
		return c[0] == per && c[1] == per
	})
	time.Sleep(time.Second) // a redelivery by the new owner would show now
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	checkDeliveredOnce(t, parts, per, a, b)
}
