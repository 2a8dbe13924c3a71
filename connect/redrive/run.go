package redrive

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/child"
	decoding "github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/metadata"
	"github.com/picomq/heavy-sinks/shared/retry/backoff"
)

// Plugin is the sink instance a redrive delivers to (a child.Instance).
type Plugin interface {
	pipeline.Deliverer
	pipeline.PayloadChecker
}

// Config is what Run needs.
type Config struct {
	Def     *definition.Definition
	Brokers []string // unless a block's bootstrap.servers names others
	// Decoders are the binary-schema blocks' decoders, by block Index, as
	// the loop has them (pipeline.Config.Decoders).
	Decoders map[int]decoding.Decoder
	Out      Plugin
	Log      *slog.Logger
	// Backoff is the wait after failed attempt n of a batch; default
	// pipeline.Backoff (the loop's).
	Backoff func(attempt int) time.Duration
	// ClientOpts are added to every Kafka client's options (tests).
	ClientOpts []kgo.Opt
}

// Report is what a redrive did, per dead-letter partition.
type Report struct {
	Parts map[Part]*Tally
}

// OK reports whether every letter that was to be put back was written
// (or found already written), dropped by a transform, or dead-lettered
// again, and every letter could be read.
func (r *Report) OK() bool {
	for _, t := range r.Parts {
		if t.NotDone > 0 || t.Unreadable > 0 || t.Err != nil {
			return false
		}
	}
	return true
}

// Sorted returns the partitions in name order.
func (r *Report) Sorted() []Part {
	return slices.SortedFunc(maps.Keys(r.Parts), func(a, b Part) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
}

// Run puts the dead letters of cfg.Def's blocks with errors_tolerance =
// "all" back through cfg.Out (ABI 1.4 redrive batches; the caller checks
// that the plugin declares redrive): it reads every dead-letter partition
// to its end at the start, plans (Plan), and delivers each partition's
// batches in order, stopping a partition at its first batch that fails.
// Records rejected again go back to their dead-letter topic with
// pico_redrive_attempts one higher. No consumer group is joined: the source
// topics' committed offsets do not move. The error is a failure to read
// the dead letters at all; what happened to each partition is in the
// report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Backoff == nil {
		cfg.Backoff = pipeline.Backoff
	}
	blocks := cfg.Def.Topics
	opts := make([][]kgo.Opt, len(blocks))
	var letters []Letter
	read := map[string]bool{}
	for i := range blocks {
		t := &blocks[i]
		if t.ErrorsTolerance != definition.ToleranceAll {
			cfg.Log.Info("block has no dead-letter topic (errors_tolerance is not \"all\"); nothing to redrive", "block", t.Index)
			continue
		}
		o, err := pipeline.ClientOptions(cfg.Brokers, t)
		if err != nil {
			return nil, fmt.Errorf("[[topics]] block %d: %w", t.Index, err)
		}
		opts[i] = append(o, cfg.ClientOpts...)
		ls, err := readBlock(ctx, opts[i], t, read)
		if err != nil {
			return nil, fmt.Errorf("[[topics]] block %d: %w", t.Index, err)
		}
		letters = append(letters, ls...)
	}
	owner := func(src, dlq string) (int, bool) {
		for i := range blocks {
			t := &blocks[i]
			if t.ErrorsTolerance == definition.ToleranceAll && t.Consumes(src) && t.DeadLetterFor(src) == dlq {
				return i, true
			}
		}
		return 0, false
	}
	plan, tallies := Plan(letters, owner, func(b int) int { return blocks[b].BatchLength })
	for p, t := range tallies {
		if t.Unreadable > 0 {
			cfg.Log.Warn("dead letters without readable pico_source_* headers cannot be put back", "event", "redrive_unreadable",
				"dead_letter_topic", p.Topic, "partition", p.Partition, "count", t.Unreadable)
		}
	}
	r := &runner{cfg: cfg, opts: opts, producers: map[int]*kgo.Client{}}
	defer r.close()
	rep := &Report{Parts: tallies}
	for _, p := range rep.Sorted() {
		t := tallies[p]
		for i, b := range plan[p] {
			settled, err := r.deliver(ctx, b, t)
			if err != nil {
				t.NotDone += len(b.Letters) - settled
				for _, rest := range plan[p][i+1:] {
					t.NotDone += len(rest.Letters)
				}
				t.Err = err
				cfg.Log.Error("redrive of a dead-letter partition stopped; its later batches were not delivered", "event", "redrive_failed",
					"dead_letter_topic", p.Topic, "partition", p.Partition, "first_offset", b.Letters[0].DLQ.Offset, "err", err)
				break
			}
		}
		cfg.Log.Info("dead-letter partition redriven", "event", "redrive_partition_done", "dead_letter_topic", p.Topic,
			"partition", p.Partition, "read", t.Read, "planned", t.Planned, "delivered", t.Delivered,
			"dead_lettered", t.DeadLetters, "filtered", t.Filtered, "not_done", t.NotDone)
	}
	return rep, nil
}

// readBlock reads the dead-letter topics of block t not yet in done.
func readBlock(ctx context.Context, opts []kgo.Opt, t *definition.Topic, done map[string]bool) ([]Letter, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := deadLetterTopics(ctx, adm, t)
	if err != nil {
		return nil, err
	}
	topics = slices.DeleteFunc(topics, func(s string) bool { return done[s] })
	for _, s := range topics {
		done[s] = true
	}
	return readAll(ctx, adm, opts, topics)
}

type runner struct {
	cfg       Config
	opts      [][]kgo.Opt
	producers map[int]*kgo.Client
}

func (r *runner) close() {
	for _, p := range r.producers {
		p.Close()
	}
}

// deliver hands one batch to the plugin, attempts 1 to
// pipeline.MaxAttempts as the loop does, and produces what is rejected
// again. Its letters' outcomes go into t; an error means the batch's fate
// is not settled (not written, or its rejections not dead-lettered), and
// settled says how many of its letters t counts all the same.
//
// The records the runtime rejects (decode failure, transform error) are
// dead-lettered, acknowledged, before the plugin sees the batch: the
// plugin commits the batch under the dead-letter offsets of the records it
// gets, and a later run skips every letter at or below the last of them,
// so one rejected here but not yet in the dead-letter topic when the
// commit happened would be lost.
func (r *runner) deliver(ctx context.Context, b Batch, t *Tally) (settled int, err error) {
	block := &r.cfg.Def.Topics[b.Block]
	recs := make([]*kgo.Record, len(b.Letters))
	for i, l := range b.Letters {
		recs[i] = l.Original()
	}
	hb, sent, bad, dropped, err := pipeline.Decode(ctx, block, r.cfg.Decoders[block.Index], recs, r.cfg.Out.ChecksPayloads(string(block.Schema)))
	if err != nil {
		return 0, fmt.Errorf("decoding: %w", err)
	}
	letterOf := map[*kgo.Record]*Letter{}
	for i, rec := range recs {
		letterOf[rec] = b.Letters[i]
	}
	if err := r.deadLetter(ctx, b, bad, letterOf); err != nil {
		return 0, fmt.Errorf("before delivering the batch: %w", err)
	}
	t.DeadLetters += len(bad)
	t.Filtered += dropped
	settled = len(bad) + dropped
	if len(hb.Records) == 0 {
		return settled, nil
	}
	hb.AcceptRejections = true
	hb.Redrive = &hostclient.Redrive{Topic: b.DLQ.Topic, Partition: uint32(b.DLQ.Partition), Offsets: make([]uint64, len(sent))}
	for i, j := range sent {
		hb.Redrive.Offsets[i] = uint64(b.Letters[j].DLQ.Offset)
	}
	rej, err := r.consume(ctx, hb, b)
	if err != nil {
		return settled, err
	}
	again := make([]pipeline.BadRecord, 0, len(rej))
	for _, x := range rej {
		if x.Index < 0 || x.Index >= len(sent) {
			return settled, fmt.Errorf("the plugin rejected record %d of a batch of %d", x.Index, len(sent))
		}
		again = append(again, pipeline.BadRecord{Record: recs[sent[x.Index]], Reason: x.Reason, Message: x.Message})
	}
	// The plugin wrote (or found written) what it did not reject.
	t.Delivered += len(hb.Records) - len(rej)
	settled += len(hb.Records) - len(rej)
	if err := r.deadLetter(ctx, b, again, letterOf); err != nil {
		return settled, err
	}
	t.DeadLetters += len(again)
	return settled + len(again), nil
}

// deadLetter produces the records rejected again to their dead-letter
// topic with pico_redrive_attempts one higher and waits for the broker's
// acknowledgement.
func (r *runner) deadLetter(ctx context.Context, b Batch, again []pipeline.BadRecord, letterOf map[*kgo.Record]*Letter) error {
	if len(again) == 0 {
		return nil
	}
	block := &r.cfg.Def.Topics[b.Block]
	out := make([]*kgo.Record, 0, len(again))
	for _, x := range again {
		l := letterOf[x.Record]
		d := pipeline.DeadLetterRecord(x.Record, block.DeadLetterFor(x.Record.Topic), x.Reason, x.Message)
		d.Headers = append(d.Headers, kgo.RecordHeader{Key: metadata.RedriveAttempts, Value: strconv.AppendInt(nil, int64(l.Attempts+1), 10)})
		out = append(out, d)
	}
	p, err := r.producer(b.Block)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, pipeline.DeadLetterTimeout)
		err = p.ProduceSync(pctx, out...).FirstErr()
		cancel()
	}
	if err != nil {
		return fmt.Errorf("producing %d record(s) rejected again to the dead-letter topic: %w", len(out), err)
	}
	for _, x := range again {
		l := letterOf[x.Record]
		r.cfg.Log.Warn("record rejected again; dead-lettered", "event", "redrive_dead_lettered", "topic", l.Source.Topic,
			"partition", l.Source.Partition, "offset", l.Source.Offset, "dead_letter_offset", l.DLQ.Offset,
			"attempts", l.Attempts+1, "class", x.Reason.String(), "error", x.Message)
	}
	return nil
}

// consume delivers hb until OK: RETRY and a plugin host that died are
// retried with backoff up to pipeline.MaxAttempts, anything else ends it.
func (r *runner) consume(ctx context.Context, hb hostclient.Batch, b Batch) ([]hostclient.Rejection, error) {
	for attempt := 1; ; attempt++ {
		hb.Attempt = uint32(attempt)
		rej, err := r.cfg.Out.Consume(ctx, hb)
		if err == nil {
			return rej, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		retry := errors.Is(err, child.ErrExited) || hostclient.CodeOf(err) == hostclient.StatusRetry
		if !retry || attempt >= pipeline.MaxAttempts {
			return nil, fmt.Errorf("consume after %d attempt(s): %w", attempt, err)
		}
		wait := r.cfg.Backoff(attempt)
		r.cfg.Log.Warn("redrive batch not delivered; delivering again", "event", "redrive_retry", "dead_letter_topic", b.DLQ.Topic,
			"partition", b.DLQ.Partition, "first_offset", b.Letters[0].DLQ.Offset, "attempt", attempt, "err", err, "backoff_seconds", wait.Seconds())
		if err := backoff.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// producer is block i's dead-letter producer, as the loop makes it: acks
// from all in-sync replicas, idempotent, and in-flight records failed at
// pipeline.DeadLetterTimeout (franz-go otherwise waits for their outcome
// however long that takes; a record cancelled so and produced again by a
// later run may be in the dead-letter topic twice, which Plan dedupes).
func (r *runner) producer(i int) (*kgo.Client, error) {
	if p := r.producers[i]; p != nil {
		return p, nil
	}
	opts := append(slices.Clip(r.opts[i]), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowIdempotentProduceCancellation(),
		kgo.RecordDeliveryTimeout(pipeline.DeadLetterTimeout), kgo.ProduceRequestTimeout(pipeline.DeadLetterTimeout))
	p, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("dead-letter producer: %w", err)
	}
	r.producers[i] = p
	return p, nil
}
