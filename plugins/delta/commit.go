package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// One batch's commit, in the steps table.commit takes: plan (encode the
// records, evolve the schema), write the data files, build the actions, put
// the commit. The put's outcome (outcome.go) says what happens to the data
// files and, in table.write, to the batch: OK when it landed; RETRY when it
// did not or may have; and, when another writer moved the table under a
// commit that did not land, re-base the batch on the new snapshot first.

// plan is a batch encoded and ready to be written: the encoder holding its
// rows, the schema change it makes, and what the commit records besides
// the files.
type plan struct {
	enc       *encode.Encoder
	n         added
	ev        *evolution // nil: no column added
	ignored   []encode.UnknownField
	truncated []encode.TruncatedTimestamps

	// With exactly-once, the txn action and the rejections the commit
	// records (rejections.go).
	appID      string
	appVersion int64
	info       map[string]json.RawMessage
}

// commit writes records (b.Records from some index on) as one commit. err
// is a failure before the put: nothing was committed and the batch's data
// files, if any, are deleted. Otherwise the result says whether the commit
// landed; a batch of tombstones only has nothing to commit and is landed.
func (t *table) commit(ctx context.Context, b *sdk.Batch, records []sdk.Record, appID string) (commitResult, error) {
	p, err := t.plan(b, records, appID)
	if err != nil {
		return commitResult{}, err
	}
	if p.n.empty > 0 {
		t.env.log.Info("skipped records with an empty payload", "table", t.uri, "topic", b.Topic, "skipped", p.n.empty)
	}
	if p.enc.Len() == 0 {
		// Only tombstones: nothing to commit, and nothing a replay could
		// write twice.
		t.env.stats.empty.Add(p.n.empty)
		return commitResult{outcome: landed}, nil
	}
	now := time.Now()
	files, written, err := t.writeFiles(ctx, p.enc)
	if err != nil {
		return commitResult{}, err
	}
	r := t.put(ctx, t.actions(p, files, now))
	t.settle(r, written)
	if r.outcome == landed {
		t.landed(b, p, r, files, len(records))
	}
	return r, nil
}

// plan encodes records into the table's encoder, twice when
// schema_evolution adds columns.
func (t *table) plan(b *sdk.Batch, records []sdk.Record, appID string) (*plan, error) {
	enc, err := t.encoder()
	if err != nil {
		return nil, err
	}
	base := len(b.Records) - len(records) // records is b.Records[base:]
	n, err := t.add(enc, b, records, base)
	if err != nil {
		return nil, err
	}
	var ev *evolution
	if t.env.opts.addColumns {
		if ev, err = t.evolve(enc, b); err != nil {
			enc.Reset()
			return nil, err
		}
		if ev != nil {
			// Encode the batch again against the evolved schema. The
			// records the first pass rejected stay rejected (add skips
			// them): new columns take every value of the records that
			// fitted, and refuse none the old schema accepted.
			enc.Reset()
			if enc, err = t.encoderFor(ev.md, ev.schema); err != nil {
				return nil, err
			}
			if n, err = t.add(enc, b, records, base); err != nil {
				return nil, err
			}
		}
	}
	// Read before Flush empties the encoder.
	p := &plan{enc: enc, n: n, ev: ev, ignored: enc.Unknown(), truncated: enc.Truncated()}
	if t.env.opts.exactlyOnce {
		p.appID, p.appVersion = appID, int64(b.LastOffset())
		// A replay learns from the commit what it rejected (rejections.go).
		// The rejections are final once the records are encoded.
		if p.info, err = recordedRejections(b, base); err != nil {
			return nil, err
		}
	}
	return p, nil
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

// actions is the commit of the planned batch: one add per data file, the
// batch's schema change, txn and recorded rejections.
func (t *table) actions(p *plan, files []encode.File, now time.Time) deltalog.AppendCommit {
	add := deltalog.AppendCommit{EngineInfo: engineInfo(), Now: now,
		AppID: p.appID, AppVersion: p.appVersion, Info: p.info}
	if p.ev != nil {
		add.Metadata = p.ev.md
	}
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
	// Catch up with other writers' commits before the put only while there
	// are any: alone, that read always answers not-found.
	t.alone = r.outcome == landed && !r.already && r.res.Attempts == 1 && r.res.Version == t.snap.Version+1
	return r
}

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
// wrote; nrecords is how many of the batch's records it was to hold.
func (t *table) landed(b *sdk.Batch, p *plan, r commitResult, files []encode.File, nrecords int) {
	res, st := r.res, t.env.stats
	t.snap = res.Snapshot
	if r.already {
		st.replays.Add(1)
		st.skipped.Add(int64(nrecords))
		t.env.log.Info("batch already committed to the Delta table", "table", t.uri, "topic", b.Topic,
			"last_offset", b.LastOffset(), "version", res.Version)
		return
	}
	var nrec, nbytes int64
	for _, f := range files {
		nrec += f.NumRecords
		nbytes += f.Size
	}
	t.ckpt.committed(res.Snapshot, res.Actions)
	st.commits.Add(1)
	st.files.Add(int64(len(files)))
	st.bytes.Add(nbytes)
	st.records.Add(nrec)
	st.empty.Add(p.n.empty)
	if p.n.unmatched > 0 {
		st.unmatched.Add(p.n.unmatched)
		if _, seen := st.warned.LoadOrStore(b.Topic, true); !seen {
			t.env.log.Warn("records whose fields match no column of the Delta table were written as rows of nulls; field names match column names case-sensitively",
				"table", t.uri, "topic", b.Topic, "offset", p.n.firstUnmatched, "records", p.n.unmatched)
		}
	}
	if p.ev != nil {
		t.added(p.ev, b.Topic, res.Version)
	}
	t.ignored(p.ignored, b.Topic)
	t.truncated(p.truncated, b.Topic)
	t.env.log.Debug("committed Delta table version", "table", t.uri, "version", res.Version, "topic", b.Topic,
		"records", nrec, "files", len(files), "bytes", nbytes, "attempts", res.Attempts)
}

// rebuilds bounds how often one batch is rebuilt against a newer snapshot
// after another writer changed the table's definition under it.
const rebuilds = 3

// rebase handles a commit that did not land because the table moved under
// it. again: write the batch anew (t.stale is set, so the next round reads
// the log first); otherwise err is the batch's answer (RETRY).
func (t *table) rebase(ctx context.Context, b *sdk.Batch, r commitResult, round int) (again bool, err error) {
	var replaced *deltalog.TableReplacedError
	if errors.As(r.err, &replaced) {
		return false, t.replaced(ctx, replaced)
	}
	var created *deltalog.CreateConflictError
	if errors.As(r.err, &created) {
		return false, t.createdElsewhere(created)
	}
	err = r.answer(t.uri)
	if !errors.Is(r.err, deltalog.ErrConcurrentModification) || round == rebuilds {
		return false, err
	}
	t.env.log.Info("the Delta table changed while the batch was written; rebuilding it against the new snapshot",
		"table", t.uri, "topic", b.Topic, "reason", err)
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
