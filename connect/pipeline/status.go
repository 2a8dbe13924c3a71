package pipeline

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/definition"
)

// PartitionStatus is where one topic-partition a sink consumes stands: the
// numbers behind /status and the lag gauge. A sink tracks the partitions
// its consumers were assigned, from the assignment on (a quiet partition
// is listed before anything is fetched from it), so the set is bounded by
// the partitions of its topics; a revoked partition leaves it.
type PartitionStatus struct {
	Topic     string
	Partition int32
	// Committed is the group's committed offset (the next record to
	// deliver); -1 while none is known.
	Committed int64
	// HighWatermark is the partition's end offset, from the last fetch or
	// the last end-offset listing (every Config.LagRefresh); -1 while
	// unknown.
	HighWatermark int64
	// LogStart is the partition's first offset, from the last fetch (or
	// the listing on assignment): where a group with no committed offset
	// starts with auto_offset_reset = "earliest".
	LogStart int64
	// ResetOffset is where a group with no committed offset starts with
	// auto_offset_reset = "latest": the end offset listed when the
	// partition was assigned; -1 otherwise.
	ResetOffset int64
	// LastBatch is when a batch of the partition was last delivered with
	// OK (and its offset committed or committing); zero before.
	LastBatch time.Time
}

// Lag is how many records of the partition are not committed yet: the
// high watermark minus the committed offset (or, before any commit, minus
// where the group starts: the log start, or with "latest" the end offset
// at assignment). 0 while the high watermark is unknown.
func (p PartitionStatus) Lag() int64 {
	if p.HighWatermark < 0 {
		return 0
	}
	from := max(p.Committed, p.LogStart, 0)
	if p.Committed < 0 {
		from = max(from, p.ResetOffset)
	}
	return max(p.HighWatermark-from, 0)
}

// Partitions returns the status of every partition the sink consumes, by
// topic and partition.
func (s *Sink) Partitions() []PartitionStatus {
	s.mu.Lock()
	out := make([]PartitionStatus, 0, len(s.parts))
	for _, p := range s.parts {
		out = append(out, *p)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b PartitionStatus) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// part returns the entry of k, creating it; s.mu is held.
func (s *Sink) part(k tp) *PartitionStatus {
	if s.parts == nil {
		s.parts = map[tp]*PartitionStatus{}
	}
	p := s.parts[k]
	if p == nil {
		p = &PartitionStatus{Topic: k.topic, Partition: k.partition, Committed: -1, HighWatermark: -1, ResetOffset: -1}
		s.parts[k] = p
	}
	return p
}

// assignListTimeout bounds the listing of a new assignment's offsets.
const assignListTimeout = 10 * time.Second

// sawAssigned starts tracking the partitions a consumer of block t was just
// assigned, so that a quiet one is listed before anything is fetched from
// it, and fills in their committed and end offsets in the background (best
// effort, within assignListTimeout, until ctx ends): the consumer does not
// wait for the listing to fetch. It runs in the assignment callback.
func (s *Sink) sawAssigned(ctx context.Context, cl *kgo.Client, t definition.Topic, parts map[string][]int32) {
	if len(parts) == 0 {
		return
	}
	s.mu.Lock()
	for topic, ps := range parts {
		for _, p := range ps {
			s.part(tp{topic, p})
		}
	}
	s.mu.Unlock()
	go s.listAssigned(ctx, cl, t, parts)
}

// listAssigned lists the group's committed offsets and the end offsets of
// newly assigned partitions (and, for "earliest" ones without a committed
// offset, the log start). Values only move forward, so a listing that
// arrives after a fetch or a commit changes nothing; a partition revoked
// meanwhile stays forgotten.
func (s *Sink) listAssigned(ctx context.Context, cl *kgo.Client, t definition.Topic, parts map[string][]int32) {
	ctx, cancel := context.WithTimeout(ctx, assignListTimeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	topics := slices.Sorted(maps.Keys(parts))
	committed, cerr := adm.FetchOffsets(ctx, t.ConsumerGroup)
	// A ListedOffsets may be partial (shard errors): each partition's
	// own Err says whether it was listed.
	ends, _ := adm.ListEndOffsets(ctx, topics...)
	noCommit := func(topic string, p int32) bool {
		if cerr != nil {
			return false // unknown
		}
		o, ok := committed.Lookup(topic, p)
		return !ok || o.Err == nil && o.At < 0
	}
	var starts kadm.ListedOffsets
	if t.OffsetReset != definition.Latest {
		var from []string
		for _, topic := range topics {
			if slices.ContainsFunc(parts[topic], func(p int32) bool { return noCommit(topic, p) }) {
				from = append(from, topic)
			}
		}
		if len(from) > 0 {
			starts, _ = adm.ListStartOffsets(ctx, from...)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for topic, ps := range parts {
		for _, n := range ps {
			p := s.parts[tp{topic, n}]
			if p == nil {
				continue // revoked meanwhile
			}
			if cerr == nil {
				if o, ok := committed.Lookup(topic, n); ok && o.Err == nil && o.At >= 0 {
					p.Committed = max(p.Committed, o.At)
				}
			}
			if o, ok := ends.Lookup(topic, n); ok && o.Err == nil {
				p.HighWatermark = max(p.HighWatermark, o.Offset)
				if t.OffsetReset == definition.Latest && p.Committed < 0 && noCommit(topic, n) {
					p.ResetOffset = o.Offset
				}
			}
			if o, ok := starts.Lookup(topic, n); ok && o.Err == nil {
				p.LogStart = max(p.LogStart, o.Offset)
			}
		}
	}
}

// sawFetches records the high watermarks a poll returned. A partition seen
// for the first time takes its committed offset from what the client
// fetched when it joined the group.
func (s *Sink) sawFetches(cl *kgo.Client, fs kgo.Fetches) {
	var joined map[string]map[int32]kgo.EpochOffset
	s.mu.Lock()
	defer s.mu.Unlock()
	fs.EachPartition(func(f kgo.FetchTopicPartition) {
		if f.Err != nil {
			return
		}
		p := s.part(tp{f.Topic, f.Partition})
		p.HighWatermark = max(p.HighWatermark, f.HighWatermark)
		p.LogStart = f.LogStartOffset
		if p.Committed < 0 {
			if joined == nil {
				joined = cl.CommittedOffsets()
			}
			if o, ok := joined[f.Topic][f.Partition]; ok {
				p.Committed = o.Offset
			}
		}
	})
}

// sawCommit records offsets the consumer committed (ok) or tried to commit
// after delivering their batches.
func (s *Sink) sawCommit(offsets map[string]map[int32]kgo.EpochOffset, ok bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for topic, ps := range offsets {
		for partition, o := range ps {
			p := s.part(tp{topic, partition})
			p.LastBatch = now
			if ok {
				p.Committed = o.Offset
			}
		}
	}
}

// forget drops a partition the consumer no longer owns: its lag is its
// next owner's to report.
func (s *Sink) forget(k tp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.parts, k)
}

// refreshEnds lists the end offsets of the consumer's topics every
// Config.LagRefresh until ctx is done, so lag keeps growing while no
// fetch returns: while a batch is retried, on a quiet partition, or after
// the consumer stopped polling. Only partitions the sink already tracks
// (those assigned) are updated.
func (s *Sink) refreshEnds(ctx context.Context, cl *kgo.Client) {
	t := time.NewTicker(s.cfg.LagRefresh)
	defer t.Stop()
	adm := kadm.NewClient(cl)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		topics := cl.GetConsumeTopics()
		if len(topics) == 0 {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, s.cfg.LagRefresh)
		ends, err := adm.ListEndOffsets(lctx, topics...)
		cancel()
		if err != nil {
			continue // best effort: the next fetch or listing brings it
		}
		s.mu.Lock()
		ends.Each(func(o kadm.ListedOffset) {
			if p := s.parts[tp{o.Topic, o.Partition}]; p != nil && o.Err == nil {
				p.HighWatermark = max(p.HighWatermark, o.Offset)
			}
		})
		s.mu.Unlock()
	}
}
