package deltalog

import (
	"context"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"time"
)

// V2 checkpoints with sidecars, for tables with the v2Checkpoint feature
// (PROTOCOL.md "V2 Spec", "Sidecar Files", "UUID-named checkpoint").
//
// A classic checkpoint is one file holding every live add, so each one
// costs at least a write of the whole file, however little changed. A V2
// checkpoint moves the file actions into sidecar files that later
// checkpoints may reference again: a checkpoint writes only the sidecars
// that changed. With a CheckpointCache following the State:
//
//   - The adds live in sidecars of runs of adds in log order (addRun). A
//     checkpoint writes the adds that arrived since the previous one as a
//     new sidecar, and references the earlier sidecars as they are.
//   - Small sidecars are merged, size-tiered (mergeSidecars): when the
//     newest sidecarFanout sidecars are of the same size tier (a factor of
//     4), their adds are encoded again into one. On an appended table each
//     add is so encoded about log4(table/new adds) times in its life, and
//     the sidecars stay few (at most sidecarFanout-1 per tier). A sidecar
//     holds at most sidecarFullRows adds; full ones are not merged.
//   - A sidecar that lost an add (a remove, or an add replacing it) is
//     encoded again from the adds it still holds.
//   - Unexpired removes go into one more sidecar, written each time (the
//     protocol allows file actions either all inline or all in sidecars).
//   - The checkpoint itself is NNN.checkpoint.<uuid>.json: checkpointMetadata,
//     protocol, metaData, txns, domainMetadata and one sidecar action per
//     sidecar, a few hundred bytes that readers parse without Parquet.
//
// Without a cache every add is encoded into one new sidecar. Log cleanup
// deletes sidecars no kept checkpoint references (cleanup.go).

// sidecarFanout is how many sidecars of one size tier are merged into one.
const sidecarFanout = 4

// maxSidecars bounds the sidecars of one checkpoint (each is one more file
// for readers to fetch); past it the newest half are merged.
const maxSidecars = 32 // besides full ones

// SidecarReuseWindow is how long after its creation a sidecar may be
// referenced by a new checkpoint.
const SidecarReuseWindow = 24 * time.Hour

// SidecarDir is the directory of sidecar files.
const SidecarDir = LogDir + "_sidecars/"

// V2CheckpointPath is the path of a UUID-named JSON V2 checkpoint.
func V2CheckpointPath(version int64, uuid string) string {
	return fmt.Sprintf("%s%020d.checkpoint.%s.json", LogDir, version, uuid)
}

// usesV2Checkpoints reports whether st's checkpoints follow the V2 spec:
// the table supports v2Checkpoint and delta.checkpointPolicy is v2, as
// delta-spark decides. A supported feature with the policy classic (what
// DROP FEATURE v2Checkpoint sets first) gets classic checkpoints, which
// the protocol always allows.
func usesV2Checkpoints(st *State) bool {
	p := st.Protocol
	return p.MinReaderVersion >= TableFeaturesReaderVersion && p.HasReaderFeature("v2Checkpoint") &&
		strings.EqualFold(strings.TrimSpace(st.Metadata.Configuration["delta.checkpointPolicy"]), "v2")
}

// V2CheckpointUpgrade returns the actions of a commit on top of st that
// gives its table V2 checkpoints, as delta-spark's ALTER TABLE ... SET
// TBLPROPERTIES ('delta.checkpointPolicy' = 'v2') does: a table-features
// protocol (reader 3, writer 7) listing the features st's protocol
// supports and v2Checkpoint, and metaData with the policy. The sink never
// commits it: readers without V2 support could no longer open the table,
// the owner's choice. Benches and tests use it.
func V2CheckpointUpgrade(st *State) []Action {
	p := Protocol{MinReaderVersion: TableFeaturesReaderVersion, MinWriterVersion: TableFeaturesWriterVersion, ReaderFeatures: []string{}}
	for _, name := range append(SupportedFeatures(st.Protocol), "v2Checkpoint") {
		if slices.Contains(p.WriterFeatures, name) {
			continue
		}
		p.WriterFeatures = append(p.WriterFeatures, name)
		i := slices.IndexFunc(knownFeatures, func(f Feature) bool { return f.Name == name })
		if (i >= 0 && knownFeatures[i].Kind == ReaderWriter) || slices.Contains(st.Protocol.ReaderFeatures, name) {
			p.ReaderFeatures = append(p.ReaderFeatures, name)
		}
	}
	md := st.Metadata
	md.Configuration = maps.Clone(md.Configuration)
	if md.Configuration == nil {
		md.Configuration = map[string]string{}
	}
	md.Configuration["delta.checkpointPolicy"] = "v2"
	return []Action{&p, &md}
}

// sidecarRef is one sidecar of the adds: written (action set) or still to
// be encoded from pending.
type sidecarRef struct {
	addRun
	rows   int
	action Sidecar
	// created is when this process wrote it, on the monotonic clock: reuse
	// stops after SidecarReuseWindow on the wall clock (Now) and on this
	// one, so a clock stepped back cannot stretch it.
	created time.Time
	pending []fileEntry
}

// sidecarFullRows is the adds of a full sidecar: merging stops there, so a
// remove re-encodes at most this many adds, and larger sets of adds are
// written as several sidecars.
var sidecarFullRows = 1 << 16

func (r *sidecarRef) full() bool { return r.rows >= sidecarFullRows }

// sidecarTier is the size tier of a sidecar of rows adds: tiers grow by a
// factor of 4.
func sidecarTier(rows int) int { return (bits.Len(uint(rows)) + 1) / 2 }

// sidecarWrite is one sidecar file to write.
type sidecarWrite struct {
	path string
	data []byte
}

// writeV2Checkpoint writes st's V2 checkpoint: the changed sidecars, the
// UUID-named JSON checkpoint, then _last_checkpoint.
func writeV2Checkpoint(ctx context.Context, store Store, st *State, o *CheckpointOptions) (*CheckpointResult, error) {
	c := o.Cache
	if c == nil {
		c = &CheckpointCache{oneShot: true}
	}
	start := time.Now()
	plan, err := c.planV2(ctx, st, o)
	if err != nil {
		return nil, err
	}
	for _, w := range plan.writes {
		// A fresh UUID per file: PutIfAbsent can only fail on a store
		// error, never on a name another writer took.
		if err := store.PutIfAbsent(ctx, w.path, w.data); err != nil {
			c.reset()
			return nil, fmt.Errorf("deltalog: write checkpoint sidecar: %w", err)
		}
	}
	// The sidecars were stamped when planned; cleanup allows an hour of
	// slack between a sidecar's stamp and the checkpoints that reference
	// it (cleanupSidecars). A checkpoint that took longer is not written.
	if d := time.Since(start); d > sidecarSlack/2 {
		c.reset()
		return nil, fmt.Errorf("deltalog: V2 checkpoint %d took %v to write its sidecars; not written, the next one starts over", st.Version, d.Round(time.Second))
	}
	data, err := EncodeActions(plan.top)
	if err != nil {
		c.reset()
		return nil, err
	}
	res := &CheckpointResult{Version: st.Version, Path: V2CheckpointPath(st.Version, NewUUID()),
		Actions: plan.actions, Adds: plan.adds, SizeInBytes: int64(len(data)), Cache: plan.stats}
	if err := store.PutIfAbsent(ctx, res.Path, data); err != nil {
		c.reset()
		return nil, err
	}
	return pointLastCheckpoint(ctx, store, res)
}

// v2Plan is what one V2 checkpoint writes.
type v2Plan struct {
	writes  []sidecarWrite
	top     []Action
	actions int64
	adds    int64
	stats   CheckpointCacheStats
}

// planV2 decides the sidecars of st's checkpoint (reusing and updating the
// cache's) and encodes those to write.
func (c *CheckpointCache) planV2(ctx context.Context, st *State, o *CheckpointOptions) (plan *v2Plan, err error) {
	defer func() {
		if err != nil {
			c.reset()
		}
	}()
	cs, per, err := c.useEncoder(st, o, true)
	if err != nil {
		return nil, err
	}
	runs := make([]*addRun, len(c.sidecars))
	for i, r := range c.sidecars {
		runs[i] = &r.addRun
	}
	fresh := c.newAdds(st, runs)
	now := o.now()
	list := mergeSidecars(st, c.sidecarsFor(st, fresh, now))

	plan = &v2Plan{}
	if list, err = c.encodeSidecars(ctx, cs, per, list, now, plan); err != nil {
		return nil, err
	}
	for _, r := range list {
		plan.adds += int64(r.rows)
	}
	if plan.adds != int64(len(st.files)) {
		return nil, fmt.Errorf("deltalog: internal error: checkpoint sidecars hold %d adds, the state %d", plan.adds, len(st.files))
	}
	if !c.oneShot {
		c.sidecars = list
	}

	// Unexpired removes: one more sidecar, written every time.
	removes := int64(0)
	if len(st.tombs) > 0 {
		data, n, err := c.enc.encodeRemovesSidecar(ctx, cs, st, o, per)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			removes = n
			list = append(list, plan.addSidecar(data, now))
		}
	}
	plan.top = v2TopActions(st, o, now, list)
	plan.actions = int64(len(plan.top)) + plan.adds + removes
	return plan, nil
}

// sidecarsFor returns the sidecars of st's adds before merging: the
// cache's that may be referenced again, pending ones with the survivors of
// those that lost adds or are too old to reference, and one of the fresh
// adds (all in seq order).
func (c *CheckpointCache) sidecarsFor(st *State, fresh []fileEntry, now time.Time) []*sidecarRef {
	list := make([]*sidecarRef, 0, len(c.sidecars)+1)
	for _, r := range c.sidecars {
		if !r.dirty && now.Sub(time.UnixMilli(r.action.ModificationTime)) < SidecarReuseWindow && time.Since(r.created) < SidecarReuseWindow {
			list = append(list, r)
			continue
		}
		if live := r.survivors(st, nil); len(live) > 0 {
			list = append(list, &sidecarRef{rows: len(live), pending: live})
		}
	}
	if len(fresh) > 0 {
		list = append(list, &sidecarRef{rows: len(fresh), pending: fresh})
	}
	// Too many sidecars for the live adds (removes left them small):
	// start over, which packs them again.
	if len(list) > 2*(len(st.files)/sidecarFullRows)+maxSidecars {
		list = []*sidecarRef{{rows: len(st.files), pending: filesInOrder(st.files)}}
	}
	return list
}

// encodeSidecars encodes the pending sidecars of list (at most
// sidecarFullRows adds to a file) into plan's writes and returns the
// sidecars as written.
func (c *CheckpointCache) encodeSidecars(ctx context.Context, cs *checkpointSchema, per int, list []*sidecarRef, now time.Time, plan *v2Plan) ([]*sidecarRef, error) {
	var written []*sidecarRef
	for _, r := range list {
		if r.pending == nil {
			plan.stats.AddsCopied += int64(r.rows)
			written = append(written, r)
			continue
		}
		for part := range slices.Chunk(r.pending, sidecarFullRows) {
			data, err := c.enc.encodeSidecar(ctx, cs, part, per)
			if err != nil {
				return nil, err
			}
			ref := plan.addSidecar(data, now)
			ref.addRun, ref.rows, ref.created = newAddRun(part), len(part), time.Now()
			written = append(written, ref)
			plan.stats.AddsEncoded += int64(len(part))
		}
	}
	return written, nil
}

// addSidecar adds a sidecar file of data, written at now, to the plan's
// writes and returns its reference.
func (p *v2Plan) addSidecar(data []byte, now time.Time) *sidecarRef {
	name := NewUUID() + ".parquet"
	p.writes = append(p.writes, sidecarWrite{path: SidecarDir + name, data: data})
	return &sidecarRef{action: Sidecar{Path: name, SizeInBytes: int64(len(data)), ModificationTime: now.UnixMilli()}}
}

// v2TopActions are the actions of st's JSON V2 checkpoint:
// checkpointMetadata, protocol, metaData, the live txns and domains, and
// one sidecar action per sidecar.
func v2TopActions(st *State, o *CheckpointOptions, now time.Time, sidecars []*sidecarRef) []Action {
	// Present, if empty, as in a Parquet checkpoint: delta-kernel-rs
	// refuses a JSON checkpoint whose metaData has a null map or list.
	md := st.Metadata
	if md.Format.Options == nil {
		md.Format.Options = map[string]string{}
	}
	if md.Configuration == nil {
		md.Configuration = map[string]string{}
	}
	if md.PartitionColumns == nil {
		md.PartitionColumns = []string{}
	}
	top := []Action{&CheckpointMetadata{Version: st.Version}, &st.Protocol, &md}
	txns := st.checkpointTxns(o, now)
	for _, id := range slices.Sorted(maps.Keys(txns)) {
		t := txns[id]
		top = append(top, &t)
	}
	for _, name := range slices.Sorted(maps.Keys(st.domains)) {
		d := st.domains[name]
		top = append(top, &d)
	}
	for _, r := range sidecars {
		a := r.action
		top = append(top, &a)
	}
	return top
}

// mergeSidecars merges, among the sidecars after the last full one, the
// newest while sidecarFanout of them share a size tier, or the one before
// the newest is of a lower tier (so tiers never grow from older to newer
// sidecars and each holds fewer than sidecarFanout), and the newest half
// while there are more than maxSidecars. Merging pending sidecars costs
// nothing extra: each pending set of adds is encoded once, after.
func mergeSidecars(st *State, list []*sidecarRef) []*sidecarRef {
	merge := func(from int) {
		var adds []fileEntry
		for _, r := range list[from:] {
			if r.pending != nil {
				adds = append(adds, r.pending...)
			} else {
				adds = r.survivors(st, adds)
			}
		}
		list = append(list[:from], &sidecarRef{rows: len(adds), pending: adds})
	}
	sameTier := func(rs []*sidecarRef) bool {
		for _, r := range rs {
			if sidecarTier(r.rows) != sidecarTier(rs[0].rows) {
				return false
			}
		}
		return true
	}
	for {
		start := len(list)
		for start > 0 && !list[start-1].full() {
			start--
		}
		open, n := list[start:], len(list)-start
		switch {
		case n > maxSidecars:
			merge(start + n/2)
		case n >= sidecarFanout && sameTier(open[n-sidecarFanout:]):
			merge(len(list) - sidecarFanout)
		case n >= 2 && sidecarTier(open[n-2].rows) < sidecarTier(open[n-1].rows):
			merge(len(list) - 2)
		default:
			return list
		}
	}
}

// encodeSidecar returns a sidecar file of adds (in seq order), per rows to
// a row group.
func (e *rowEncoder) encodeSidecar(ctx context.Context, cs *checkpointSchema, adds []fileEntry, per int) ([]byte, error) {
	e.start(ctx, cs)
	if err := e.addRows(adds, per); err != nil {
		return nil, err
	}
	return e.Close()
}

// encodeRemovesSidecar returns a sidecar file of st's unexpired removes
// and how many there are.
func (e *rowEncoder) encodeRemovesSidecar(ctx context.Context, cs *checkpointSchema, st *State, o *CheckpointOptions, per int) ([]byte, int64, error) {
	e.start(ctx, cs)
	n, err := e.removeRows(st, o, per)
	if err != nil || n == 0 {
		return nil, 0, err
	}
	data, err := e.Close()
	return data, n, err
}
