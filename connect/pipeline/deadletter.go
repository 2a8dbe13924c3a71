package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/shared/metadata"
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
		headers := append(slices.Clip(src.Headers),
			kgo.RecordHeader{Key: metadata.DeadLetterTopic, Value: []byte(src.Topic)},
			kgo.RecordHeader{Key: metadata.DeadLetterPartition, Value: strconv.AppendInt(nil, int64(src.Partition), 10)},
			kgo.RecordHeader{Key: metadata.DeadLetterOffset, Value: strconv.AppendInt(nil, src.Offset, 10)},
			kgo.RecordHeader{Key: metadata.DeadLetterTimestamp, Value: strconv.AppendInt(nil, src.Timestamp.UnixMilli(), 10)},
			kgo.RecordHeader{Key: metadata.DeadLetterClass, Value: []byte(r.reason.String())},
			kgo.RecordHeader{Key: metadata.DeadLetterMessage, Value: []byte(r.msg)},
		)
		out = append(out, &kgo.Record{Topic: dlq, Key: src.Key, Value: src.Value, Headers: headers})
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

// producer returns the block's dead-letter producer, made on first use:
// the block's brokers and credentials, acks from all in-sync replicas,
// idempotent, topics created on first use where the broker allows it.
func (c *consumer) producer() (*kgo.Client, error) {
	if c.dlq != nil {
		return c.dlq, nil
	}
	opts, err := connOpts(c.s.cfg.Brokers, c.t)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation(),
		kgo.RecordDeliveryTimeout(DeadLetterTimeout), kgo.ProduceRequestTimeout(DeadLetterTimeout))
	cl, err := kgo.NewClient(append(opts, c.s.cfg.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("dead-letter producer: %w", err)
	}
	c.dlq = cl
	return cl, nil
}
