package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
	"github.com/picomq/heavy-sinks/shared/changes"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// write_mode = "upsert": copy-on-write changes by key (docs/delta.md,
// Upserts and deletes).
//
// A group's pending records are read as changes (shared/changes); a record
// that is no change is rejected as any record error is. Each key's last
// change in the group wins; its upsert's row is encoded like an appended
// record (new files, as today). The live files that may hold a changed key
// (by partition values and add.stats min/max of the key columns) are read,
// and each that holds one is written anew without those rows
// (encode.Keys.Filter). One commit removes the files rewritten, adds the
// survivors' files and the new rows' files, and records the txn actions
// (deltalog.CommitMerge): a replay finds its offsets recorded and applies
// nothing twice. A race lost to a writer that removed a rewritten file, or
// added one that may hold a changed key, re-plans the group from the new
// snapshot (rebase); other winners move it to the next version.
//
// Why copy-on-write, not deletion vectors: a deletion vector needs the
// table at reader version 3 / writer version 7 with the deletionVectors
// feature, which every reader of the table must then support, and
// RoaringBitmap files written beside the data; copy-on-write keeps the
// table readable by anything that reads a plain Delta table.

// upsertRounds bounds how often one group is planned again after a lost
// race that touched what it read (a busy table with another upsert writer
// whose files span every key).
const upsertRounds = 10

// upsertPlan is what a group changes: every changed key (upserts replace
// their key's row, deletes remove it), by key text (encode.Keys).
type upsertPlan struct {
	drop    map[string]bool
	byCol   [][]string // per key column: the changed keys' texts, sorted, unique
	upserts int
	deletes int
}

// upsertKeys returns the key renderer for the snapshot's schema, checking
// the key columns (FATAL: a table that cannot take the keys).
func (t *table) upsertKeys() (*encode.Keys, error) {
	k, err := t.keysOf()
	if err != nil {
		return nil, sdk.Fatal(err)
	}
	return k, nil
}

// keysOf is upsertKeys with the plain error, for checkKeys.
func (t *table) keysOf() (*encode.Keys, error) {
	if t.keys != nil && t.keysFor == t.snap.Metadata.SchemaString {
		return t.keys, nil
	}
	if m := t.snap.Metadata.Configuration["delta.columnMapping.mode"]; m != "" && m != "none" {
		return nil, fmt.Errorf("plugin_config key %q = %q: Delta table %s uses column mapping, which upserts do not support", keyWriteMode, writeUpsert, t.uri)
	}
	if t.snap.Metadata.Configuration["delta.appendOnly"] == "true" {
		return nil, fmt.Errorf("plugin_config key %q = %q: Delta table %s is append-only (delta.appendOnly = true): rows cannot be replaced or deleted", keyWriteMode, writeUpsert, t.uri)
	}
	k, err := encode.NewKeys(t.snap.Schema, t.env.opts.changes.KeyColumns)
	if err != nil {
		return nil, fmt.Errorf("plugin_config key %q: Delta table %s: %w", keyKeyColumns, t.uri, err)
	}
	t.keys, t.keysFor = k, t.snap.Metadata.SchemaString
	return k, nil
}

// checkKeys checks, at open, that the table (or the one create_table
// makes) can take the key columns: BAD_CONFIG when not.
func (t *table) checkKeys() error {
	if t.env.opts.changes == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.snap.IsNew() && t.env.opts.create.fromBatch() {
		return nil // typed by the first batch: checked then
	}
	if _, err := t.keysOf(); err != nil {
		return sdk.BadConfig(err)
	}
	return nil
}

// change is one pending record read as a change.
type change struct {
	m   *member
	idx int // in m.b.Records
	ch  changes.Change
	key string // encode.Keys text
}

// addChanges reads the members' pending records as changes and encodes
// the rows of each key's last upsert into enc. Records that are no change,
// or whose key or row does not fit the table, are rejected; when a key's
// last change is rejected, its change before that wins. bad is the member
// whose record failed when the host takes no rejections.
func (t *table) addChanges(enc *encode.Encoder, members []*member) (n added, up *upsertPlan, bad *member, err error) {
	keys, err := t.upsertKeys()
	if err != nil {
		return n, nil, nil, err
	}
	cfg := t.env.opts.changes
	total := 0
	for _, m := range members {
		total += len(m.records)
	}
	all := make([]change, 0, total)
	for _, m := range members {
		for i := range m.records {
			idx := m.base() + i
			if m.b.Rejected(idx) {
				continue
			}
			r := &m.records[i]
			ch, err := cfg.Parse(r.Payload, r.Key)
			var key string
			if err == nil {
				key, err = t.keyOf(keys, ch.Key)
			}
			if err != nil {
				if rerr := t.rejectChange(m, idx, err); rerr != nil {
					return n, nil, m, rerr
				}
				continue
			}
			all = append(all, change{m: m, idx: idx, ch: ch, key: key})
		}
	}
	for {
		// The last change of each key, compared in the key columns'
		// types (not as JSON values: a timestamp written in two time
		// zones is one key).
		last := make(map[string]int, len(all))
		for i := range all {
			last[all[i].key] = i
		}
		rejected := map[int]bool{}
		for i := range all {
			c := &all[i]
			if last[c.key] != i || c.ch.Op != changes.Upsert {
				continue
			}
			r := c.m.b.Records[c.idx]
			r.Payload = c.ch.Row
			if err := t.addRecord(enc, c.m.b, &r); err != nil {
				reason, rerr, ok := rejectable(c.m.b.Topic, c.idx, c.ch.Row, err)
				if !ok || !c.m.b.Reject(c.idx, reason, rerr) {
					enc.Reset()
					return n, nil, c.m, recordError(c.m.b.Topic, c.idx, c.ch.Row, err)
				}
				// Rejected (a failed record leaves nothing in enc): the
				// key's change before it wins, in the next pass. Passes are
				// as many as the longest run of rejected last changes of
				// one key.
				rejected[i] = true
				continue
			}
			if !enc.Matched() {
				if n.unmatched == 0 {
					n.firstUnmatched, n.unmatchedTopic = c.m.b.Records[c.idx].Offset, c.m.b.Topic
				}
				n.unmatched++
			}
		}
		if len(rejected) > 0 {
			k := 0
			for i := range all {
				if !rejected[i] {
					all[k] = all[i]
					k++
				}
			}
			all = all[:k]
			enc.Reset()
			n = added{}
			continue
		}
		up = &upsertPlan{drop: make(map[string]bool, len(last)), byCol: make([][]string, len(cfg.KeyColumns))}
		for key, i := range last {
			up.drop[key] = true
			if all[i].ch.Op == changes.Upsert {
				up.upserts++
			} else {
				up.deletes++
			}
		}
		for c := range up.byCol {
			seen := map[string]bool{}
			for key := range up.drop {
				v := keyPart(key, c)
				if !seen[v] {
					seen[v] = true
					up.byCol[c] = append(up.byCol[c], v)
				}
			}
			sort.Strings(up.byCol[c])
		}
		return n, up, nil, nil
	}
}

// keyPart is key column c's text in a key text ("len:text" per column).
func keyPart(key string, c int) string {
	for {
		colon := strings.IndexByte(key, ':')
		l, _ := strconv.Atoi(key[:colon])
		if c == 0 {
			return key[colon+1 : colon+1+l]
		}
		key, c = key[colon+1+l:], c-1
	}
}

// rejectChange rejects record idx of m, which is no change or whose key
// does not fit: nil when the host took the rejection, else the batch's
// error (FATAL).
func (t *table) rejectChange(m *member, idx int, err error) error {
	r := &m.b.Records[idx]
	var re *encode.RecordError
	if errors.As(err, &re) {
		reason, rerr, ok := rejectable(m.b.Topic, idx, r.Payload, err)
		if ok && m.b.Reject(idx, reason, rerr) {
			return nil
		}
		return recordError(m.b.Topic, idx, r.Payload, err)
	}
	rerr := changeError(m.b.Topic, r.Offset, idx, t.env.opts.changes, err)
	var ce *changes.Error
	if !errors.As(err, &ce) {
		return sdk.Fatal(rerr)
	}
	if m.b.Reject(idx, sdk.RejectValue, rerr) {
		return nil
	}
	return sdk.Fatal(rerr)
}

// changeError is the message of a record that is no change.
func changeError(topic string, offset uint64, idx int, cfg *changes.Config, err error) error {
	return fmt.Errorf("Invalid record value: topic %q offset %d (record %d of the batch) is not a change of key (%s): %v",
		topic, offset, idx, strings.Join(cfg.KeyColumns, ", "), err)
}

// keyOf renders a change's key (Keys.Of). An empty string in a string or
// binary key column that is a partition column is no key: Delta holds an
// empty partition value as null, so the row would be written with a null
// key that no later change or delete could reach.
func (t *table) keyOf(keys *encode.Keys, values [][]byte) (string, error) {
	for c, name := range t.env.opts.changes.KeyColumns {
		if !slices.Contains(t.snap.PartitionColumns, name) || string(bytes.TrimSpace(values[c])) != `""` {
			continue
		}
		if typ := keys.Types()[c]; typ == deltalog.TypeString || typ == deltalog.TypeBinary {
			return "", &changes.Error{Reason: fmt.Sprintf("key column %q is an empty string, which its partition column holds as null: "+
				"no later change could reach the row", name)}
		}
	}
	return keys.Of(values)
}

// checkChange decides a replayed record's rejection again (table.recheck)
// the way addChanges decides it: nil when it is a change that fits.
func (t *table) checkChange(enc *encode.Encoder, b *sdk.Batch, r *sdk.Record) error {
	keys, err := t.upsertKeys()
	if err != nil {
		return err
	}
	ch, err := t.env.opts.changes.Parse(r.Payload, r.Key)
	if err == nil {
		_, err = t.keyOf(keys, ch.Key)
	}
	if err != nil {
		return err
	}
	if ch.Op == changes.Upsert {
		rec := *r
		rec.Payload = ch.Row
		return t.addRecord(enc, b, &rec)
	}
	return nil
}

// mayHold reports whether file a may hold one of the plan's keys: by its
// partition values (a key column that is a partition column) and by its
// add.stats min/max of integer and string key columns. A file without
// stats may hold any key.
func (t *table) mayHold(up *upsertPlan, keys *encode.Keys) func(*deltalog.Add) bool {
	cols := t.env.opts.changes.KeyColumns
	types := keys.Types()
	return func(a *deltalog.Add) bool {
		var st *fileStats
		for c, name := range cols {
			if v, ok := a.PartitionValues[name]; ok {
				s, ok, err := keys.PartitionText(c, v)
				if err != nil {
					continue // unreadable here: the file may hold any key
				}
				if !ok {
					return false // a null key column holds no key
				}
				if _, found := slices.BinarySearch(up.byCol[c], s); !found {
					return false
				}
				continue
			}
			if st == nil {
				st = parseFileStats(a.Stats)
			}
			lo, hi := st.MinValues[name], st.MaxValues[name]
			if lo == nil || hi == nil {
				continue
			}
			if !inRange(types[c], up.byCol[c], lo, hi) {
				return false
			}
		}
		return true
	}
}

type fileStats struct {
	MinValues map[string]json.RawMessage `json:"minValues"`
	MaxValues map[string]json.RawMessage `json:"maxValues"`
}

func parseFileStats(s string) *fileStats {
	st := &fileStats{}
	if s != "" {
		_ = json.Unmarshal([]byte(s), st) // unreadable stats prune nothing
	}
	return st
}

// inRange reports whether any of the sorted key texts may lie within a
// file's min and max (JSON, as add.stats holds them). Only integer and
// string columns are compared; others may always hold a key.
func inRange(t deltalog.DataType, sorted []string, lo, hi json.RawMessage) bool {
	switch t {
	case deltalog.TypeByte, deltalog.TypeShort, deltalog.TypeInteger, deltalog.TypeLong:
		min, err1 := strconv.ParseInt(string(lo), 10, 64)
		max, err2 := strconv.ParseInt(string(hi), 10, 64)
		if err1 != nil || err2 != nil {
			return true
		}
		// Texts of integers sort as strings, not numbers: scan them.
		for _, s := range sorted {
			if v, err := strconv.ParseInt(s, 10, 64); err != nil || (v >= min && v <= max) {
				return true
			}
		}
		return false
	case deltalog.TypeString:
		var min, max string
		if json.Unmarshal(lo, &min) != nil || json.Unmarshal(hi, &max) != nil {
			return true
		}
		// The first key at or above min decides: max may be a truncated
		// prefix, so a key that starts with it may be in the file too.
		i := sort.SearchStrings(sorted, min)
		return i < len(sorted) && (sorted[i] <= max || strings.HasPrefix(sorted[i], max))
	}
	return true
}

// fileState returns the table's live files at t.snap's version.
func (t *table) fileState(ctx context.Context) (*deltalog.State, error) {
	if t.files != nil && t.filesID == t.snap.Metadata.ID && t.files.Version <= t.snap.Version {
		if t.files.Version < t.snap.Version {
			// The commits in between may be cleaned up behind a
			// checkpoint: then load afresh, below.
			if _, err := t.files.Update(ctx, t.store, t.snap.Version); err != nil && ctx.Err() != nil {
				return nil, err
			}
		}
		if t.files.Version == t.snap.Version {
			return t.files, nil
		}
	}
	st, err := deltalog.LoadStateAt(ctx, t.store, t.snap.Version, &deltalog.LoadOptions{Logger: t.env.log})
	if err != nil {
		t.files = nil
		return nil, err
	}
	t.files, t.filesID = st, t.snap.Metadata.ID
	return st, nil
}

// rewritten are the files a merge rewrote: the ones it removes and the
// survivors' files it adds.
type rewritten struct {
	removed []*deltalog.Add
	added   []deltalog.DataFile
	written []string // paths put, to delete unless the commit may have landed
	read    int      // files read
	dropped int64    // rows dropped
}

// rewrite reads the live files that may hold a changed key and writes
// each that holds one anew without those rows.
func (t *table) rewrite(ctx context.Context, up *upsertPlan, keys *encode.Keys, now time.Time) (rw rewritten, err error) {
	st, err := t.fileState(ctx)
	if err != nil {
		return rw, sdk.Retry(fmt.Errorf("Failed to load Delta table %s: reading its file list: %w", t.uri, err))
	}
	may := t.mayHold(up, keys)
	var cands []*deltalog.Add
	for a := range st.Files() {
		if !may(a) {
			continue
		}
		if len(a.DeletionVector) > 0 || a.BaseRowID != nil {
			return rw, sdk.Fatalf("Delta table %s: file %s has a deletion vector or row ids, which upserts cannot rewrite", t.uri, a.Path)
		}
		cands = append(cands, a)
	}
	// Files are read, filtered and written maxUploads at a time: a
	// commit's wall time is mostly round trips (and fsyncs on file://).
	type one struct {
		add     *deltalog.Add
		read    bool
		dropped int64
		file    *deltalog.DataFile // nil: every row changed, or small
		path    string             // written
		small   *survivors         // kept to be combined
	}
	results := make([]one, len(cands))
	slots := make(chan struct{}, maxUploads)
	var g sdk.Group
	for i, a := range cands {
		slots <- struct{}{}
		g.Go(func() error {
			defer func() { <-slots }()
			r := &results[i]
			r.add = a
			return t.rewriteOne(ctx, a, up, keys, now, func(read bool, dropped int64, path string, f *deltalog.DataFile, small *survivors) {
				r.read, r.dropped, r.path, r.file, r.small = read, dropped, path, f, small
			})
		})
	}
	err = g.Wait()
	var smalls []*survivors
	for _, r := range results {
		if r.small != nil {
			smalls = append(smalls, r.small)
		}
		if r.read {
			rw.read++
		}
		if r.path != "" {
			rw.written = append(rw.written, r.path)
		}
		if r.dropped > 0 {
			rw.removed = append(rw.removed, r.add)
			rw.dropped += r.dropped
			if r.file != nil {
				rw.added = append(rw.added, *r.file)
			}
		}
	}
	if err == nil {
		err = t.combineSurvivors(ctx, smalls, now, &rw)
	}
	if err != nil {
		t.discard(rw.written, "rewrite failed")
		return rewritten{}, err
	}
	return rw, nil
}

// survivors is a small rewritten file (under half the target size), kept
// in memory to be combined with the others of its partition value and
// Parquet schema: without that, every merge would leave one file per file
// it rewrote plus its new rows' file, and a table whose keys change at
// random would gain a file with every commit (compaction cannot help: a
// busy writer keeps rewriting its inputs).
type survivors struct {
	pv     deltalog.PartitionValues
	schema string // encode.SchemaKey
	data   []byte
	footer *format.FileMetaData
	stats  string
}

// upsertTarget is the size the survivors of small files are combined up
// to: compaction_target_file_size (its default when compaction is off).
func (t *table) upsertTarget() int64 {
	if t.env.compact != nil {
		return t.env.compact.target
	}
	return 64 << 20
}

// combineSurvivors writes the small survivors, those of one partition
// value and schema bin-packed up to upsertTarget into one file each.
func (t *table) combineSurvivors(ctx context.Context, smalls []*survivors, now time.Time, rw *rewritten) error {
	groups := map[string][]*survivors{}
	var order []string
	for _, s := range smalls {
		k := partitionKey(s.pv) + "\x03" + s.schema
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], s)
	}
	target := t.upsertTarget()
	for _, k := range order {
		var bin []*survivors
		var size int64
		flush := func() error {
			if len(bin) == 0 {
				return nil
			}
			defer func() { bin, size = nil, 0 }()
			data, stats := bin[0].data, bin[0].stats
			if len(bin) > 1 {
				parts, footers, st := make([][]byte, len(bin)), make([]*format.FileMetaData, len(bin)), make([]string, len(bin))
				for i, s := range bin {
					parts[i], footers[i], st[i] = s.data, s.footer, s.stats
				}
				m, out, _, err := combineFiles(t.snap, st, parts, footers, engineInfo())
				if err != nil {
					return sdk.Fatalf("Delta table %s: combining rewritten files: %v", t.uri, err)
				}
				data, stats = out, m.Stats
			}
			return t.putRewritten(ctx, bin[0].pv, data, stats, now, rw)
		}
		for _, s := range groups[k] {
			if len(bin) > 0 && size+int64(len(s.data)) > target {
				if err := flush(); err != nil {
					return err
				}
			}
			bin, size = append(bin, s), size+int64(len(s.data))
		}
		if err := flush(); err != nil {
			return err
		}
	}
	return nil
}

// putRewritten stores one rewritten file and adds it to rw.
func (t *table) putRewritten(ctx context.Context, pv deltalog.PartitionValues, data []byte, stats string, now time.Time, rw *rewritten) error {
	dir, err := deltalog.PartitionDir(t.snap.PartitionColumns, pv)
	if err != nil {
		return sdk.Fatalf("Delta table %s: %v", t.uri, err)
	}
	path := dir + encode.DataFileName(0)
	rw.written = append(rw.written, path)
	if err := t.store.Put(ctx, path, data); err != nil {
		return sdk.Retry(fmt.Errorf("Storage error: Failed to write to Delta writer: %s: %w", path, err))
	}
	rw.added = append(rw.added, deltalog.DataFile{Path: path, PartitionValues: pv, Size: int64(len(data)),
		ModificationTime: now.UnixMilli(), Stats: stats})
	return nil
}

// rewriteOne reads file a and, when it holds a changed key, writes it anew
// without those rows; done reports what it did (path: the file written,
// even when its put failed).
func (t *table) rewriteOne(ctx context.Context, a *deltalog.Add, up *upsertPlan, keys *encode.Keys, now time.Time,
	done func(read bool, dropped int64, path string, f *deltalog.DataFile, small *survivors)) error {
	p, err := deltalog.FilePath(a.Path)
	if err != nil {
		return sdk.Fatalf("Delta table %s: %v", t.uri, err)
	}
	data, err := t.store.Get(ctx, p)
	if err != nil {
		return sdk.Retry(fmt.Errorf("Storage error: reading %s of Delta table %s: %w", p, t.uri, err))
	}
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return sdk.Fatalf("Delta table %s: data file %s: %v", t.uri, p, err)
	}
	coll, err := deltalog.NewStatsCollector(t.snap)
	if err != nil {
		return sdk.Fatalf("Delta table %s: %v", t.uri, err)
	}
	var buf bytes.Buffer
	f, err := keys.Filter(&buf, pf, a.PartitionValues, up.drop, coll, engineInfo())
	if err != nil {
		return sdk.Fatalf("Delta table %s: rewriting data file %s: %v", t.uri, p, err)
	}
	if f.Dropped == 0 || f.NumRecords == 0 {
		done(true, f.Dropped, "", nil, nil) // untouched, or every row changed: removed, nothing to add
		return nil
	}
	if f.Size < t.upsertTarget()/2 {
		out := bytes.Clone(buf.Bytes())
		md, err := ckptfile.DecodeFooter(out)
		if err != nil {
			return sdk.Fatalf("Delta table %s: rewriting data file %s: %v", t.uri, p, err)
		}
		done(true, f.Dropped, "", nil, &survivors{pv: a.PartitionValues, schema: encode.SchemaKey(md), data: out, footer: md, stats: f.Stats})
		return nil
	}
	dir, err := deltalog.PartitionDir(t.snap.PartitionColumns, a.PartitionValues)
	if err != nil {
		return sdk.Fatalf("Delta table %s: %v", t.uri, err)
	}
	path := dir + encode.DataFileName(0)
	if err := t.store.Put(ctx, path, buf.Bytes()); err != nil {
		done(true, 0, path, nil, nil)
		return sdk.Retry(fmt.Errorf("Storage error: Failed to write to Delta writer: %s: %w", path, err))
	}
	done(true, f.Dropped, path, &deltalog.DataFile{Path: path, PartitionValues: a.PartitionValues, Size: f.Size,
		ModificationTime: now.UnixMilli(), Stats: f.Stats}, nil)
	return nil
}

// commitUpsert is commit's upsert half after plan: rewrite the files that
// hold changed keys, write the new rows, and commit both with the txn
// actions as one merge.
func (t *table) commitUpsert(ctx context.Context, members []*member, p *plan) (commitResult, error) {
	now := time.Now()
	keys, err := t.upsertKeys()
	if err != nil {
		p.enc.Reset()
		return commitResult{}, err
	}
	rw, err := t.rewrite(ctx, p.up, keys, now)
	if err != nil {
		p.enc.Reset()
		return commitResult{}, err
	}
	var files []encode.File
	var written []string
	if p.enc.Len() > 0 {
		if files, written, err = t.writeFiles(ctx, p.enc); err != nil {
			t.discard(rw.written, "upload failed")
			return commitResult{}, err
		}
	} else {
		p.enc.Reset()
	}
	add := t.actions(p, files, now)
	add.Files = append(add.Files, rw.added...)
	res, err := deltalog.CommitMerge(ctx, t.store, t.snap, deltalog.Merge{Append: add, Removed: rw.removed, MayHold: t.mayHold(p.up, keys)},
		&deltalog.CommitOptions{LostRace: func(int64) { t.env.stats.conflicts.Add(1) }})
	r := decide(res, err)
	t.alone = false
	t.settle(r, append(written, rw.written...))
	if r.outcome == landed {
		t.landed(members, p, r, files)
		if !r.already {
			st := t.env.stats
			st.upserts.Add(int64(p.up.upserts))
			st.deletes.Add(int64(p.up.deletes))
			st.rewrittenFiles.Add(int64(len(rw.removed)))
			st.readFiles.Add(int64(rw.read))
			st.droppedRows.Add(rw.dropped)
			t.env.log.Debug("merged changes into the Delta table", "table", t.uri, "version", r.res.Version,
				"upserts", p.up.upserts, "deletes", p.up.deletes, "files_read", rw.read, "files_rewritten", len(rw.removed),
				"rows_dropped", rw.dropped)
		}
	}
	return r, nil
}
