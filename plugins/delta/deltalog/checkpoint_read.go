package deltalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// Checkpoint reading, one reader for both projections of a replay. For a
// blind-append writer (projTable) only the non-file actions (protocol,
// metaData, txn, domainMetadata, checkpointMetadata) are read: Parquet
// checkpoints are read column by column, by name, so the add/remove columns
// — nearly all of a large checkpoint — are never fetched or decoded. For a
// full State (projState) the file-action columns are read too
// (state_read.go). Either way writer differences (Spark, delta-rs, kernel: optional columns present
// or not, stats_parsed / partitionValues_parsed present or not, list and map
// group names) do not matter.

// wholeFileLimit is the checkpoint size below which one GET of the whole
// file beats ranged reads of its footer and columns.
var wholeFileLimit int64 = 1 << 20

// readCheckpointPart reads one checkpoint file and passes the actions proj
// wants to fn: under projTable the non-file actions only, under projState
// every action, the sidecars of a V2 checkpoint followed.
func readCheckpointPart(ctx context.Context, store Store, lf logFile, proj projection, fn func(Action) error) error {
	files := proj == projState
	var sidecars []*Sidecar
	emit := fn
	if files {
		emit = func(a Action) error {
			if sc, ok := a.(*Sidecar); ok {
				sidecars = append(sidecars, sc)
				return nil
			}
			return fn(a)
		}
	}
	switch lf.kind {
	case fileCheckpointV2JSON:
		data, err := store.Get(ctx, lf.Path)
		if err != nil {
			return err
		}
		if err := scanActions(data, proj, emit); err != nil {
			return err
		}
	default:
		if err := readParquetCheckpoint(ctx, store, lf.Path, lf.Size, parquetColumns{nonFile: true, files: files}, emit); err != nil {
			return err
		}
	}
	for _, sc := range sidecars {
		p, err := sidecarPath(sc.Path)
		if err != nil {
			return err
		}
		if err := readParquetCheckpoint(ctx, store, p, 0, parquetColumns{files: true}, fn); err != nil {
			return fmt.Errorf("sidecar %s: %w", p, err)
		}
	}
	return nil
}

// ---- Parquet -------------------------------------------------------------

// parquetColumns is the column projection of a Parquet checkpoint read:
// the non-file actions (checkpointColumns), the file actions add, remove
// and sidecar (fileColumns, state_read.go), or both.
type parquetColumns struct{ nonFile, files bool }

// readParquetCheckpoint is the one Parquet checkpoint (and sidecar) reader.
// Without the file actions only the few columns wanted are fetched — with
// ranged reads when the store can and the file is large. The file actions
// are nearly all of a checkpoint: a read that wants them fetches the whole
// file with one GET.
func readParquetCheckpoint(ctx context.Context, store Store, path string, size int64, want parquetColumns, fn func(Action) error) error {
	var r io.ReaderAt
	var ranged *rangedReaderAt
	rr, canRange := store.(RangeReader)
	if canRange && !want.files && size > wholeFileLimit {
		ranged = &rangedReaderAt{ctx: ctx, rr: rr, path: path, size: size}
		r = ranged
	} else {
		data, err := store.Get(ctx, path)
		if err != nil {
			return err
		}
		size = int64(len(data))
		r = bytes.NewReader(data)
	}
	opts := []parquet.FileOption{parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true)}
	if !want.files {
		// Few, small columns read through ReadAt (maybe ranged GETs).
		opts = append(opts, parquet.OptimisticRead(true), parquet.ReadBufferSize(64<<10))
	}
	pf, err := parquet.OpenFile(r, size, opts...)
	if err != nil {
		return fmt.Errorf("open checkpoint %s: %w", path, err)
	}
	lookup := columnLookup{root: pf.Root()}
	var cols *checkpointColumns
	if want.nonFile {
		cols = lookupCheckpointColumns(&lookup)
	}
	var fc *fileColumns
	if want.files {
		fc = lookupFileColumns(&lookup)
	}
	if ranged != nil {
		if err := ranged.prefetch(pf, cols.leafIndexes()); err != nil {
			return fmt.Errorf("read checkpoint %s: %w", path, err)
		}
	}
	for i, rg := range pf.RowGroups() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if cols != nil {
			if err := cols.readRowGroup(rg, fn); err != nil {
				return fmt.Errorf("read checkpoint %s row group %d: %w", path, i, err)
			}
		}
		if fc != nil {
			if err := fc.readRowGroup(rg, fn); err != nil {
				return fmt.Errorf("read checkpoint %s row group %d: %w", path, i, err)
			}
		}
	}
	return nil
}

// leaf is a resolved leaf column (nil when the file does not have it).
type leaf = *parquet.Column

// mapLeaves are the key and value leaves of a map<string,string> column.
type mapLeaves struct{ key, value leaf }

// columnLookup is the one column lookup of checkpoint reading: columns are
// found by name, and a leaf is served only at the repetition depth its
// decoder reads — 0 for a scalar (one value per row), 1 for a list element
// or a map key (readCells counts rows at repetition level 0 and pairs map
// keys with values by position, which is only sound one level deep). The
// checkpoint schema puts every action at the top level as an optional
// struct, so in any Delta checkpoint (ours, Spark's, delta-rs's, the
// kernel's) the scalars are at depth 0 and the lists and maps at depth 1;
// a column present at another depth is not one the reader knows how to
// decode and reads as missing. refused names such columns (tests assert
// there are none in real checkpoints).
type columnLookup struct {
	root    *parquet.Column
	refused []string
}

// childColumn is root/names, or nil.
func childColumn(col *parquet.Column, names ...string) *parquet.Column {
	for _, n := range names {
		if col == nil {
			return nil
		}
		col = col.Column(n)
	}
	return col
}

func (l *columnLookup) refuse(names []string) {
	l.refused = append(l.refused, strings.Join(names, "."))
}

// scalar is the non-repeated leaf at root/names, or nil.
func (l *columnLookup) scalar(names ...string) leaf {
	col := childColumn(l.root, names...)
	if col == nil {
		return nil
	}
	if !col.Leaf() || col.MaxRepetitionLevel() != 0 {
		l.refuse(names)
		return nil
	}
	return col
}

// list is the element leaf of the list<string> at root/names, whatever
// the writer called its repeated group ("list/element", "bag/array", or a
// legacy two-level list), or nil.
func (l *columnLookup) list(names ...string) leaf {
	col := childColumn(l.root, names...)
	if col == nil {
		return nil
	}
	for !col.Leaf() {
		cs := col.Columns()
		if len(cs) != 1 {
			l.refuse(names)
			return nil
		}
		col = cs[0]
	}
	if col.MaxRepetitionLevel() != 1 {
		l.refuse(names)
		return nil
	}
	return col
}

// mapOf finds the key and value leaves of the map<string,string> at
// root/names whatever the repeated group is called ("key_value",
// "entries", ...).
func (l *columnLookup) mapOf(names ...string) mapLeaves {
	col := childColumn(l.root, names...)
	if col == nil {
		return mapLeaves{}
	}
	if col.Leaf() || len(col.Columns()) != 1 {
		l.refuse(names)
		return mapLeaves{}
	}
	kv := col.Columns()[0]
	if kv.Leaf() || len(kv.Columns()) != 2 {
		l.refuse(names)
		return mapLeaves{}
	}
	k, v := kv.Column("key"), kv.Column("value")
	if k == nil || v == nil {
		k, v = kv.Columns()[0], kv.Columns()[1]
	}
	if !k.Leaf() || !v.Leaf() || k.MaxRepetitionLevel() != 1 {
		l.refuse(names)
		return mapLeaves{}
	}
	return mapLeaves{k, v}
}

// checkpointColumns are the leaves of the non-file actions.
type checkpointColumns struct {
	protoReader, protoWriter     leaf
	protoReaderFeatures          leaf
	protoWriterFeatures          leaf
	mdID, mdName, mdDescription  leaf
	mdSchema, mdCreated          leaf
	mdPartitionColumns           leaf
	mdConfiguration              mapLeaves
	mdProvider                   leaf
	mdOptions                    mapLeaves
	txnAppID, txnVersion, txnLU  leaf
	dmDomain, dmConfig, dmRemove leaf
	cpmVersion                   leaf
}

func lookupCheckpointColumns(l *columnLookup) *checkpointColumns {
	return &checkpointColumns{
		protoReader:         l.scalar("protocol", "minReaderVersion"),
		protoWriter:         l.scalar("protocol", "minWriterVersion"),
		protoReaderFeatures: l.list("protocol", "readerFeatures"),
		protoWriterFeatures: l.list("protocol", "writerFeatures"),
		mdID:                l.scalar("metaData", "id"),
		mdName:              l.scalar("metaData", "name"),
		mdDescription:       l.scalar("metaData", "description"),
		mdSchema:            l.scalar("metaData", "schemaString"),
		mdCreated:           l.scalar("metaData", "createdTime"),
		mdPartitionColumns:  l.list("metaData", "partitionColumns"),
		mdConfiguration:     l.mapOf("metaData", "configuration"),
		mdProvider:          l.scalar("metaData", "format", "provider"),
		mdOptions:           l.mapOf("metaData", "format", "options"),
		txnAppID:            l.scalar("txn", "appId"),
		txnVersion:          l.scalar("txn", "version"),
		txnLU:               l.scalar("txn", "lastUpdated"),
		dmDomain:            l.scalar("domainMetadata", "domain"),
		dmConfig:            l.scalar("domainMetadata", "configuration"),
		dmRemove:            l.scalar("domainMetadata", "removed"),
		cpmVersion:          l.scalar("checkpointMetadata", "version"),
	}
}

func (c *checkpointColumns) leaves() []leaf {
	return []leaf{c.protoReader, c.protoWriter, c.protoReaderFeatures, c.protoWriterFeatures,
		c.mdID, c.mdName, c.mdDescription, c.mdSchema, c.mdCreated, c.mdPartitionColumns,
		c.mdConfiguration.key, c.mdConfiguration.value, c.mdProvider, c.mdOptions.key, c.mdOptions.value,
		c.txnAppID, c.txnVersion, c.txnLU, c.dmDomain, c.dmConfig, c.dmRemove, c.cpmVersion}
}

func (c *checkpointColumns) leafIndexes() []int {
	var idx []int
	for _, l := range c.leaves() {
		if l != nil {
			idx = append(idx, l.Index())
		}
	}
	return idx
}

func (c *checkpointColumns) readRowGroup(rg parquet.RowGroup, fn func(Action) error) error {
	if err := c.readProtocols(rg, fn); err != nil {
		return err
	}
	if err := c.readMetadata(rg, fn); err != nil {
		return err
	}
	if err := c.readTxns(rg, fn); err != nil {
		return err
	}
	if err := c.readDomains(rg, fn); err != nil {
		return err
	}
	// checkpointMetadata (V2 checkpoints)
	cpm, err := readCells(rg, c.cpmVersion)
	if err != nil {
		return err
	}
	for _, v := range cpm {
		if err := fn(&CheckpointMetadata{Version: v.int64()}); err != nil {
			return err
		}
	}
	return nil
}

// Each action is read row by row from its driving column (a field every
// row of the action has), the other columns only when it has rows.

func (c *checkpointColumns) readProtocols(rg parquet.RowGroup, fn func(Action) error) error {
	readers, err := readCells(rg, c.protoReader)
	if err != nil || len(readers) == 0 {
		return err
	}
	var writer, readerFeatures, writerFeatures cursor
	if err := readCursors(rg, c.protoWriter, &writer, c.protoReaderFeatures, &readerFeatures,
		c.protoWriterFeatures, &writerFeatures); err != nil {
		return err
	}
	for _, rc := range readers {
		p := &Protocol{MinReaderVersion: int32(rc.int64())}
		if w, ok := writer.at(rc.row); ok {
			p.MinWriterVersion = int32(w.int64())
		}
		p.ReaderFeatures = readerFeatures.strs(rc.row)
		p.WriterFeatures = writerFeatures.strs(rc.row)
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

func (c *checkpointColumns) readMetadata(rg parquet.RowGroup, fn func(Action) error) error {
	ids, err := readCells(rg, c.mdID)
	if err != nil || len(ids) == 0 {
		return err
	}
	var name, description, schema, created, provider, partitionColumns cursor
	if err := readCursors(rg, c.mdName, &name, c.mdDescription, &description, c.mdSchema, &schema,
		c.mdCreated, &created, c.mdProvider, &provider, c.mdPartitionColumns, &partitionColumns); err != nil {
		return err
	}
	conf, err := readMapCursor(rg, c.mdConfiguration)
	if err != nil {
		return err
	}
	opts, err := readMapCursor(rg, c.mdOptions)
	if err != nil {
		return err
	}
	for _, idc := range ids {
		r := idc.row
		m := &Metadata{ID: idc.str(), PartitionColumns: partitionColumns.strs(r)}
		m.Configuration = conf.strings(r)
		m.Name, _ = name.str(r)
		m.Description, _ = description.str(r)
		m.SchemaString, _ = schema.str(r)
		m.CreatedTime = created.int64p(r)
		m.Format.Provider, _ = provider.str(r)
		m.Format.Options = opts.strings(r)
		if m.PartitionColumns == nil {
			m.PartitionColumns = []string{}
		}
		if m.Configuration == nil {
			m.Configuration = map[string]string{}
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

func (c *checkpointColumns) readTxns(rg parquet.RowGroup, fn func(Action) error) error {
	apps, err := readCells(rg, c.txnAppID)
	if err != nil || len(apps) == 0 {
		return err
	}
	var version, lastUpdated cursor
	if err := readCursors(rg, c.txnVersion, &version, c.txnLU, &lastUpdated); err != nil {
		return err
	}
	for _, a := range apps {
		t := &Txn{AppID: a.str()}
		v, ok := version.at(a.row)
		if !ok {
			return fmt.Errorf("txn for app %q has no version", t.AppID)
		}
		t.Version = v.int64()
		t.LastUpdated = lastUpdated.int64p(a.row)
		if err := fn(t); err != nil {
			return err
		}
	}
	return nil
}

func (c *checkpointColumns) readDomains(rg parquet.RowGroup, fn func(Action) error) error {
	doms, err := readCells(rg, c.dmDomain)
	if err != nil || len(doms) == 0 {
		return err
	}
	var config, removed cursor
	if err := readCursors(rg, c.dmConfig, &config, c.dmRemove, &removed); err != nil {
		return err
	}
	for _, d := range doms {
		dm := &DomainMetadata{Domain: d.str()}
		dm.Configuration, _ = config.str(d.row)
		if v, ok := removed.at(d.row); ok {
			dm.Removed = v.val.Boolean()
		}
		if err := fn(dm); err != nil {
			return err
		}
	}
	return nil
}

// ---- Ranged reads --------------------------------------------------------

// rangedReaderAt serves parquet-go's ReadAt calls from byte ranges fetched
// up front — one request per run of wanted column chunks — and falls back
// to a direct ranged GET for anything else (the footer).
type rangedReaderAt struct {
	ctx  context.Context
	rr   RangeReader
	path string
	size int64
	segs []byteRange // sorted by off, non-overlapping
}

type byteRange struct {
	off  int64
	data []byte
}

// mergeGap is how far apart two wanted ranges may be and still be fetched
// in one request (cheaper than a second round trip).
const mergeGap = 1 << 20

func (r *rangedReaderAt) prefetch(pf *parquet.File, leafIdx []int) error {
	type span struct{ start, end int64 }
	var spans []span
	for _, rg := range pf.Metadata().RowGroups {
		for _, i := range leafIdx {
			if i >= len(rg.Columns) {
				continue
			}
			md := rg.Columns[i].MetaData
			start := md.DataPageOffset
			if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
				start = md.DictionaryPageOffset
			}
			end := start + md.TotalCompressedSize
			if start < 0 || end > r.size || end <= start {
				continue // let ReadAt fetch on demand
			}
			spans = append(spans, span{start, end})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var merged []span
	for _, s := range spans {
		if n := len(merged); n > 0 && s.start <= merged[n-1].end+mergeGap {
			merged[n-1].end = max(merged[n-1].end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	for _, s := range merged {
		data, err := r.rr.GetRange(r.ctx, r.path, s.start, s.end-s.start)
		if err != nil {
			return err
		}
		r.segs = append(r.segs, byteRange{off: s.start, data: data})
	}
	return nil
}

func (r *rangedReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= r.size {
		return 0, io.EOF
	}
	want := int64(len(p))
	short := false
	if off+want > r.size {
		want = r.size - off
		short = true
	}
	i, _ := slices.BinarySearchFunc(r.segs, off, func(s byteRange, off int64) int {
		switch {
		case s.off+int64(len(s.data)) <= off:
			return -1
		case s.off > off:
			return 1
		}
		return 0
	})
	if i < len(r.segs) {
		s := r.segs[i]
		if s.off <= off && off+want <= s.off+int64(len(s.data)) {
			n := copy(p, s.data[off-s.off:off-s.off+want])
			if short {
				return n, io.EOF
			}
			return n, nil
		}
	}
	data, err := r.rr.GetRange(r.ctx, r.path, off, want)
	if err != nil {
		return 0, err
	}
	n := copy(p, data)
	if short || n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
