package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Broker is what the audit reads from the Kafka-protocol broker. It never
// commits offsets or joins a group.
type Broker interface {
	Reader
	// Partitions lists every partition of topics.
	Partitions(ctx context.Context, topics []string) ([]TP, error)
	// Offsets returns each partition's log start and end and group's
	// committed offset (-1 when it has none).
	Offsets(ctx context.Context, group string, tps []TP) (map[TP]Offsets, error)
	// DeadLetters reads topic from its start to its end as of the call and
	// calls fn with each record's source coordinates (the
	// pico_source_topic, _partition and _offset headers) and its
	// pico_redrive_attempts (0 without it); records without them are
	// counted in unreadable. A topic that does not exist has no dead
	// letters.
	DeadLetters(ctx context.Context, topic string, fn func(src TP, offset int64, attempts int)) (unreadable int64, err error)
}

// Destination is one sink's destination, as the audit reads it.
type Destination interface {
	// Scan returns each partition's account, the tables' notes (what
	// cannot be proven), streaming: memory grows with the holes and
	// duplicates, not the rows.
	Scan(ctx context.Context, tps []TP) (map[TP]*Written, []string, error)
}

// Block is one [[topics]] block, resolved.
type Block struct {
	Broker Broker // its cluster
	Group  string
	Topics []string // the topics it consumes now (pattern matched)
	// DeadLetters names the dead-letter topic of a source topic; nil
	// when the block keeps none (errors_tolerance = "none").
	DeadLetters func(topic string) string
	Skip        Skipper
}

// Sink is one definition to audit.
type Sink struct {
	Key, File, Plugin string
	Blocks            []Block
	Dest              Destination
	// Notes are added to the report as they are.
	Notes []string
	// Unaudited are added to the report's Unaudited as they are.
	Unaudited []string
}

// Run reconciles every partition of s's blocks.
func Run(ctx context.Context, s Sink) (SinkReport, error) {
	rep := SinkReport{Key: s.Key, File: s.File, Plugin: s.Plugin, Partitions: []PartitionReport{}, Notes: slices.Clone(s.Notes), Unaudited: append([]string{}, s.Unaudited...)}
	type blockTPs struct {
		blk *Block
		tps []TP
		off map[TP]Offsets
	}
	var blocks []blockTPs
	var all []TP
	for i := range s.Blocks {
		blk := &s.Blocks[i]
		b := blk.Broker
		tps, err := b.Partitions(ctx, blk.Topics)
		if err != nil {
			return rep, err
		}
		for _, t := range blk.Topics {
			if !slices.ContainsFunc(tps, func(tp TP) bool { return tp.Topic == t }) {
				rep.Unaudited = append(rep.Unaudited, fmt.Sprintf("topic %s does not exist on the broker: nothing audited", t))
			}
		}
		off, err := b.Offsets(ctx, blk.Group, tps)
		if err != nil {
			return rep, fmt.Errorf("group %s: %w", blk.Group, err)
		}
		blocks = append(blocks, blockTPs{blk, tps, off})
		all = append(all, tps...)
	}
	written, notes, err := s.Dest.Scan(ctx, all)
	if err != nil {
		return rep, err
	}
	rep.Notes = append(rep.Notes, notes...)
	for _, bt := range blocks {
		b := bt.blk.Broker
		dead := map[TP]*Letters{}
		if bt.blk.DeadLetters != nil {
			mine := map[TP]bool{}
			for _, tp := range bt.tps {
				mine[tp] = true
			}
			seen := map[string]bool{}
			for _, topic := range bt.blk.Topics {
				dlq := bt.blk.DeadLetters(topic)
				if seen[dlq] {
					continue
				}
				seen[dlq] = true
				var others int64
				bad, err := b.DeadLetters(ctx, dlq, func(src TP, o int64, attempts int) {
					if !mine[src] {
						others++
						return
					}
					l := dead[src]
					if l == nil {
						l = &Letters{}
						dead[src] = l
					}
					l.Add(o, attempts)
				})
				if err != nil {
					return rep, fmt.Errorf("dead-letter topic %s: %w", dlq, err)
				}
				if bad > 0 {
					rep.Notes = append(rep.Notes, fmt.Sprintf("dead-letter topic %s: %d record(s) whose pico_source_* or pico_redrive_attempts headers cannot be read, not counted", dlq, bad))
				}
				if others > 0 {
					rep.Notes = append(rep.Notes, fmt.Sprintf("dead-letter topic %s: %d record(s) of partitions this block does not consume now, not counted", dlq, others))
				}
			}
		}
		for _, tp := range bt.tps {
			off, ok := bt.off[tp]
			if !ok {
				return rep, fmt.Errorf("%s: the broker gave no offsets", tp)
			}
			p, err := Reconcile(ctx, tp, off, written[tp], dead[tp], b, bt.blk.Skip)
			if err != nil {
				return rep, err
			}
			// Consumed is 0 then: a clean partition would prove nothing.
			switch {
			case off.Committed < 0 && (holds(written[tp]) || dead[tp] != nil):
				rep.Unaudited = append(rep.Unaudited, fmt.Sprintf("%s: group %s has no committed offset, yet the destination or the dead-letter topic holds offsets of it: nothing audited", tp, bt.blk.Group))
			case off.Committed >= 0 && off.Committed < off.LogStart:
				rep.Unaudited = append(rep.Unaudited, fmt.Sprintf("%s: group %s committed offset %d, below the log start %d: nothing audited", tp, bt.blk.Group, off.Committed, off.LogStart))
			}
			rep.Partitions = append(rep.Partitions, p)
		}
	}
	slices.SortFunc(rep.Partitions, func(a, b PartitionReport) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return rep, nil
}

// holds reports whether a destination's account of a partition holds any
// offset.
func holds(w *Written) bool {
	return w != nil && (w.Rows.Once.Len() > 0 || w.Txn >= 0)
}
