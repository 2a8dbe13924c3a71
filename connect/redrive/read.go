package redrive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/definition"
)

// ReadTimeout bounds the wait for the next record of a dead-letter
// partition not yet read to its end: a broker that stops answering fails
// the redrive instead of holding it.
const ReadTimeout = 30 * time.Second

// deadLetterTopics lists the dead-letter topics of block t that exist on
// the broker: its dead_letter_topic, or "<topic>.dlq" of each topic it
// names or its pattern matches now.
func deadLetterTopics(ctx context.Context, adm *kadm.Client, t *definition.Topic) ([]string, error) {
	all, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	if err := all.Error(); err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	var want []string
	add := func(src string) {
		if d := t.DeadLetterFor(src); !slices.Contains(want, d) && all.Has(d) {
			want = append(want, d)
		}
	}
	if t.DeadLetterTopic != "" {
		add("")
	} else {
		for _, name := range t.Topics {
			add(name)
		}
		if t.Pattern != "" {
			for _, name := range all.Names() {
				if t.Consumes(name) {
					add(name)
				}
			}
		}
	}
	slices.Sort(want)
	return want, nil
}

// readAll reads every partition of topics from its log start to the end
// it had when the read began (records produced meanwhile, such as the
// redrive's own dead letters, are left for the next run), without a
// consumer group: no committed offset moves. Everything read is held in
// memory (docs/runtime.md, "Redrive").
func readAll(ctx context.Context, adm *kadm.Client, opts []kgo.Opt, topics []string) ([]Letter, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing the start offsets of %v: %w", topics, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing the end offsets of %v: %w", topics, err)
	}
	from := map[string]map[int32]kgo.Offset{}
	left := map[Part]int64{} // partition -> end offset still to reach
	ends.Each(func(e kadm.ListedOffset) {
		s, _ := starts.Lookup(e.Topic, e.Partition)
		if e.Offset > s.Offset {
			if from[e.Topic] == nil {
				from[e.Topic] = map[int32]kgo.Offset{}
			}
			from[e.Topic][e.Partition] = kgo.NewOffset().At(s.Offset)
			left[Part{e.Topic, e.Partition}] = e.Offset
		}
	})
	if len(left) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(append(slices.Clip(opts), kgo.ConsumePartitions(from))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	// Each partition must progress within ReadTimeout: a poll returns
	// whatever any partition has, so one that stalls while others keep
	// answering is caught by its own deadline, and a partition read to its
	// end is paused so it stops answering.
	progress := map[Part]time.Time{}
	now := time.Now()
	for k := range left {
		progress[k] = now
	}
	var out []Letter
	for len(left) > 0 {
		oldest := now
		for _, at := range progress {
			if at.Before(oldest) {
				oldest = at
			}
		}
		pctx, cancel := context.WithDeadline(ctx, oldest.Add(ReadTimeout))
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ferr error
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = errors.Join(ferr, fmt.Errorf("reading %s/%d: %w", topic, p, err))
			}
		})
		if ferr != nil {
			return nil, ferr
		}
		now = time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			k := Part{r.Topic, r.Partition}
			end, ok := left[k]
			if !ok || r.Offset >= end {
				return
			}
			progress[k] = now
			out = append(out, Parse(r))
			if r.Offset+1 >= end {
				delete(left, k)
				delete(progress, k)
				cl.PauseFetchPartitions(map[string][]int32{k.Topic: {k.Partition}})
			}
		})
		var stuck []string
		for k, at := range progress {
			if now.Sub(at) >= ReadTimeout {
				stuck = append(stuck, k.String()+" (end "+strconv.FormatInt(left[k], 10)+")")
			}
		}
		if len(stuck) > 0 {
			slices.Sort(stuck)
			return nil, fmt.Errorf("no record of %v within %v", stuck, ReadTimeout)
		}
	}
	return out, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
