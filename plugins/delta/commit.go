package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// One commit of a group of batches (group.go; a group of one when calls
// come one at a time), in the steps table.commit takes: plan (encode the
// records, evolve the schema), write the data files, build the actions, put
// the commit. The put's outcome (outcome.go) says what happens to the data
// files and, in table.writeGroup, to the batches: OK when it landed; RETRY
// when it did not or may have; and, when another writer moved the table
// under a commit that did not land, re-base the group on the new snapshot
// first.

// plan is a group encoded and ready to be written: the encoder holding its
// rows, the schema change it makes, and what the commit records besides
// the files.
type plan struct {
	enc       *encode.Encoder
	n         added
	ev        *evolution // nil: no column added
	ignored   []encode.UnknownField
	truncated []encode.TruncatedTimestamps
	up        *upsertPlan // write_mode = "upsert": the keys the group changes

	// With exactly-once, a txn action per partition (a chain's at its last
	// offset) and the rejections the commit records (rejections.go).
	apps []deltalog.App
	info map[string]json.RawMessage
}

// errSplit is plan's answer for a group whose members call for a schema
// change they cannot agree on (schema_evolution): writeGroup writes each
// member alone, so that only the one at fault fails.
var errSplit = errors.New("delta: the group is written one batch at a time")

// commit writes the members' pending records as one commit. A member whose
// records cannot be written is answered (FATAL) and left out: kept are the
// members the commit is for. err is a failure before the put: nothing was
// committed and the data files, if any, are deleted. Otherwise the result
// says whether the commit landed; a group of tombstones only (or with no
// member left) has nothing to commit and is landed.
func (t *table) commit(ctx context.Context, members []*member) (r commitResult, kept []*member, err error) {
	p, members, err := t.plan(members)
	if err != nil {
		return commitResult{}, members, err
	}
	if len(members) == 0 {
		return commitResult{outcome: landed}, nil, nil // each answered by plan
	}
	if p.n.empty > 0 {
		t.env.log.Info("skipped records with an empty payload", "table", t.uri, "topic", topics(members), "skipped", p.n.empty)
	}
	if p.up != nil && !t.snap.IsNew() {
		r, err := t.commitUpsert(ctx, members, p)
		return r, members, err
	}
	if p.enc.Len() == 0 {
		// Only tombstones: nothing to commit, and nothing a replay could
		// write twice.
		t.env.stats.empty.Add(p.n.empty)
		return commitResult{outcome: landed}, members, nil
	}
	now := time.Now()
	files, written, err := t.writeFiles(ctx, p.enc)
	if err != nil {
		return commitResult{}, members, err
	}
	r = t.put(ctx, t.actions(p, files, now))
	t.settle(r, written)
	if r.outcome == landed {
		t.landed(members, p, r, files)
	}
	return r, members, nil
}

// plan encodes the members' records into the table's encoder. A member
// whose records cannot be written is answered with its error and the
// others are planned again without it; kept are the members the plan
// holds.
func (t *table) plan(members []*member) (p *plan, kept []*member, err error) {
	for len(members) > 0 {
		p, bad, err := t.planOnce(members)
		if bad == nil {
			return p, members, err
		}
		// Its rejections need no second look: the others' were decided
		// against the same schema and stay as they are.
		// The members that follow it are not written either.
		bad.answer(err)
		members = dropFollowers(members)
	}
	return nil, nil, nil
}

// planOnce encodes the members' records into the table's encoder, twice
// when schema_evolution adds columns. bad is the member that failed, when
// the error is its records'.
func (t *table) planOnce(members []*member) (p *plan, bad *member, err error) {
	enc, err := t.encoder()
	if err != nil {
		return nil, nil, err
	}
	n, up, bad, err := t.addAll(enc, members)
	if err != nil {
		return nil, bad, err
	}
	var ev *evolution
	if t.env.opts.addColumns {
		if ev, err = t.evolve(enc, topics(members), t.columnHint(members)); err != nil {
			enc.Reset()
			if len(members) > 1 {
				return nil, nil, errSplit
			}
			return nil, nil, err
		}
		if ev != nil {
			// Encode the group again against the evolved schema. The
			// records the first pass rejected stay rejected (add skips
			// them): new columns take every value of the records that
			// fitted, and refuse none the old schema accepted.
			enc.Reset()
			if enc, err = t.encoderFor(ev.md, ev.schema); err != nil {
				return nil, nil, err
			}
			if n, up, bad, err = t.addAll(enc, members); err != nil {
				return nil, bad, err
			}
		}
	}
	// Read before Flush empties the encoder.
	p = &plan{enc: enc, n: n, ev: ev, ignored: enc.Unknown(), truncated: enc.Truncated(), up: up}
	if t.env.opts.exactlyOnce {
		for _, m := range members {
			// A chain of a partition's pipelined batches (group.go) is one
			// application: one txn, at its last batch's version.
			v := int64(lastSeq(m.b))
			if i := slices.IndexFunc(p.apps, func(a deltalog.App) bool { return a.ID == m.appID }); i >= 0 {
				p.apps[i].Version = max(p.apps[i].Version, v)
				continue
			}
			p.apps = append(p.apps, deltalog.App{ID: m.appID, Version: v})
		}
		// A replay learns from the commit what it rejected (rejections.go).
		// The rejections are final once the records are encoded.
		if p.info, err = recordedRejections(members); err != nil {
			enc.Reset()
			return nil, nil, err
		}
	}
	return p, nil, nil
}

// addAll encodes every member's pending records into enc, one after the
// other, or with write_mode = "upsert" their changes (addChanges; up is
// what they change). On an error, bad is the member whose record failed
// and enc is left empty.
func (t *table) addAll(enc *encode.Encoder, members []*member) (sum added, up *upsertPlan, bad *member, err error) {
	if t.env.opts.changes != nil {
		sum, up, bad, err = t.addChanges(enc, members)
		if err != nil {
			enc.Reset()
		}
		return sum, up, bad, err
	}
	for _, m := range members {
		n, err := t.add(enc, m.b, m.records, m.base())
		if err != nil {
			enc.Reset()
			return sum, nil, m, err
		}
		if sum.unmatched == 0 && n.unmatched > 0 {
			sum.firstUnmatched, sum.unmatchedTopic = n.firstUnmatched, m.b.Topic
		}
		sum.empty += n.empty
		sum.unmatched += n.unmatched
	}
	return sum, nil, nil, nil
}

// writeFiles stores the encoded data files. Each file starts uploading as
// soon as it is encoded. The check that the log still holds our snapshot's
// head (a table replaced under us) comes after them, in CommitAppend: run
// alongside, it proved only that the log was ours when the batch began, and
// a table replaced while the files uploaded got our commit past its end
// (TestTableReplacedWhileABatchUploadsIsNoticed). written are the files
// whose upload began; on failure they are deleted here.
func (t *table) writeFiles(ctx context.Context, enc *encode.Encoder) (files []encode.File, written []string, err error) {
	up := newUploads(ctx, t.store)
	files, err = enc.Flush(up.open)
	written, uerr := up.wait()
	if err == nil && uerr != nil {
		err = uerr
	}
	if err != nil {
		t.discard(written, "upload failed")
		if uerr == nil {
			return nil, nil, sdk.Retry(fmt.Errorf("Storage error: Failed to write to Delta writer: %w", err))
		}
		return nil, nil, sdk.Retry(fmt.Errorf("Storage error: Failed to flush and commit to %s: %w", t.uri, err))
	}
	return files, written, nil
}

// actions is the commit of the planned group: one add per data file, the
// group's schema change, a txn per member and the recorded rejections.
func (t *table) actions(p *plan, files []encode.File, now time.Time) deltalog.AppendCommit {
	add := deltalog.AppendCommit{EngineInfo: engineInfo(), Now: now, Info: p.info}
	if len(p.apps) > 0 {
		add.AppID, add.AppVersion, add.Apps = p.apps[0].ID, p.apps[0].Version, p.apps[1:]
	}
	if p.ev != nil {
		add.Metadata = p.ev.md
	}
	// An upsert's first commit creates the table with its rows appended;
	// a table created meanwhile may hold its keys, so the group is merged
	// into it instead (rebase).
	add.NoAdopt = p.up != nil
	for _, f := range files {
		add.Files = append(add.Files, deltalog.DataFile{Path: f.Path, PartitionValues: f.PartitionValues, Size: f.Size,
			ModificationTime: now.UnixMilli(), Stats: f.Stats})
	}
	return add
}

// put commits add on top of the table's snapshot and decides its outcome.
func (t *table) put(ctx context.Context, add deltalog.AppendCommit) commitResult {
	res, err := deltalog.CommitAppend(ctx, t.store, t.snap, add, &deltalog.CommitOptions{
		LostRace: func(int64) { t.env.stats.conflicts.Add(1) }, SkipCatchUp: t.alone})
	r := decide(res, err)
	t.noteWriters(r.outcome == landed && !r.already && r.res.Attempts == 1 && r.res.Version == t.snap.Version+1, time.Now())
	return r
}

// noteWriters decides whether the next commit catches up with other
// writers' commits before its put: only while there are any, since alone
// that read always answers not-found. solo: this commit went in right
// after our previous one at the first try. That alone does not show that
// nobody else writes: writers that space their commits
// (group_commit_linger) often commit twice between two of another's, and
// the skipped read then makes the next put lose for certain. Measured with
// three processes on one MinIO table (docs/delta.md, "Many writers of one
// table"): 4.9-11 % of commits lost with a 500 ms linger and 18 % with
// 300 ms, against 3.6-4.9 % and 2.8-2.9 % with aloneAfter. So a writer is
// alone only once no other writer's commit was seen for aloneAfter.
func (t *table) noteWriters(solo bool, now time.Time) {
	if !solo {
		t.crowded = now
	}
	t.alone = now.Sub(t.crowded) >= aloneAfter
}

// aloneAfter is how long a writer sees no other writer's commit before it
// skips the catch-up read: long against any writer's commit interval
// (group_commit_linger is at most 10 s), short against a sink's life. A
// writer alone pays one not-found read per commit for that long after
// another writer's last commit.
const aloneAfter = 30 * time.Second

// settle does with the batch's data files what the outcome allows: a
// commit that did not land, or that found the batch committed by an
// earlier attempt, references none of them; one that may have landed may
// reference all of them.
func (t *table) settle(r commitResult, written []string) {
	switch {
	case r.outcome == notLanded:
		t.discard(written, "commit aborted")
	case r.outcome != landed:
		t.env.log.Warn("commit failed; data files left in place in case the commit landed", "table", t.uri, "files", len(written))
	case r.already:
		// Another attempt of this batch committed first (e.g. one whose
		// answer was lost): the table has the records, ours are spare.
		t.discard(written, "batch already committed")
	}
}

// landed takes the landed commit's snapshot and counts and logs what it
// wrote for the members.
func (t *table) landed(members []*member, p *plan, r commitResult, files []encode.File) {
	res, st := r.res, t.env.stats
	t.snap = res.Snapshot
	topic := topics(members)
	if r.already {
		for _, m := range members {
			st.replays.Add(1)
			st.skipped.Add(int64(len(m.records)))
		}
		t.env.log.Info("batch already committed to the Delta table", "table", t.uri, "topic", topic,
			"last_offset", members[0].b.LastOffset(), "batches", len(members), "version", res.Version)
		return
	}
	var nrec, nbytes int64
	for _, f := range files {
		nrec += f.NumRecords
		nbytes += f.Size
	}
	t.ckpt.committed(res.Snapshot, res.Actions)
	st.commits.Add(1)
	st.commitBatches.Add(int64(len(members)))
	if len(members) > 1 {
		st.grouped.Add(1)
	}
	st.files.Add(int64(len(files)))
	st.bytes.Add(nbytes)
	st.records.Add(nrec)
	v := res.Version
	t.env.commits.Set(sdk.Commit{Table: t.uri, Version: &v, Records: nrec, Time: time.Now().UTC()})
	st.empty.Add(p.n.empty)
	if p.n.unmatched > 0 {
		st.unmatched.Add(p.n.unmatched)
		if _, seen := st.warned.LoadOrStore(p.n.unmatchedTopic, true); !seen {
			t.env.log.Warn("records whose fields match no column of the Delta table were written as rows of nulls; field names match column names case-sensitively",
				"table", t.uri, "topic", p.n.unmatchedTopic, "offset", p.n.firstUnmatched, "records", p.n.unmatched)
		}
	}
	if p.ev != nil {
		t.added(p.ev, topic, res.Version)
	}
	t.ignored(p.ignored, topic)
	t.truncated(p.truncated, topic)
	t.env.log.Debug("committed Delta table version", "table", t.uri, "version", res.Version, "topic", topic,
		"batches", len(members), "records", nrec, "files", len(files), "bytes", nbytes, "attempts", res.Attempts)
}

// rebuilds bounds how often one group is rebuilt against a newer snapshot
// after another writer changed the table's definition under it.
const rebuilds = 3

// rebase handles a commit that did not land because the table moved under
// it. again: write the group anew (t.stale is set, so the next round reads
// the log first); otherwise err is every member's answer (RETRY). topic
// names the group's topics, for the log.
func (t *table) rebase(ctx context.Context, topic string, r commitResult, round int) (again bool, err error) {
	var replaced *deltalog.TableReplacedError
	if errors.As(r.err, &replaced) {
		return false, t.replaced(ctx, replaced)
	}
	var created *deltalog.CreateConflictError
	if errors.As(r.err, &created) {
		return false, t.createdElsewhere(created)
	}
	err = r.answer(t.uri)
	limit := rebuilds
	if t.env.opts.changes != nil {
		limit = upsertRounds
	}
	if !errors.Is(r.err, deltalog.ErrConcurrentModification) || round == limit {
		return false, err
	}
	t.env.log.Info("the Delta table changed while the batch was written; rebuilding it against the new snapshot",
		"table", t.uri, "topic", topic, "reason", err)
	return true, nil
}

// discard deletes data files that no commit references, best effort.
func (t *table) discard(paths []string, why string) {
	for _, p := range paths {
		if err := t.store.Delete(context.Background(), p); err != nil {
			t.env.log.Warn("could not delete an uncommitted data file", "table", t.uri, "file", p, "reason", why, "error", err)
		}
	}
}
