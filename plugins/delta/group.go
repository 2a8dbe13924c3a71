package delta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Group commits.
//
// The sink registers with ConcurrentConsume: a host may call Consume of one
// instance for several topic partitions at once. Batches that wait for the
// same table are written as one Delta commit, the way LevelDB's writer
// queue or a database's group commit writes them: each call puts its batch
// (a member) in the table's queue; the call that finds no writer at work
// leads: it takes its own batch and those waiting behind it (up to
// groupMaxRecords records and group_commit_max_bytes payload bytes, its own
// batch always), writes them as one commit — one encoder run over every member,
// so one data file per partition value, a txn action per member, each
// member's recorded rejections — and answers each member. Then it hands the
// queue to the first batch that arrived meanwhile, which leads the next
// group. There is no linger timer: a group is what queued while the
// previous commit ran (and, once batches have been arriving together, what
// joined within a burst: gather), so a host that calls one at a time gets
// one batch per commit, as before, and never waits.
//
// Each member is answered for itself, and OK only when the commit holding
// its records landed (or the table already had them): a member whose
// records cannot be written (FATAL) is answered and the others are planned
// again without it; a commit that fails or whose outcome is unknown answers
// every member RETRY; a race lost to another writer re-bases the whole
// group on the new snapshot (writeGroup). A member that waits is never left
// waiting: a panic of the leader answers it RETRY, a cancelled call leaves
// the queue (RETRY) unless a leader took its batch, whose records the call
// cannot give back before the leader is done with them; table.close answers
// RETRY to whatever still waits and refuses later batches.

// groupMaxRecords bounds the records of one group, with the payload bytes
// of group_commit_max_bytes. The leader's own batch goes in whatever its
// size; others join while the group stays within both. A group's records
// are held by one encoder and written as one data file per partition value,
// so these bound a data file's size (docs/delta.md, Group commits).
const groupMaxRecords = 100_000

// member is one Consume call's batch in its table's queue.
type member struct {
	b     *sdk.Batch
	appID string
	// wake is closed when the member is answered (err) or made the leader
	// of the next group (lead).
	wake chan struct{}
	lead bool
	done bool // answered; the leader no longer touches b
	err  error

	// The records the table does not have yet (b.Records[skip:]), decided
	// afresh by each round of the group's write (writeGroup).
	records []sdk.Record
	skip    int
}

// answer gives the member its result. A follower's call returns it at
// once; the leader's returns it after the group is done.
func (m *member) answer(err error) {
	m.err, m.done = err, true
	if !m.lead {
		close(m.wake)
	}
}

// base is the index in b.Records of the member's first pending record.
func (m *member) base() int { return len(m.b.Records) - len(m.records) }

// queue is a table's writer queue.
type queue struct {
	mu      sync.Mutex
	waiting []*member // in arrival order, none of them the leader
	leading bool      // a leader is writing a group
	closed  bool
	grouped bool // the last group held more than one batch
	// pause is gather's sleep: time.Sleep, or a test's hook.
	pause func(time.Duration)
}

// A leader of a table whose batches have been arriving together (its last
// group held more than one) first waits until no batch joined the queue
// for gatherQuiet, at most gatherMax. A runtime that flushes many
// partitions at once (picomq-connect with max_in_flight) sends their
// batches within about a millisecond: without the wait the first to
// arrive leads a commit alone and the rest make a second one, two versions
// where one would do (measured: 48 partitions, a sweep every 500 ms, 4.0
// versions/s without it). Calls that come one at a time never wait.
const (
	gatherQuiet = 500 * time.Microsecond
	gatherMax   = 5 * time.Millisecond
)

// gather is the leader's wait for the rest of a burst (see gatherQuiet).
func (q *queue) gather(ctx context.Context) {
	q.mu.Lock()
	grouped, n := q.grouped, len(q.waiting)
	q.mu.Unlock()
	if !grouped {
		return
	}
	pause := q.pause
	if pause == nil {
		pause = time.Sleep
	}
	for deadline := time.Now().Add(gatherMax); time.Now().Before(deadline) && ctx.Err() == nil; {
		pause(gatherQuiet)
		q.mu.Lock()
		m := len(q.waiting)
		q.mu.Unlock()
		if m == n {
			return
		}
		n = m
	}
}

// join queues m. lead: no group is being written, m leads one now.
func (q *queue) join(m *member) (lead bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false, sdk.Retry(fmt.Errorf("the Delta sink is closing"))
	}
	if !q.leading {
		q.leading, m.lead = true, true
		return true, nil
	}
	q.waiting = append(q.waiting, m)
	return false, nil
}

// leave takes m out of the queue when it is still waiting there: neither
// taken into a group nor made a leader.
func (q *queue) leave(m *member) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.waiting, m)
	if i < 0 {
		return false
	}
	q.waiting = slices.Delete(q.waiting, i, i+1)
	return true
}

// take returns the leader's group: the leader first, then the waiting
// members in arrival order while the group stays within maxRecords and
// maxBytes. A member of an application (topic partition) already in the
// group waits for the next one: a commit holds one txn per application.
func (q *queue) take(leader *member, maxRecords, maxBytes int) []*member {
	q.mu.Lock()
	defer q.mu.Unlock()
	group := []*member{leader}
	records, bytes := len(leader.b.Records), leader.b.PayloadBytes()
	apps := map[string]bool{leader.appID: true}
	rest := q.waiting[:0]
	for _, m := range q.waiting {
		n, nb := len(m.b.Records), m.b.PayloadBytes()
		if apps[m.appID] || records+n > maxRecords || bytes+nb > maxBytes {
			rest = append(rest, m)
			continue
		}
		group = append(group, m)
		apps[m.appID] = true
		records, bytes = records+n, bytes+nb
	}
	clear(q.waiting[len(rest):])
	q.waiting = rest
	q.grouped = len(group) > 1
	return group
}

// next hands the queue to the first waiting member, or leaves it without a
// leader when none waits.
func (q *queue) next() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 || q.closed {
		q.leading = false
		return
	}
	m := q.waiting[0]
	q.waiting = slices.Delete(q.waiting, 0, 1)
	m.lead = true
	close(m.wake)
}

// close answers RETRY to every waiting member and refuses later ones.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for _, m := range q.waiting {
		m.answer(sdk.Retry(fmt.Errorf("the Delta sink closed while the batch waited for its table's commit")))
	}
	q.waiting = nil
}

// write appends the batch to the table, in a group commit with the batches
// that wait for the table with it, and returns the batch's answer.
func (t *table) write(ctx context.Context, b *sdk.Batch, appID string) error {
	m := &member{b: b, appID: appID, wake: make(chan struct{})}
	lead, err := t.queue.join(m)
	if err != nil {
		return err
	}
	if !lead {
		select {
		case <-m.wake:
		case <-ctx.Done():
			if t.queue.leave(m) {
				return sdk.Retry(fmt.Errorf("consume cancelled while the batch waited for Delta table %s: %w", t.uri, ctx.Err()))
			}
			// A leader has the batch: its records are in use until it
			// answers, and its writes see the same cancellation.
			<-m.wake
		}
		if !m.lead {
			return m.err
		}
	}
	t.queue.gather(ctx)
	t.lead(ctx, t.queue.take(m, groupMaxRecords, t.env.opts.groupMaxBytes))
	return m.err
}

// lead writes group as the table's one writer, answers each member, and
// hands the queue on.
func (t *table) lead(ctx context.Context, group []*member) {
	defer t.queue.next()
	defer func() {
		// On a panic, or a path that forgot a member, no member waits
		// forever, and none is answered OK.
		for _, m := range group {
			if !m.done {
				m.answer(sdk.Retry(fmt.Errorf("Delta table %s: the group commit that held the batch ended without an answer for it", t.uri)))
			}
		}
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writeGroup(ctx, group)
}

// writeGroup writes the members as one commit (commit.go) and answers each.
// When another writer changes the table (schema, protocol, or one of the
// members' transactions) while the group is in flight, the whole group is
// filtered and encoded again against the new snapshot, so a column added
// by ALTER TABLE is picked up without failing the batches.
func (t *table) writeGroup(ctx context.Context, live []*member) {
	answerAll := func(err error) {
		for _, m := range live {
			m.answer(err)
		}
	}
	for round := 1; ; round++ {
		// Each round decides the members' rejections afresh, against its
		// snapshot's schema.
		replay := false
		for _, m := range live {
			m.b.ForgetRejections()
			replay = replay || m.b.Attempt > 1
		}
		if t.stale || (round == 1 && replay) {
			if err := t.refresh(ctx, live[0].b.ValueSchema); err != nil {
				answerAll(err)
				return
			}
		}
		if t.snap.IsNew() && t.env.opts.create.fromBatch() {
			if empty, err := t.fromValueSchema(live); err != nil || empty {
				answerAll(err) // nil: tombstones only, nothing to write
				return
			}
		}
		if err := t.snap.Writable(); err != nil {
			answerAll(sdk.Fatalf("Delta table %s cannot be written by this sink: %v", t.uri, err))
			return
		}
		if live = t.filter(ctx, live); len(live) == 0 {
			return
		}
		r, kept, err := t.commit(ctx, live)
		if errors.Is(err, errSplit) {
			// A schema change the members cannot agree on: each alone.
			for _, m := range kept {
				t.writeGroup(ctx, []*member{m})
			}
			return
		}
		live = kept
		if err == nil {
			err = r.answer(t.uri)
		}
		if err == nil {
			for _, m := range live {
				skip := m.skip
				if r.already {
					skip = len(m.b.Records)
				}
				m.b.Skipped(notRejected(m.b, skip))
				m.answer(nil)
			}
			return
		}
		t.stale = true
		if t.enc != nil {
			t.enc.Reset()
		}
		if r.outcome != notLanded {
			answerAll(err) // failed before the put, or may have landed
			return
		}
		again, err := t.rebase(ctx, topics(live), r, round)
		if !again {
			answerAll(err)
			return
		}
	}
}

// filter decides, against the snapshot, what each member still has to
// write. A member with nothing left (a replay the table has) or that
// cannot be filtered is answered; the others are returned.
func (t *table) filter(ctx context.Context, members []*member) []*member {
	var live []*member
	for _, m := range members {
		records, err := t.pending(m.b, m.appID)
		if err != nil {
			m.answer(err)
			continue
		}
		m.records, m.skip = records, len(m.b.Records)-len(records)
		if err := t.recheck(ctx, m.b, m.appID, m.skip); err != nil {
			m.answer(err)
			continue
		}
		if len(records) == 0 {
			m.b.Skipped(notRejected(m.b, m.skip))
			m.answer(nil)
			continue
		}
		live = append(live, m)
	}
	return live
}

// topics names the members' topics, for logs: "a" for one, "a,b" for two.
func topics(members []*member) string {
	var names []string
	for _, m := range members {
		if !slices.Contains(names, m.b.Topic) {
			names = append(names, m.b.Topic)
		}
	}
	return strings.Join(names, ",")
}
