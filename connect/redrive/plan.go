package redrive

import (
	"cmp"
	"slices"
)

// Part names a partition of a dead-letter topic.
type Part struct {
	Topic     string
	Partition int32
}

func (p Part) String() string { return p.Topic + "/" + itoa(int64(p.Partition)) }

// Batch is dead letters handed to the plugin in one consume(): one block's
// records of one source topic-partition, consecutive (among those put
// back) in one dead-letter partition, in dead-letter offset order.
type Batch struct {
	Block   int // index into the definition's Topics
	DLQ     Part
	Letters []*Letter
}

// Tally counts what became of one dead-letter partition's letters.
type Tally struct {
	Read int // letters read (the partition from its log start to its end at the start)
	// Superseded: an earlier redrive put the record back and it was
	// rejected again; the newer dead letter (more attempts) stands for it.
	Superseded int
	// Duplicates: another letter of the same source record and attempts
	// stands for it (a dead letter produced twice after a failure).
	Duplicates int
	// Foreign: its source topic is not one this definition's blocks send
	// to this dead-letter topic.
	Foreign int
	// Unreadable: its pico_source_* headers cannot be read.
	Unreadable int
	Planned    int // put back: in a Batch

	// Outcomes of the planned letters (Run).
	Delivered   int // consume() returned OK without rejecting them: written, or already there
	Filtered    int // dropped by the block's transforms
	DeadLetters int // rejected again and produced to the dead-letter topic
	NotDone     int // their batch, or one before it in this partition, failed
	Err         error
}

// Owner says which block of the definition put a letter of source topic
// src into dead-letter topic dlq: ok false when none did.
type Owner func(src, dlq string) (block int, ok bool)

// Plan decides which letters to put back and cuts them into batches, per
// dead-letter partition, in the order they must be delivered.
//
// Exactly once needs two decisions here. First, one letter per source
// record: the one with the most attempts (an earlier redrive that saw the
// record rejected again wrote a newer letter, which supersedes the older),
// and of those the first by dead-letter position (a letter produced twice
// after a failure). So a second run does not put back what the first
// already settled either way: written (the plugin skips it) or rejected
// again (superseded). Second, batches of one dead-letter partition follow
// its offsets and are cut where the block, source topic or source
// partition changes (or at the block's batch_length): a plugin that
// dedupes on the dead-letter offsets (Delta's txn per dead-letter
// partition) sees each table's offsets only grow, so no batch falls below
// a version an earlier batch of the same run recorded.
func Plan(letters []Letter, owner Owner, batchLength func(block int) int) (map[Part][]Batch, map[Part]*Tally) {
	tallies := map[Part]*Tally{}
	tally := func(l *Letter) *Tally {
		p := Part{l.DLQ.Topic, l.DLQ.Partition}
		t := tallies[p]
		if t == nil {
			t = &Tally{}
			tallies[p] = t
		}
		return t
	}
	type pick struct {
		l     *Letter
		block int
	}
	live := map[Coord]pick{}
	for i := range letters {
		l := &letters[i]
		t := tally(l)
		t.Read++
		if l.Err != nil {
			t.Unreadable++
			continue
		}
		block, ok := owner(l.Source.Topic, l.DLQ.Topic)
		if !ok {
			t.Foreign++
			continue
		}
		cur, seen := live[l.Source]
		switch {
		case !seen:
			live[l.Source] = pick{l, block}
		case l.Attempts > cur.l.Attempts:
			tally(cur.l).Superseded++
			live[l.Source] = pick{l, block}
		case l.Attempts < cur.l.Attempts:
			t.Superseded++
		case before(l.DLQ, cur.l.DLQ):
			tally(cur.l).Duplicates++
			live[l.Source] = pick{l, block}
		default:
			t.Duplicates++
		}
	}
	byPart := map[Part][]pick{}
	for _, p := range live {
		k := Part{p.l.DLQ.Topic, p.l.DLQ.Partition}
		byPart[k] = append(byPart[k], p)
	}
	out := map[Part][]Batch{}
	for k, ps := range byPart {
		slices.SortFunc(ps, func(a, b pick) int { return cmp.Compare(a.l.DLQ.Offset, b.l.DLQ.Offset) })
		tallies[k].Planned = len(ps)
		var bs []Batch
		for _, p := range ps {
			if n := len(bs); n > 0 {
				cur := &bs[n-1]
				head := cur.Letters[0]
				if cur.Block == p.block && head.Source.Topic == p.l.Source.Topic && head.Source.Partition == p.l.Source.Partition &&
					len(cur.Letters) < max(1, batchLength(p.block)) {
					cur.Letters = append(cur.Letters, p.l)
					continue
				}
			}
			bs = append(bs, Batch{Block: p.block, DLQ: k, Letters: []*Letter{p.l}})
		}
		out[k] = bs
	}
	return out, tallies
}

// before orders dead-letter positions: topic, partition, offset.
func before(a, b Coord) bool {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c < 0
	}
	if a.Partition != b.Partition {
		return a.Partition < b.Partition
	}
	return a.Offset < b.Offset
}
