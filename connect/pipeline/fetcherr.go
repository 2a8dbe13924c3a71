package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/shared/retry/backoff"
)

// A partition whose fetches fail keeps failing at once: the broker answers
// a deleted topic UNKNOWN_TOPIC_ID without waiting, and kgo fetches again
// as soon as the loop polls. Measured: a picomq-connect whose only topic
// was deleted spun at 58 % of a core and logged a fetch_error warning a
// millisecond, for as long as it ran. So a failing partition is paused
// (kgo leaves it out of its fetches) for fetchErrorBackoff, growing with
// each failure in a row, and its warning is logged on the first failure
// and then at most once per fetchErrorLogEvery, with how many failures
// came in between. The block's other partitions are fetched as before.
// Records of the partition end the run of failures (fetch_recovered).
//
// The pause only spaces fetches that fail: nothing is skipped, the
// partition's offset does not move, and kgo takes the error (and any
// metadata it calls for) as before.
//
// UNKNOWN_TOPIC_ID is different: the topic was deleted, and maybe made
// again under the same name. kgo never adopts a recreated topic's new ID
// within a client (franz-go #908: it could not be checked against
// truncation), so that client would fail the topic for good. Once kgo
// reports it (kgo itself lets its first five pass: a topic just created
// answers so for a moment) and the partition has failed renewAfter times
// in a row (its pauses adding up to about 3 s), the consumer ends the
// session as a rewind does: the flights land and commit, the buckets are
// dropped, and a new client joins the group at the committed offsets. The
// broker dropped the deleted topic's committed offsets with it, so a topic
// made again is consumed from where the block starts a new partition; one
// still missing is simply not assigned, and not fetched.
var fetchErrorBackoff = backoff.Exponential(100*time.Millisecond, 2, 5*time.Second)

const (
	fetchErrorLogEvery = time.Minute
	renewAfter         = 6
)

// errRenew asks the consumer for a new session: a client that learns its
// topics again (see above).
var errRenew = errors.New("a topic was deleted: a new client joins the group")

// fetchFailure is a partition's run of failed fetches.
type fetchFailure struct {
	failures int       // in this run
	last     time.Time // the latest failure
	logged   time.Time // the latest warning
	unlogged int       // failures since that warning
	until    time.Time // fetching is paused until then (zero: not paused)
}

// fetchFailed takes the fetch errors of one poll: each is logged (see
// above) and pauses its partition. Errors of the poll's own context are
// not the broker's. An error of no partition (kgo's client-level
// notifications) is logged the same way and pauses nothing. c.mu is held.
func (c *consumer) fetchFailed(cl *kgo.Client, fs kgo.Fetches, now time.Time) {
	var pause map[string][]int32
	fs.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		k := tp{topic, p}
		f := c.failing[k]
		if f == nil || now.Sub(f.last) > fetchErrorLogEvery {
			f = &fetchFailure{}
			c.failing[k] = f
		}
		f.failures++
		f.last = now
		var wait time.Duration
		if topic != "" && p >= 0 {
			wait = fetchErrorBackoff(f.failures)
			if f.until.IsZero() && !c.paused[k] {
				if pause == nil {
					pause = map[string][]int32{}
				}
				pause[topic] = append(pause[topic], p)
			}
			f.until = now.Add(wait)
		}
		if errors.Is(err, kerr.UnknownTopicID) && f.failures >= renewAfter && !c.renew {
			c.renew = true
			c.log.Warn("the topic was deleted, or deleted and made again: the consumer starts a new session, which consumes it again from the committed offsets once it exists",
				"event", "topic_deleted", "topic", topic, "partition", p, "failures_in_a_row", f.failures)
		}
		if f.failures > 1 && now.Sub(f.logged) < fetchErrorLogEvery {
			f.unlogged++
			return
		}
		c.log.Warn("fetch error", "event", "fetch_error", "topic", topic, "partition", p, "err", err,
			"failures_in_a_row", f.failures, "unlogged_since_last_warning", f.unlogged, "fetch_paused_seconds", wait.Seconds())
		f.logged, f.unlogged = now, 0
	})
	if pause != nil {
		cl.PauseFetchPartitions(pause)
	}
}

// fetchRecovered ends partition k's run of failures: records of it
// arrived (and ends its pause, should they have come while it was
// paused). c.mu is held.
func (c *consumer) fetchRecovered(cl *kgo.Client, k tp) {
	f := c.failing[k]
	if f == nil {
		return
	}
	delete(c.failing, k)
	if !f.until.IsZero() && !c.paused[k] {
		cl.ResumeFetchPartitions(map[string][]int32{k.topic: {k.partition}})
	}
	c.log.Info("fetch recovered", "event", "fetch_recovered", "topic", k.topic, "partition", k.partition, "failures", f.failures)
}

// resumeFailedFetches fetches again the failing partitions whose pause is
// over (unless throttle holds them, with a full bucket). c.mu is held.
func (c *consumer) resumeFailedFetches(cl *kgo.Client, now time.Time) {
	var resume map[string][]int32
	for k, f := range c.failing {
		if f.until.IsZero() || now.Before(f.until) {
			continue
		}
		f.until = time.Time{}
		if !c.paused[k] {
			if resume == nil {
				resume = map[string][]int32{}
			}
			resume[k.topic] = append(resume[k.topic], k.partition)
		}
	}
	if resume != nil {
		cl.ResumeFetchPartitions(resume)
	}
}

// fetchPaused reports whether partition k is paused for its failures.
// c.mu is held.
func (c *consumer) fetchPaused(k tp) bool {
	f := c.failing[k]
	return f != nil && !f.until.IsZero()
}

// nextFetchResume is when the earliest paused failing partition is due to
// be fetched again.
func (c *consumer) nextFetchResume() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for _, f := range c.failing {
		if !f.until.IsZero() && (at.IsZero() || f.until.Before(at)) {
			at = f.until
		}
	}
	return at, !at.IsZero()
}

// renewSession ends the session for errRenew once every flight landed and
// what returned OK is committed; a flight that failed meanwhile ends it
// as any failure does (halt).
func (c *consumer) renewSession(work context.Context) error {
	c.mu.Lock()
	c.drain()
	if len(c.failed) > 0 {
		c.mu.Unlock()
		return c.halt(work)
	}
	c.commitLanded(work)
	c.mu.Unlock()
	return errRenew
}
