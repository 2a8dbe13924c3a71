package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// failedFetch is one poll's fetches: partition p of topic failed with err.
func failedFetch(topic string, p int32, err error) kgo.Fetches {
	return kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: topic, Partitions: []kgo.FetchPartition{{Partition: p, Err: err}}}}}}
}

// failingConsumer is a consumer as a session starts it, logging into log,
// with a client that is never connected (pausing is the client's own
// bookkeeping).
func failingConsumer(t *testing.T, log *bytes.Buffer) (*consumer, *kgo.Client) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	c := &consumer{log: slog.New(slog.NewTextHandler(log, nil)), paused: map[tp]bool{}, failing: map[tp]*fetchFailure{}}
	return c, cl
}

func paused(cl *kgo.Client) map[string][]int32 { return cl.PauseFetchPartitions(nil) }

// A partition whose fetches keep failing is paused for a growing backoff
// and resumed when it is over; its warning is logged once, then once a
// minute with the failures in between; records end the run. Errors of the
// poll's own context are not failures, and an error of no partition pauses
// nothing.
func TestFailingFetchPausedAndLoggedOnce(t *testing.T) {
	var log bytes.Buffer
	c, cl := failingConsumer(t, &log)
	denied := kerr.TopicAuthorizationFailed
	t0 := time.Now()
	now := t0
	var waits []time.Duration
	for i := range 5 {
		c.fetchFailed(cl, failedFetch("a", 0, denied), now)
		f := c.failing[tp{"a", 0}]
		waits = append(waits, f.until.Sub(now))
		if got := paused(cl); !maps.EqualFunc(got, map[string][]int32{"a": {0}}, func(a, b []int32) bool { return len(a) == 1 && a[0] == b[0] }) {
			t.Fatalf("failure %d: paused %v, want a/0", i+1, got)
		}
		// Not due yet: stays paused.
		c.resumeFailedFetches(cl, now.Add(f.until.Sub(now)-time.Millisecond))
		if len(paused(cl)) == 0 {
			t.Fatalf("failure %d: resumed before its pause was over", i+1)
		}
		now = f.until
		c.resumeFailedFetches(cl, now)
		if got := paused(cl); len(got) != 0 {
			t.Fatalf("failure %d: still paused %v after its pause", i+1, got)
		}
	}
	ms := time.Millisecond
	if want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms}; !slices.Equal(waits, want) {
		t.Errorf("pauses %v, want %v", waits, want)
	}
	// Failing on every 5 s until a minute after the warning: the next
	// one comes then, with the failures since.
	unlogged := 4
	for ; now.Sub(t0) < fetchErrorLogEvery; now = now.Add(5 * time.Second) {
		c.fetchFailed(cl, failedFetch("a", 0, denied), now)
		unlogged++
	}
	if n := strings.Count(log.String(), "event=fetch_error"); n != 1 {
		t.Errorf("%d warnings within a minute, want 1:\n%s", n, log.String())
	}
	c.fetchFailed(cl, failedFetch("a", 0, denied), now)
	if n := strings.Count(log.String(), "event=fetch_error"); n != 2 || !strings.Contains(log.String(), fmt.Sprintf("unlogged_since_last_warning=%d", unlogged)) {
		t.Errorf("want a second warning a minute later counting %d unlogged failures:\n%s", unlogged, log.String())
	}
	if c.renew {
		t.Error("an authorization failure asked for a new session")
	}
	// Records of the partition end the run, and its pause.
	c.fetchRecovered(cl, tp{"a", 0})
	if c.failing[tp{"a", 0}] != nil || len(paused(cl)) != 0 || !strings.Contains(log.String(), "event=fetch_recovered") {
		t.Errorf("records did not end the run (paused %v):\n%s", paused(cl), log.String())
	}

	log.Reset()
	c.fetchFailed(cl, failedFetch("a", 1, context.DeadlineExceeded), now)
	c.fetchFailed(cl, failedFetch("", -1, errors.New("group session ended")), now)
	if len(paused(cl)) != 0 || c.failing[tp{"a", 1}] != nil {
		t.Errorf("paused %v, failing %v: want nothing paused", paused(cl), c.failing)
	}
	if n := strings.Count(log.String(), "event=fetch_error"); n != 1 {
		t.Errorf("%d warnings, want 1 (the client's error, not the deadline's):\n%s", n, log.String())
	}
}

// A partition paused both because its bucket is full (throttle) and for a
// failed fetch is fetched again only once neither holds it.
func TestFailingFetchAndFullBucketPauses(t *testing.T) {
	var log bytes.Buffer
	c, cl := failingConsumer(t, &log)
	k := tp{"a", 0}
	now := time.Now()
	c.paused[k] = true
	cl.PauseFetchPartitions(map[string][]int32{"a": {0}})
	c.fetchFailed(cl, failedFetch("a", 0, kerr.TopicAuthorizationFailed), now)
	c.resumeFailedFetches(cl, now.Add(time.Second))
	if len(paused(cl)) == 0 {
		t.Fatal("resumed a partition whose bucket is full")
	}
	c.fetchFailed(cl, failedFetch("a", 0, kerr.TopicAuthorizationFailed), now.Add(time.Second))
	// The bucket drains (throttle's resume) while the fetch pause holds.
	c.t.BatchLength = 10
	c.buckets = map[tp]*bucket{}
	c.throttle(cl)
	if len(paused(cl)) == 0 || c.paused[k] {
		t.Fatalf("throttle resumed a partition paused for its failed fetch (paused %v)", paused(cl))
	}
	c.resumeFailedFetches(cl, now.Add(time.Minute))
	if len(paused(cl)) != 0 {
		t.Fatalf("still paused %v once neither holds it", paused(cl))
	}
}

// UNKNOWN_TOPIC_ID asks for a new session once the partition failed
// renewAfter times in a row, with a topic_deleted warning.
func TestUnknownTopicIDRenewsTheSession(t *testing.T) {
	var log bytes.Buffer
	c, cl := failingConsumer(t, &log)
	now := time.Now()
	for i := 1; i <= renewAfter; i++ {
		if c.renew {
			t.Fatalf("new session asked after %d failures, want %d", i-1, renewAfter)
		}
		c.fetchFailed(cl, failedFetch("a", 0, kerr.UnknownTopicID), now)
		now = now.Add(time.Second)
	}
	if !c.renew || strings.Count(log.String(), "event=topic_deleted") != 1 {
		t.Errorf("renew %v after %d failures:\n%s", c.renew, renewAfter, log.String())
	}
}
