package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/picomq/heavy-sinks/shared/retry/backoff"
)

// DeadLetterTimeout bounds how long producing one batch's dead letters may
// take (the broker's acknowledgement included) before the consumer stops.
const DeadLetterTimeout = 30 * time.Second

// deadLetter produces the rejected records of a delivered batch to their
// dead-letter topics and waits for the broker to acknowledge every one
// (acks=all); only then does the caller commit the batch's offset. A failure
// stops the consumer without committing: on restart the batch is delivered
// again, the plugin (which wrote its records exactly once) rejects the same
// records, and they are produced again, so a dead-letter topic may hold a
// record twice but never misses one.
func (c *consumer) deadLetter(ctx context.Context, d Delivery, bad []rejected) error {
	// In offset order, whoever rejected them (runtime or plugin).
	slices.SortFunc(bad, func(a, b rejected) int { return cmp.Compare(a.rec.Offset, b.rec.Offset) })
	out := make([]*kgo.Record, 0, len(bad))
	counts := map[string]int{}
	for _, r := range bad {
		src := r.rec
		dlq := c.t.DeadLetterFor(src.Topic)
		if c.t.Consumes(dlq) {
			return c.deadLetterFailed(d, fmt.Errorf("dead-letter topic %q is consumed by this [[topics]] block: its dead letters would come back to it; set dead_letter_topic", dlq))
		}
		out = append(out, DeadLetterRecord(src, dlq, r.reason, r.msg))
		counts[r.reason.String()]++
	}
	p, err := c.producer()
	if err == nil {
		err = p.ProduceSync(ctx, out...).FirstErr()
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // the shutdown timeout passed: nothing is committed
		}
		return c.deadLetterFailed(d, fmt.Errorf("producing %d record(s) to the dead-letter topic: %w", len(out), err))
	}
	d.DeadLetters = counts
	c.s.cfg.Observer.Delivered(d)
	for _, r := range bad {
		c.log.Warn("record dead-lettered", "topic", r.rec.Topic, "partition", r.rec.Partition, "offset", r.rec.Offset,
			"dead_letter_topic", c.t.DeadLetterFor(r.rec.Topic), "class", r.reason.String(), "error", r.msg)
	}
	return nil
}

func (c *consumer) deadLetterFailed(d Delivery, err error) error {
	d.Outcome, d.Err = DeadLetterFailed, err
	c.s.cfg.Observer.Delivered(d)
	return &StopError{Topic: d.Topic, Partition: d.Partition, Offset: d.First, Attempts: d.Attempt, Outcome: DeadLetterFailed, Err: err}
}

// producer returns the block's dead-letter producer, made on first use (at
// start, for the dead-letter topic check): the block's brokers and
// credentials, acks from all in-sync replicas, idempotent (in-flight
// records failed at DeadLetterTimeout), and a topic
// deleted while the sink runs created again where the broker auto-creates
// topics.
func (c *consumer) producer() (*kgo.Client, error) {
	if c.dlq != nil {
		return c.dlq, nil
	}
	opts, err := connOpts(c.s.cfg.Brokers, c.t)
	if err != nil {
		return nil, err
	}
	// AllowIdempotentProduceCancellation: franz-go otherwise waits for an
	// in-flight record's outcome whatever the context and
	// RecordDeliveryTimeout say, and DeadLetterTimeout would not bound the
	// wait. A record cancelled so may reach the topic and be produced again
	// on restart: a duplicate dead letter, never a missing one.
	opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation(), kgo.AllowIdempotentProduceCancellation(),
		kgo.RecordDeliveryTimeout(DeadLetterTimeout), kgo.ProduceRequestTimeout(DeadLetterTimeout))
	cl, err := kgo.NewClient(append(opts, c.s.cfg.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("dead-letter producer: %w", err)
	}
	c.dlq = cl
	return cl, nil
}

// deadLetterCheckTimeout bounds one attempt to find (and create) dead-letter
// topics; a broker that does not answer in time is asked again.
const deadLetterCheckTimeout = 15 * time.Second

// deadLetterCheckBackoff is the wait after failed attempt n to reach the
// broker for the check: 200 ms growing to 5 s, then every 5 s.
var deadLetterCheckBackoff = backoff.Exponential(200*time.Millisecond, 2, 5*time.Second)

// DeadLetterTopicError is a dead-letter topic that cannot serve: it is
// missing and the broker refused to create it, the block may not even
// describe it, or the block consumes it (its dead letters would come back
// to it). Retrying cannot help; the consumer stops before consuming the
// records it would serve.
type DeadLetterTopicError struct {
	Block  int    // the [[topics]] block, 1-based
	Topic  string // the dead-letter topic
	Source string // the topic whose dead letters it takes; "" for dead_letter_topic
	Err    error  // the broker's refusal
}

func (e *DeadLetterTopicError) Error() string {
	of := ""
	if e.Source != "" {
		of = fmt.Sprintf(" (of topic %q)", e.Source)
	}
	return fmt.Sprintf("[[topics]] block %d: dead-letter topic %q%s: %v", e.Block, e.Topic, of, e.Err)
}

func (e *DeadLetterTopicError) Unwrap() error { return e.Err }

// deadLettersOf maps the dead-letter topics of sources that are not known to
// exist yet to the source topic that names them ("" for an explicit
// dead_letter_topic, which is checked whatever the sources).
func (c *consumer) deadLettersOf(sources []string) map[string]string {
	want := map[string]string{}
	if c.t.DeadLetterTopic != "" {
		if !c.dlqReady[c.t.DeadLetterTopic] {
			want[c.t.DeadLetterTopic] = ""
		}
		return want
	}
	for _, src := range sources {
		if d := c.t.DeadLetterFor(src); !c.dlqReady[d] {
			want[d] = src
		}
	}
	return want
}

// ensureDeadLetters makes sure that the dead-letter topics of sources exist
// before any record of theirs is consumed, so that a missing one is found
// at start (or when a pattern first assigns a topic), not at the first bad
// record. A missing topic is created with the broker's default partitions
// and replication factor (CreateTopics, as Kafka Connect creates its
// dead-letter queue): this works whatever auto.create.topics.enable says,
// and needs the CREATE permission that auto-creation needs too. A broker
// that cannot be reached or answers with a retriable error is asked again
// with backoff until ctx ends (ctx's error is returned then), like any
// other broker operation. A refusal is a *DeadLetterTopicError.
func (c *consumer) ensureDeadLetters(ctx context.Context, sources []string) error {
	want := c.deadLettersOf(sources)
	if len(want) == 0 {
		return nil
	}
	cl, err := c.producer()
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err := c.findOrCreate(ctx, cl, want)
		var refused *DeadLetterTopicError
		if err == nil || errors.As(err, &refused) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := deadLetterCheckBackoff(attempt)
		c.log.Warn("cannot check the dead-letter topics yet; asking the broker again", "event", "dead_letter_check_retry",
			"topics", slices.Sorted(maps.Keys(want)), "attempt", attempt, "err", err, "backoff_seconds", wait.Seconds())
		if err := backoff.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// findOrCreate is one attempt of ensureDeadLetters: a metadata request that
// does not auto-create, then CreateTopics for the missing ones. Topics found
// or created leave want (and are remembered in c.dlqReady).
func (c *consumer) findOrCreate(ctx context.Context, cl *kgo.Client, want map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, deadLetterCheckTimeout)
	defer cancel()
	refused := func(topic string, err error) error {
		return &DeadLetterTopicError{Block: c.t.Index, Topic: topic, Source: want[topic], Err: err}
	}
	ready := func(topic string) {
		c.dlqReady[topic] = true
		delete(want, topic)
	}
	req := kmsg.NewPtrMetadataRequest() // AllowAutoTopicCreation stays false: only look
	for _, topic := range slices.Sorted(maps.Keys(want)) {
		if c.t.Consumes(topic) {
			return refused(topic, errors.New("consumed by this [[topics]] block: its dead letters would come back to it; set dead_letter_topic"))
		}
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	var missing []string
	for _, rt := range resp.Topics {
		if rt.Topic == nil {
			continue
		}
		topic := *rt.Topic
		if _, ok := want[topic]; !ok {
			continue
		}
		switch err := kerr.ErrorForCode(rt.ErrorCode); {
		case err == nil, errors.Is(err, kerr.LeaderNotAvailable): // exists; a leader is being elected
			ready(topic)
			c.log.Debug("dead-letter topic exists", "event", "dead_letter_topic_ready", "dead_letter_topic", topic)
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			missing = append(missing, topic)
		case kerr.IsRetriable(err):
			return fmt.Errorf("describing %s: %w", topic, err)
		default:
			return refused(topic, fmt.Errorf("cannot be described (this client needs DESCRIBE and WRITE on it): %w", err))
		}
	}
	if len(missing) > 0 {
		rs, err := kadm.NewClient(cl).CreateTopics(ctx, -1, -1, nil, missing...)
		if err != nil {
			return err
		}
		for _, topic := range missing {
			r, ok := rs[topic]
			switch {
			case !ok:
				return fmt.Errorf("creating %s: no answer from the broker", topic)
			case r.Err == nil, errors.Is(r.Err, kerr.TopicAlreadyExists):
				if r.Err == nil {
					c.log.Info("dead-letter topic created", "event", "dead_letter_topic_created", "dead_letter_topic", topic,
						"partitions", r.NumPartitions, "replication_factor", r.ReplicationFactor)
				}
				ready(topic)
			case kerr.IsRetriable(r.Err):
				return fmt.Errorf("creating %s: %w", topic, r.Err)
			default:
				detail := ""
				if r.ErrMessage != "" {
					detail = ": " + r.ErrMessage
				}
				return refused(topic, fmt.Errorf("does not exist and the broker refused to create it (%w%s); create it, or allow this client to create it", r.Err, detail))
			}
		}
	}
	if len(want) > 0 {
		return fmt.Errorf("the broker did not describe %v", slices.Sorted(maps.Keys(want)))
	}
	return nil
}
