package deltalog

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"
)

// Incremental classic checkpoints: a checkpoint's cost follows what changed
// since the previous one, not the size of the table.
//
// A classic checkpoint is one Parquet file, and a Parquet file is a
// sequence of row groups, each a run of column chunks, each a run of
// self-contained pages, plus a footer that says where they are. The add
// actions of an appended table do not change from one checkpoint to the
// next, so a CheckpointCache keeps them as encoded pages:
//
//   - Add rows live in row groups of RowGroupRows adds in log order. Each
//     cached group knows the range of arrival numbers (State seq) of its
//     adds and their keys. The State records, while a cache follows it,
//     which keys it gained and which live entries it lost (fileJournal).
//   - A checkpoint encodes only the adds that arrived since the previous
//     one (one page per column) and appends those pages to the last,
//     unfilled group's column chunks: a column chunk of several pages is
//     plain Parquet (PLAIN v1 pages carry their own levels; no
//     dictionary). When the last group would exceed RowGroupRows it is
//     encoded once more in one go, with the new adds, into full groups, so
//     the file does not keep many small pages (each add is encoded about
//     twice in its life). It is also encoded again after maxPageSets
//     appends, which bounds its pages per column for readers and costs at
//     most RowGroupRows/maxPageSets adds per checkpoint on average.
//   - A group that lost an add (a remove, or an add replacing it) is
//     encoded again from the adds it still holds, with its neighbours when
//     they changed too. Too many small groups left by removes: all are
//     encoded again.
//   - protocol, metaData, txns and domainMetadata form the first row group
//     and the unexpired removes the last ones; both are encoded every time
//     (few rows on an appended table).
//   - The file is the cached groups' pages copied one after the other and
//     a new footer: the column chunk metadata of each group (offsets moved,
//     statistics kept; when pages are appended to a chunk its null count is
//     summed and its min/max compared with the column's Parquet ordering,
//     as parquet-go does between pages). The page index parquet-go writes
//     after the row groups is not copied: Delta readers do not use it.
//
// This file decides which adds are encoded and which groups are copied;
// the bytes are ckptfile's: encoding is parquet-go's throughout (the same
// schema and options as a full encode, ckptfile.Encoder), and only the
// framing — magic, page bytes, footer — is put together by
// ckptfile.Assemble. The cache keeps at most MaxBytes of pages; past that it
// is dropped after the checkpoint (the next one encodes every add again
// and counts as a fallback), so memory stays bounded on tables whose
// checkpoint is very large.

// maxPageSets bounds the page sets appended to the last group before it is
// encoded again in one go: readers pay for many small pages (delta-rs
// opened a 6,000-file table 3x slower with ~200 pages per column).
const maxPageSets = 16

// DefaultCheckpointCacheBytes is CheckpointCache.MaxBytes' default.
const DefaultCheckpointCacheBytes = 256 << 20

// CheckpointCache lets WriteCheckpoint (CheckpointOptions.Cache) reuse the
// encoded adds of the previous checkpoint of the same State. It follows
// one State at a time: given another one (a state loaded afresh), it starts
// over. Not safe for concurrent use.
type CheckpointCache struct {
	// MaxBytes bounds the encoded bytes kept. Default
	// DefaultCheckpointCacheBytes.
	MaxBytes int64

	// oneShot caches nothing across checkpoints and never follows the
	// state (WriteCheckpoint without a cache: st is only read, so several
	// may encode one State at once).
	oneShot bool
	st      *State
	key     string // the checkpoint schema the groups were encoded with
	// sidecars are the add sidecars of the previous V2 checkpoint
	// (checkpoint_v2.go).
	sidecars []*sidecarRef
	seen     uint64 // every live add with seq <= seen is in groups
	groups   []*pageGroup
	size     int64
	enc      rowEncoder
	// out is the previous file's buffer, reused: a checkpoint's bytes are
	// valid until the next one (fresh pages for every file cost page
	// faults and zeroing of the whole file).
	out []byte
}

// CheckpointCacheStats describes how one checkpoint used its cache.
type CheckpointCacheStats struct {
	// AddsEncoded and AddsCopied count the add rows encoded for this
	// checkpoint and those copied as bytes from the previous one.
	AddsEncoded, AddsCopied int64
	// Dropped is set when the cache went over MaxBytes and was emptied.
	Dropped bool
}

func (c *CheckpointCache) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultCheckpointCacheBytes
}

// reset forgets every group and stops following the state.
func (c *CheckpointCache) reset() {
	if c.st != nil {
		c.st.journal = nil
	}
	c.st, c.groups, c.size, c.seen, c.out, c.sidecars = nil, nil, 0, 0, nil, nil
}

// Size is the number of encoded bytes the cache holds.
func (c *CheckpointCache) Size() int64 { return c.size }

// ---- journal -----------------------------------------------------------------

// maxJournal bounds the entries a journal records between two checkpoints;
// past it the cache starts over (a full encode) instead of growing.
const maxJournal = 1 << 22

// fileJournal records the live files a State gained (keys) and lost (seqs
// of the dropped entries) since its cache last looked.
type fileJournal struct {
	added    []string
	dropped  []uint64
	overflow bool
}

func (j *fileJournal) add(key string) {
	if !j.overflow {
		j.added = append(j.added, key)
		j.check()
	}
}

func (j *fileJournal) drop(seq uint64) {
	if !j.overflow {
		j.dropped = append(j.dropped, seq)
		j.check()
	}
}

func (j *fileJournal) check() {
	if len(j.added)+len(j.dropped) > maxJournal {
		j.overflow, j.added, j.dropped = true, nil, nil
	}
}

// ---- encoded row groups --------------------------------------------------------

// pageGroup is one encoded row group of adds.
type pageGroup struct {
	ckptfile.RowGroup
	addRun
}

// addRun is a run of adds encoded together (a row group, or a V2 sidecar):
// their seq range and keys, and whether one of them is gone since.
type addRun struct {
	lo, hi uint64
	keys   []string
	dirty  bool // lost an add since it was encoded
}

// appendGroup appends b's pages to g's column chunks (e encoded both):
// the rows of b follow g's in the same row group.
func (g *pageGroup) appendGroup(e *rowEncoder, b *pageGroup) {
	e.Append(&g.RowGroup, &b.RowGroup)
	g.keys = append(g.keys, b.keys...)
	g.hi = max(g.hi, b.hi)
	if g.lo == 0 {
		g.lo = b.lo
	}
}

// ---- rows --------------------------------------------------------------------

// rowEncoder writes a State's actions as the rows of cs through the
// cache's ckptfile.Encoder, which is reused from one checkpoint to the
// next while the schema holds.
type rowEncoder struct {
	*ckptfile.Encoder
	cs *checkpointSchema
}

// start starts a new file of cs (the same Parquet schema as the encoder's).
func (e *rowEncoder) start(ctx context.Context, cs *checkpointSchema) {
	e.cs = cs
	e.Start(ctx, cs.file)
}

// row writes one row of the top-level field target, whose fields fill
// writes.
func (e *rowEncoder) row(target *ckptfile.Field, fill func(w *ckptfile.Row)) error {
	fill(e.Begin(target))
	return e.End(target)
}

func (e *rowEncoder) addRow(f *fileEntry) error {
	w := e.Begin(e.cs.add)
	addFields(w, e.cs.add, f, e.cs.stats)
	return e.End(e.cs.add)
}

// addRows writes adds (in seq order), per rows to a row group.
func (e *rowEncoder) addRows(adds []fileEntry, per int) error {
	for i := range adds {
		if i > 0 && i%per == 0 {
			if err := e.Cut(); err != nil {
				return err
			}
		}
		if err := e.addRow(&adds[i]); err != nil {
			return err
		}
	}
	return nil
}

// encodeAdds encodes adds (in seq order) as groups of at most per rows.
func (e *rowEncoder) encodeAdds(ctx context.Context, cs *checkpointSchema, adds []fileEntry, per int) ([]*pageGroup, error) {
	if len(adds) == 0 {
		return nil, nil
	}
	e.start(ctx, cs)
	if err := e.addRows(adds, per); err != nil {
		return nil, err
	}
	rgs, _, err := e.Finish()
	if err != nil {
		return nil, err
	}
	groups := make([]*pageGroup, len(rgs))
	for i := range rgs {
		part := adds[i*per : min(len(adds), (i+1)*per)]
		groups[i] = &pageGroup{RowGroup: rgs[i], addRun: newAddRun(part)}
	}
	return groups, nil
}

// newAddRun describes adds (in seq order, at least one).
func newAddRun(adds []fileEntry) addRun {
	r := addRun{lo: adds[0].seq, hi: adds[len(adds)-1].seq, keys: make([]string, len(adds))}
	for i := range adds {
		r.keys[i] = adds[i].key()
	}
	return r
}

// key is the entry's logical-file key (its key in State.files).
func (f *fileEntry) key() string {
	if f.x != nil {
		return fileKey(f.path, f.x.dv)
	}
	return f.path
}

// ---- one checkpoint ------------------------------------------------------------

// encode renders st as a checkpoint, reusing and updating the cache.
func (c *CheckpointCache) encode(ctx context.Context, st *State, o *CheckpointOptions) (data []byte, actions, adds int64, cst CheckpointCacheStats, err error) {
	defer func() {
		if err != nil {
			c.reset() // start over next time rather than trust a half-updated cache
		}
	}()
	cs, per, err := c.useEncoder(st, o, false)
	if err != nil {
		return nil, 0, 0, cst, err
	}
	// Too many groups for the live adds (removes left them small): start
	// over, which packs them again.
	if len(c.groups) > 2*(len(st.files)/per)+8 {
		c.reset()
	}
	runs := make([]*addRun, len(c.groups))
	for i, g := range c.groups {
		runs[i] = &g.addRun
	}
	fresh := c.newAdds(st, runs)
	if fresh, err = c.reencodeDirty(ctx, st, cs, per, fresh, &cst); err != nil {
		return nil, 0, 0, cst, err
	}
	if err := c.addFresh(ctx, st, cs, per, fresh, &cst); err != nil {
		return nil, 0, 0, cst, err
	}
	c.size = 0
	for _, g := range c.groups {
		c.size += g.Size
		adds += g.Rows
	}
	if adds != int64(len(st.files)) {
		return nil, 0, 0, cst, fmt.Errorf("deltalog: internal error: checkpoint cache holds %d adds, the state %d", adds, len(st.files))
	}
	cst.AddsCopied = adds - cst.AddsEncoded
	data, others, err := c.assemble(ctx, st, cs, o, per)
	if err != nil {
		return nil, 0, 0, cst, err
	}
	if c.size > c.maxBytes() {
		c.reset()
		cst.Dropped = true
	} else {
		c.out = data
	}
	return data, others + adds, adds, cst, nil
}

// reencodeDirty encodes the groups that lost adds again from those they
// still hold, a run of such groups together. The last group's survivors
// join the new adds (fresh, returned) instead.
func (c *CheckpointCache) reencodeDirty(ctx context.Context, st *State, cs *checkpointSchema, per int, fresh []fileEntry, cst *CheckpointCacheStats) ([]fileEntry, error) {
	var out []*pageGroup
	for i := 0; i < len(c.groups); {
		g := c.groups[i]
		if !g.dirty {
			out = append(out, g)
			i++
			continue
		}
		var live []fileEntry
		j := i
		for ; j < len(c.groups) && c.groups[j].dirty; j++ {
			live = c.groups[j].survivors(st, live)
		}
		if j == len(c.groups) {
			fresh = append(live, fresh...)
			break
		}
		rebuilt, err := c.enc.encodeAdds(ctx, cs, live, per)
		if err != nil {
			return nil, err
		}
		cst.AddsEncoded += int64(len(live))
		out = append(out, rebuilt...)
		i = j
	}
	c.groups = out
	return fresh, nil
}

// addFresh adds the new adds: appended as pages to the last group while it
// has room (and fewer than maxPageSets), else encoded with the last
// group's adds into full groups.
func (c *CheckpointCache) addFresh(ctx context.Context, st *State, cs *checkpointSchema, per int, fresh []fileEntry, cst *CheckpointCacheStats) error {
	if len(fresh) == 0 {
		return nil
	}
	e := &c.enc
	var last *pageGroup
	if n := len(c.groups); n > 0 && c.groups[n-1].Rows < int64(per) {
		last = c.groups[n-1]
	}
	if last != nil && last.Rows+int64(len(fresh)) <= int64(per) && last.PageSets() < maxPageSets {
		gs, err := e.encodeAdds(ctx, cs, fresh, per)
		if err != nil {
			return err
		}
		last.appendGroup(e, gs[0])
	} else {
		if last != nil {
			fresh = append(last.survivors(st, nil), fresh...)
			c.groups = c.groups[:len(c.groups)-1]
		}
		gs, err := e.encodeAdds(ctx, cs, fresh, per)
		if err != nil {
			return err
		}
		c.groups = append(c.groups, gs...)
	}
	cst.AddsEncoded += int64(len(fresh))
	return nil
}

// assemble encodes the other actions — protocol, metaData, txns and
// domains: the first row group; unexpired removes: the last ones — and
// puts the file together with the cached add groups between them. It
// returns the file and the number of other actions.
func (c *CheckpointCache) assemble(ctx context.Context, st *State, cs *checkpointSchema, o *CheckpointOptions, per int) ([]byte, int64, error) {
	e := &c.enc
	e.start(ctx, cs)
	head, err := e.headRows(st, o)
	if err != nil {
		return nil, 0, err
	}
	if err := e.Cut(); err != nil {
		return nil, 0, err
	}
	removes, err := e.removeRows(st, o, per)
	if err != nil {
		return nil, 0, err
	}
	other, footer, err := e.Finish()
	if err != nil {
		return nil, 0, err
	}
	all := make([]*ckptfile.RowGroup, 0, len(other)+len(c.groups))
	all = append(all, &other[0])
	for _, g := range c.groups {
		all = append(all, &g.RowGroup)
	}
	for i := range other[1:] {
		all = append(all, &other[1+i])
	}
	data, err := ckptfile.Assemble(c.out[:0], footer, all)
	return data, head + removes, err
}

// useEncoder builds the schema of st's checkpoint (or sidecars) and points
// the cache's encoder at it, starting the cache over when the schema or
// the options it was encoded with changed. It returns the schema and the
// rows per row group.
func (c *CheckpointCache) useEncoder(st *State, o *CheckpointOptions, sidecar bool) (*checkpointSchema, int, error) {
	cs, err := buildCheckpointSchema(st, o, sidecar)
	if err != nil {
		return nil, 0, err
	}
	per := o.RowGroupRows
	if per <= 0 {
		per = 1 << 14
	}
	createdBy := o.CreatedBy
	if createdBy == "" {
		createdBy = DefaultEngineInfo
	}
	// With sidecar in the key, a table that moves between classic and V2
	// checkpoints starts over: the cache holds one kind's encoded adds.
	key := fmt.Sprintf("%t\x00%d\x00%s\x00%s", sidecar, per, createdBy, cs.file.String())
	if c.enc.Encoder == nil || c.key != key {
		c.reset()
		c.enc, c.key = rowEncoder{Encoder: ckptfile.NewEncoder(cs.file, createdBy)}, key
	}
	return cs, per, nil
}

// newAdds returns the adds the cache has not encoded yet, in seq order,
// and follows st from now on: every add when the cache does not follow st
// (it starts over), else those that arrived since the previous checkpoint,
// marking the runs (the cache's encoded adds, in seq order) that lost one
// dirty.
func (c *CheckpointCache) newAdds(st *State, runs []*addRun) []fileEntry {
	var fresh []fileEntry
	switch {
	case c.oneShot:
		fresh = filesInOrder(st.files)
	case c.st != st || st.journal == nil || st.journal.overflow:
		c.reset()
		fresh = filesInOrder(st.files)
	default:
		fresh = drainJournal(st, c.seen, runs)
	}
	if !c.oneShot {
		c.st, st.journal = st, &fileJournal{}
	}
	c.seen = st.seq
	return fresh
}

// drainJournal marks the runs (in seq order) that lost an add dirty and
// returns the live adds with a seq above seen, in seq order.
func drainJournal(st *State, seen uint64, runs []*addRun) []fileEntry {
	j := st.journal
	for _, seq := range j.dropped {
		i, found := slices.BinarySearchFunc(runs, seq, func(r *addRun, s uint64) int {
			if r.hi < s {
				return -1
			}
			if r.lo > s {
				return 1
			}
			return 0
		})
		if found {
			runs[i].dirty = true
		}
	}
	var fresh []fileEntry
	for _, k := range j.added {
		if f, ok := st.files[k]; ok && f.seq > seen {
			fresh = append(fresh, f)
		}
	}
	slices.SortFunc(fresh, func(a, b fileEntry) int { return cmp.Compare(a.seq, b.seq) })
	return slices.CompactFunc(fresh, func(a, b fileEntry) bool { return a.seq == b.seq })
}

// survivors appends the run's adds that are still live (an add replaced
// by a newer one has a seq outside the run and is not one of them).
func (r *addRun) survivors(st *State, out []fileEntry) []fileEntry {
	for _, k := range r.keys {
		if f, ok := st.files[k]; ok && f.seq >= r.lo && f.seq <= r.hi {
			out = append(out, f)
		}
	}
	return out
}

// headRows writes protocol, metaData, the live txns and domains and returns
// how many rows that was.
func (e *rowEncoder) headRows(st *State, o *CheckpointOptions) (int64, error) {
	cs := e.cs
	if err := e.row(cs.protocol, func(w *ckptfile.Row) { protocolFields(w, cs.protocol, &st.Protocol) }); err != nil {
		return 0, err
	}
	if err := e.row(cs.metaData, func(w *ckptfile.Row) { metadataFields(w, cs.metaData, &st.Metadata) }); err != nil {
		return 0, err
	}
	rows := int64(2)
	now := o.now()
	txns := st.checkpointTxns(o, now)
	for _, id := range slices.Sorted(maps.Keys(txns)) {
		t := txns[id]
		if err := e.row(cs.txn, func(w *ckptfile.Row) { txnFields(w, cs.txn, &t) }); err != nil {
			return 0, err
		}
		rows++
	}
	for _, name := range slices.Sorted(maps.Keys(st.domains)) {
		d := st.domains[name]
		if err := e.row(cs.domain, func(w *ckptfile.Row) { domainFields(w, cs.domain, &d) }); err != nil {
			return 0, err
		}
		rows++
	}
	return rows, nil
}

// removeRows writes the unexpired tombstones in log order, per rows to a
// row group, and returns how many.
func (e *rowEncoder) removeRows(st *State, o *CheckpointOptions, per int) (int64, error) {
	cutoff, expire := st.tombstoneCutoff(o.now())
	tombs := tombsInOrder(st.tombs)
	var rows int64
	for i := range tombs {
		if expire && tombs[i].delTS <= cutoff {
			continue
		}
		if rows > 0 && rows%int64(per) == 0 {
			if err := e.Cut(); err != nil {
				return 0, err
			}
		}
		if err := e.row(e.cs.remove, func(w *ckptfile.Row) { removeFields(w, e.cs.remove, &tombs[i]) }); err != nil {
			return 0, err
		}
		rows++
	}
	return rows, nil
}
