package source

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/audit"
	"github.com/picomq/heavy-sinks/connect/redrive"
	"github.com/picomq/heavy-sinks/connect/transform"
)

// StallTimeout bounds how long a read of a partition may go without a
// record or an answer that it is at its end.
const StallTimeout = 30 * time.Second

// Kafka reads the broker for the audit: metadata, offsets, and records
// read back with direct partition consumers, never in a group and never
// committing.
type Kafka struct {
	opts []kgo.Opt // how to reach the brokers
	cl   *kgo.Client
	adm  *kadm.Client

	// The read-back consumer of the last partition Read: Reconcile reads
	// a partition's holes one after the other, so one consumer moved
	// with SetOffsets serves them all (a client per hole costs a
	// connection and a metadata round trip each).
	mu     sync.Mutex
	readTP audit.TP
	reader *kgo.Client
}

// NewKafka connects with opts (seed brokers, TLS, SASL: the block's
// connection options).
func NewKafka(opts []kgo.Opt) (*Kafka, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &Kafka{opts: opts, cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Close closes the clients.
func (k *Kafka) Close() {
	k.mu.Lock()
	if k.reader != nil {
		k.reader.Close()
		k.reader = nil
	}
	k.mu.Unlock()
	k.cl.Close()
}

// bounded is ctx cut to StallTimeout: the admin requests' bound (the
// client would retry an unreachable broker for much longer).
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, StallTimeout)
}

// Topics lists the broker's topics (internal ones left out), for blocks
// with a pattern.
func (k *Kafka) Topics(ctx context.Context) ([]string, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	td, err := k.adm.ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	return td.Names(), nil
}

// Partitions lists every partition of topics; a topic that does not exist
// has none.
func (k *Kafka) Partitions(ctx context.Context, topics []string) ([]audit.TP, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	td, err := k.adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	var out []audit.TP
	for _, t := range td.Sorted() {
		if errors.Is(t.Err, kerr.UnknownTopicOrPartition) {
			continue
		}
		if t.Err != nil {
			return nil, fmt.Errorf("topic %s: %w", t.Topic, t.Err)
		}
		for _, p := range t.Partitions.Sorted() {
			out = append(out, audit.TP{Topic: t.Topic, Partition: p.Partition})
		}
	}
	return out, nil
}

// Offsets returns each partition's log start and end and group's
// committed offset.
func (k *Kafka) Offsets(ctx context.Context, group string, tps []audit.TP) (map[audit.TP]audit.Offsets, error) {
	out := map[audit.TP]audit.Offsets{}
	if len(tps) == 0 {
		return out, nil
	}
	var topics []string
	seen := map[string]bool{}
	for _, tp := range tps {
		if !seen[tp.Topic] {
			seen[tp.Topic] = true
			topics = append(topics, tp.Topic)
		}
	}
	ctx, cancel := bounded(ctx)
	defer cancel()
	starts, err := k.adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	ends, err := k.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	committed, err := k.adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	for _, tp := range tps {
		s, ok1 := starts.Lookup(tp.Topic, tp.Partition)
		e, ok2 := ends.Lookup(tp.Topic, tp.Partition)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%s: no start or end offset from the broker", tp)
		}
		if s.Err != nil || e.Err != nil {
			return nil, fmt.Errorf("%s: listing offsets: %w", tp, errors.Join(s.Err, e.Err))
		}
		o := audit.Offsets{LogStart: s.Offset, End: e.Offset, Committed: -1}
		if c, ok := committed.Lookup(tp.Topic, tp.Partition); ok {
			if c.Err != nil {
				return nil, fmt.Errorf("%s: committed offset of group %s: %w", tp, group, c.Err)
			}
			o.Committed = c.At
		}
		out[tp] = o
	}
	return out, nil
}

// Read calls fn with each record held at offsets from ≤ o < to of tp.
func (k *Kafka) Read(ctx context.Context, tp audit.TP, from, to int64, fn func(audit.Record) error) error {
	if from >= to {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.reader != nil && k.readTP != tp {
		k.reader.Close()
		k.reader = nil
	}
	if k.reader == nil {
		cl, err := k.consumer(map[string]map[int32]kgo.Offset{tp.Topic: {tp.Partition: kgo.NewOffset().At(from)}})
		if err != nil {
			return err
		}
		k.reader, k.readTP = cl, tp
	} else {
		// Drops what was buffered from the previous position.
		k.reader.SetOffsets(map[string]map[int32]kgo.EpochOffset{tp.Topic: {tp.Partition: {Epoch: -1, Offset: from}}})
	}
	want := map[string]map[int32]audit.Range{tp.Topic: {tp.Partition: {From: from, To: to}}}
	err := k.poll(ctx, k.reader, want, func(r *kgo.Record) error {
		rec := audit.Record{Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, transform.Header{Key: h.Key, Value: h.Value})
		}
		return fn(rec)
	})
	if err != nil {
		// Its position is unknown: the next Read starts afresh.
		k.reader.Close()
		k.reader = nil
	}
	return err
}

// DeadLetters reads topic from its start to its end as of now and calls fn
// with each record's source coordinates and redrive attempts, as the
// redrive reads them (redrive.Parse).
func (k *Kafka) DeadLetters(ctx context.Context, topic string, fn func(src audit.TP, offset int64, attempts int)) (unreadable int64, err error) {
	lctx, cancel := bounded(ctx)
	defer cancel()
	starts, err := k.adm.ListStartOffsets(lctx, topic)
	if err != nil {
		return 0, err
	}
	ends, err := k.adm.ListEndOffsets(lctx, topic)
	if err != nil {
		return 0, err
	}
	want := map[string]map[int32]audit.Range{}
	var failed error
	ends.Each(func(e kadm.ListedOffset) {
		if errors.Is(e.Err, kerr.UnknownTopicOrPartition) {
			return
		}
		s, _ := starts.Lookup(e.Topic, e.Partition)
		if e.Err != nil || s.Err != nil {
			failed = errors.Join(failed, e.Err, s.Err)
			return
		}
		if s.Offset < e.Offset {
			if want[e.Topic] == nil {
				want[e.Topic] = map[int32]audit.Range{}
			}
			want[e.Topic][e.Partition] = audit.Range{From: s.Offset, To: e.Offset}
		}
	})
	if failed != nil {
		return 0, failed
	}
	err = k.read(ctx, want, func(r *kgo.Record) error {
		l := redrive.Parse(r)
		if l.Err != nil {
			unreadable++
			return nil
		}
		fn(audit.TP{Topic: l.Source.Topic, Partition: l.Source.Partition}, l.Source.Offset, l.Attempts)
		return nil
	})
	return unreadable, err
}

// read consumes each partition's range with a direct consumer of its own
// and calls fn with each record in it, in offset order per partition. A
// partition is done at its range's end, or at its high watermark (what
// compaction left of the range's tail is not there to wait for).
func (k *Kafka) read(ctx context.Context, want map[string]map[int32]audit.Range, fn func(*kgo.Record) error) error {
	if len(want) == 0 {
		return nil
	}
	parts := map[string]map[int32]kgo.Offset{}
	for t, ps := range want {
		parts[t] = map[int32]kgo.Offset{}
		for p, r := range ps {
			parts[t][p] = kgo.NewOffset().At(r.From)
		}
	}
	cl, err := k.consumer(parts)
	if err != nil {
		return err
	}
	defer cl.Close()
	return k.poll(ctx, cl, want, fn)
}

// consumer is a direct consumer of parts.
func (k *Kafka) consumer(parts map[string]map[int32]kgo.Offset) (*kgo.Client, error) {
	opts := append(append([]kgo.Opt{}, k.opts...), kgo.ConsumePartitions(parts),
		// As the runtime's consumer reads (kgo's default): aborted records
		// too. Transaction markers are kept so that a range ending in one
		// ends when it is read, rather than waiting for a record that
		// never comes; fn never sees them.
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords())
	return kgo.NewClient(opts...)
}

// poll reads want's ranges with cl, consuming them from their starts.
func (k *Kafka) poll(ctx context.Context, cl *kgo.Client, want map[string]map[int32]audit.Range, fn func(*kgo.Record) error) error {
	left := 0
	for _, ps := range want {
		left += len(ps)
	}
	done := map[string]map[int32]bool{}
	finish := func(t string, p int32) {
		if done[t] == nil {
			done[t] = map[int32]bool{}
		}
		if !done[t][p] {
			done[t][p] = true
			left--
		}
	}
	for left > 0 {
		pctx, cancel := context.WithTimeout(ctx, StallTimeout)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		progressed := false
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = errors.Join(ferr, fmt.Errorf("%s[%d]: %w", t, p, err))
			}
		})
		if ferr != nil {
			return ferr
		}
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			r, ok := want[fp.Topic][fp.Partition]
			if !ok || done[fp.Topic][fp.Partition] {
				return
			}
			progressed = true
			for _, rec := range fp.Records {
				if rec.Offset < r.From {
					continue
				}
				if rec.Offset >= r.To {
					finish(fp.Topic, fp.Partition)
					return
				}
				if ferr == nil && !rec.Attrs.IsControl() {
					ferr = fn(rec)
				}
				if rec.Offset == r.To-1 {
					finish(fp.Topic, fp.Partition)
					return
				}
			}
			if fp.HighWatermark >= 0 && fp.HighWatermark <= nextOffset(fp, r.From) {
				finish(fp.Topic, fp.Partition)
			}
		})
		if ferr != nil {
			return ferr
		}
		if !progressed && left > 0 {
			return fmt.Errorf("no records for %v from the broker", StallTimeout)
		}
	}
	return nil
}

// nextOffset is the offset after the last record of fp, or from when it
// has none.
func nextOffset(fp kgo.FetchTopicPartition, from int64) int64 {
	if n := len(fp.Records); n > 0 {
		return fp.Records[n-1].Offset + 1
	}
	return from
}
