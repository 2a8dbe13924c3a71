package delta

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
// so one data file per partition value, a txn action per partition (a
// pipelined chain shares its partition's), each member's recorded rejections — and answers each member. Then it hands the
// queue to the first batch that arrived meanwhile, which leads the next
// group. Unless group_commit_linger is set there is no linger timer: a
// group is what queued while the previous commit ran (and, once batches
// have been arriving together, what joined within a burst: gather), so a
// host that calls one at a time gets one batch per commit, as before, and
// never waits. With it, a leader first waits out the linger (linger).
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
//
// Pipelined batches (ABI 1.5, Batch.Pred). A partition's next batch B may
// arrive while the batch P before it is unanswered. The txn version is one
// number per partition, so B is written only in the commit that holds P's
// records, after P's, or once P was answered OK; when P was answered
// anything else B is answered RETRY unwritten (sdk.Pending.NotWritten).
// In append mode B joins the group that takes P (take: placed after it,
// the commit's txn for the partition is the highest version of its
// members), or a later group once P was answered OK. B never leads while P
// is unanswered: the queue is handed to a member that is ready (next), and
// a B that arrived first (host threads reorder) waits in the queue for P
// to join it or be answered (kick), bounded by its call's context. A
// member dropped from a group drops every member that follows it
// (dropFollowers). Upsert mode and redrive batches wait for P's answer
// before they queue (write): neither is written in P's commit.

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
	bytes int // b.PayloadBytes(), counted once: take passes over the queue under its lock
	// pred is b.Pred while the predecessor's answer is not known to the
	// queue (nil once it was answered OK); after is the member of the
	// same group that holds it, set by take. Both under queue.mu until
	// the member is taken or leads.
	pred  *sdk.Pending
	after *member
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
	// started is when the last group's leader took it (linger).
	started time.Time
	// pause is gather's sleep: time.Sleep, or a test's hook.
	pause func(time.Duration)
}

// maxGroupLinger bounds group_commit_linger: a batch waits at most this
// long more, well within any runtime's patience for a consume call.
const maxGroupLinger = 10 * time.Second

// linger is the leader's wait for group_commit_linger (d) since the last
// group started, so that the batches arriving meanwhile join this one.
// Each wait is drawn between half and one and a half of d: writers that
// started together (processes draining one backlog) would otherwise commit
// in step, every commit racing the others' (measured: a third of the
// commits lost with fixed waits). The first commit waits too. It ends
// early when ctx does; the group is then written (and fails, or not) as
// it would have been without it.
func (q *queue) linger(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	q.mu.Lock()
	if q.started.IsZero() {
		// The first commit waits too: writers started together would
		// otherwise all put their first at once.
		q.started = time.Now()
	}
	wait := time.Until(q.started.Add(d/2 + rand.N(d)))
	q.mu.Unlock()
	if wait <= 0 {
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
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

// ready reports whether m may lead a group: it follows no batch, or one
// already answered (a failure: it leads only to be answered RETRY).
func (m *member) ready() bool {
	if m.pred == nil {
		return true
	}
	answered, _ := m.pred.Answered()
	return answered
}

// settle learns the answer of m's predecessor: m.pred is cleared once it
// was answered OK; failed when it was answered anything else.
func (m *member) settle() (failed bool) {
	if m.pred == nil {
		return false
	}
	answered, ok := m.pred.Answered()
	if answered && ok {
		m.pred = nil
	}
	return answered && !ok
}

// join queues m. lead: no group is being written, m leads one now. A
// member whose predecessor is unanswered waits even then: the
// predecessor, when it comes, takes it into its group.
func (q *queue) join(m *member) (lead bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false, sdk.Retry(fmt.Errorf("the Delta sink is closing"))
	}
	if !q.leading && m.ready() {
		q.leading, m.lead = true, true
		return true, nil
	}
	q.waiting = append(q.waiting, m)
	return false, nil
}

// kick makes m, waiting in the queue, the leader when its predecessor was
// just answered and no leader is at work (one that is hands the queue on
// to it, or takes it, when done).
func (q *queue) kick(m *member) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.waiting, m)
	if q.leading || q.closed || i < 0 || !m.ready() {
		return false
	}
	q.waiting = slices.Delete(q.waiting, i, i+1)
	q.leading, m.lead = true, true
	return true
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
// maxBytes. A pipelined member whose predecessor is unanswered joins only
// the group that holds its predecessor, after it (a member that arrived
// before its predecessor is taken by a later pass); one whose predecessor
// failed is answered RETRY, unwritten. Another member of an application
// (topic partition) already in the group waits for the next one unless it
// follows the application's last member: only a chain of batches that
// follow one another shares the application's txn. Two members that follow
// the same batch (a range sent again while its first delivery still runs)
// never share a group: the later one sees the txn and is skipped as a
// replay, where in one commit both would be written.
func (q *queue) take(leader *member, maxRecords, maxBytes int) []*member {
	q.mu.Lock()
	defer q.mu.Unlock()
	group := []*member{leader}
	records, bytes := len(leader.b.Records), leader.bytes
	tail := map[string]*member{leader.appID: leader} // each application's last member
	rest := q.waiting
	for added := true; added; {
		added = false
		kept := rest[:0]
		for _, m := range rest {
			if m.settle() {
				m.answer(m.pred.NotWritten())
				continue
			}
			n, nb := len(m.b.Records), m.bytes
			last, in := tail[m.appID]
			follows := m.pred != nil && in && last.b.Self == m.pred
			if (m.pred != nil || in) && !follows || records+n > maxRecords || bytes+nb > maxBytes {
				kept = append(kept, m)
				continue
			}
			if follows {
				m.after = last
			}
			group = append(group, m)
			tail[m.appID] = m
			records, bytes = records+n, bytes+nb
			added = true
		}
		rest = kept
	}
	clear(q.waiting[len(rest):])
	q.waiting = rest
	q.grouped = len(group) > 1
	q.started = time.Now()
	return group
}

// next hands the queue to the first waiting member that may lead (ready),
// or leaves it without a leader when none waits or every one waits for a
// predecessor (which leads, or is answered, when it comes: kick).
func (q *queue) next() {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.IndexFunc(q.waiting, (*member).ready)
	if i < 0 || q.closed {
		q.leading = false
		return
	}
	m := q.waiting[i]
	q.waiting = slices.Delete(q.waiting, i, i+1)
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
	m := &member{b: b, appID: appID, bytes: b.PayloadBytes(), pred: b.Pred, wake: make(chan struct{})}
	if m.pred != nil && !t.coGroups(b) {
		if err := m.pred.Wait(ctx); err != nil {
			return err
		}
		m.pred = nil
	}
	var predDone <-chan struct{}
	if m.pred != nil {
		predDone = m.pred.Done()
	}
	lead, err := t.queue.join(m)
	if err != nil {
		return err
	}
	for !lead {
		select {
		case <-m.wake:
			lead = true
		case <-predDone:
			// No leader may be at work to see the answer: lead if none is.
			predDone = nil
			lead = t.queue.kick(m)
		case <-ctx.Done():
			if t.queue.leave(m) {
				return sdk.Retry(fmt.Errorf("consume cancelled while the batch waited for Delta table %s: %w", t.uri, ctx.Err()))
			}
			// A leader has the batch: its records are in use until it
			// answers, and its writes see the same cancellation.
			<-m.wake
			lead = true
		}
	}
	if !m.lead {
		return m.err
	}
	if m.settle() {
		// Made the leader to be told: its predecessor failed.
		m.answer(m.pred.NotWritten())
		t.queue.next()
		return m.err
	}
	t.queue.linger(ctx, t.env.opts.groupLinger)
	t.queue.gather(ctx)
	t.lead(ctx, t.queue.take(m, groupMaxRecords, t.env.opts.groupMaxBytes))
	return m.err
}

// coGroups reports whether b may be written in its predecessor's group
// commit: an append of a source partition. A merge (write_mode =
// "upsert") rewrites files by key and is not built to hold two changes of
// a partition's batches in order, and a redrive's txn is its dead-letter
// partition's: both wait for their predecessor's answer instead.
func (t *table) coGroups(b *sdk.Batch) bool {
	return t.env.opts.changes == nil && b.Redrive == nil
}

// dropFollowers answers every member that follows a member answered with
// a failure RETRY, unwritten (transitively: members are in group order, a
// predecessor before its followers), and returns the members not answered.
func dropFollowers(members []*member) []*member {
	var live []*member
	for _, m := range members {
		if !m.done && m.after != nil && m.after.done && m.after.err != nil {
			m.answer(m.b.Pred.NotWritten())
		}
		if !m.done {
			live = append(live, m)
		}
	}
	return live
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
			// A schema change the members cannot agree on: each alone,
			// a follower only after its predecessor was written.
			for _, m := range kept {
				if dropFollowers([]*member{m}) != nil {
					t.writeGroup(ctx, []*member{m})
				}
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
// cannot be filtered is answered, and so are the members that follow one
// that failed; the others are returned.
func (t *table) filter(ctx context.Context, members []*member) []*member {
	dropped := map[*member]bool{}
	for _, m := range members {
		if m.after != nil && (dropped[m.after] || m.after.done && m.after.err != nil) {
			dropped[m] = true // dropFollowers answers it
			continue
		}
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
		}
	}
	return dropFollowers(members)
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
