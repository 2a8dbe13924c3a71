package deltalog

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"
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
	var ranged *ckptfile.RangedReaderAt
	rr, canRange := store.(RangeReader)
	if canRange && !want.files && size > wholeFileLimit {
		ranged = ckptfile.NewRangedReaderAt(ctx, rr, path, size)
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
	lookup := ckptfile.Lookup{Root: pf.Root()}
	var cols *checkpointColumns
	if want.nonFile {
		cols = lookupCheckpointColumns(&lookup)
	}
	var fc *fileColumns
	if want.files {
		fc = lookupFileColumns(&lookup)
	}
	if ranged != nil {
		if err := ranged.Prefetch(pf, cols.leafIndexes()); err != nil {
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

// checkpointColumns are the leaves of the non-file actions.
type checkpointColumns struct {
	protoReader, protoWriter     ckptfile.Leaf
	protoReaderFeatures          ckptfile.Leaf
	protoWriterFeatures          ckptfile.Leaf
	mdID, mdName, mdDescription  ckptfile.Leaf
	mdSchema, mdCreated          ckptfile.Leaf
	mdPartitionColumns           ckptfile.Leaf
	mdConfiguration              ckptfile.MapLeaves
	mdProvider                   ckptfile.Leaf
	mdOptions                    ckptfile.MapLeaves
	txnAppID, txnVersion, txnLU  ckptfile.Leaf
	dmDomain, dmConfig, dmRemove ckptfile.Leaf
	cpmVersion                   ckptfile.Leaf
}

func lookupCheckpointColumns(l *ckptfile.Lookup) *checkpointColumns {
	return &checkpointColumns{
		protoReader:         l.Scalar("protocol", "minReaderVersion"),
		protoWriter:         l.Scalar("protocol", "minWriterVersion"),
		protoReaderFeatures: l.List("protocol", "readerFeatures"),
		protoWriterFeatures: l.List("protocol", "writerFeatures"),
		mdID:                l.Scalar("metaData", "id"),
		mdName:              l.Scalar("metaData", "name"),
		mdDescription:       l.Scalar("metaData", "description"),
		mdSchema:            l.Scalar("metaData", "schemaString"),
		mdCreated:           l.Scalar("metaData", "createdTime"),
		mdPartitionColumns:  l.List("metaData", "partitionColumns"),
		mdConfiguration:     l.Map("metaData", "configuration"),
		mdProvider:          l.Scalar("metaData", "format", "provider"),
		mdOptions:           l.Map("metaData", "format", "options"),
		txnAppID:            l.Scalar("txn", "appId"),
		txnVersion:          l.Scalar("txn", "version"),
		txnLU:               l.Scalar("txn", "lastUpdated"),
		dmDomain:            l.Scalar("domainMetadata", "domain"),
		dmConfig:            l.Scalar("domainMetadata", "configuration"),
		dmRemove:            l.Scalar("domainMetadata", "removed"),
		cpmVersion:          l.Scalar("checkpointMetadata", "version"),
	}
}

func (c *checkpointColumns) leaves() []ckptfile.Leaf {
	return []ckptfile.Leaf{c.protoReader, c.protoWriter, c.protoReaderFeatures, c.protoWriterFeatures,
		c.mdID, c.mdName, c.mdDescription, c.mdSchema, c.mdCreated, c.mdPartitionColumns,
		c.mdConfiguration.Key, c.mdConfiguration.Value, c.mdProvider, c.mdOptions.Key, c.mdOptions.Value,
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
	cpm, err := ckptfile.ReadCells(rg, c.cpmVersion)
	if err != nil {
		return err
	}
	for _, v := range cpm {
		if err := fn(&CheckpointMetadata{Version: v.Int64()}); err != nil {
			return err
		}
	}
	return nil
}

// Each action is read row by row from its driving column (a field every
// row of the action has), the other columns only when it has rows.

func (c *checkpointColumns) readProtocols(rg parquet.RowGroup, fn func(Action) error) error {
	readers, err := ckptfile.ReadCells(rg, c.protoReader)
	if err != nil || len(readers) == 0 {
		return err
	}
	var writer, readerFeatures, writerFeatures ckptfile.Cursor
	if err := ckptfile.ReadCursors(rg, c.protoWriter, &writer, c.protoReaderFeatures, &readerFeatures,
		c.protoWriterFeatures, &writerFeatures); err != nil {
		return err
	}
	for _, rc := range readers {
		p := &Protocol{MinReaderVersion: int32(rc.Int64())}
		w, _ := writer.Int64(rc.Row)
		p.MinWriterVersion = int32(w)
		p.ReaderFeatures = readerFeatures.Strs(rc.Row)
		p.WriterFeatures = writerFeatures.Strs(rc.Row)
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

func (c *checkpointColumns) readMetadata(rg parquet.RowGroup, fn func(Action) error) error {
	ids, err := ckptfile.ReadCells(rg, c.mdID)
	if err != nil || len(ids) == 0 {
		return err
	}
	var name, description, schema, created, provider, partitionColumns ckptfile.Cursor
	if err := ckptfile.ReadCursors(rg, c.mdName, &name, c.mdDescription, &description, c.mdSchema, &schema,
		c.mdCreated, &created, c.mdProvider, &provider, c.mdPartitionColumns, &partitionColumns); err != nil {
		return err
	}
	conf, err := ckptfile.ReadMapCursor(rg, c.mdConfiguration)
	if err != nil {
		return err
	}
	opts, err := ckptfile.ReadMapCursor(rg, c.mdOptions)
	if err != nil {
		return err
	}
	for _, idc := range ids {
		r := idc.Row
		m := &Metadata{ID: idc.Str(), PartitionColumns: partitionColumns.Strs(r)}
		m.Configuration = conf.Strings(r)
		m.Name, _ = name.Str(r)
		m.Description, _ = description.Str(r)
		m.SchemaString, _ = schema.Str(r)
		m.CreatedTime = created.Int64p(r)
		m.Format.Provider, _ = provider.Str(r)
		m.Format.Options = opts.Strings(r)
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
	apps, err := ckptfile.ReadCells(rg, c.txnAppID)
	if err != nil || len(apps) == 0 {
		return err
	}
	var version, lastUpdated ckptfile.Cursor
	if err := ckptfile.ReadCursors(rg, c.txnVersion, &version, c.txnLU, &lastUpdated); err != nil {
		return err
	}
	for _, a := range apps {
		t := &Txn{AppID: a.Str()}
		v, ok := version.Int64(a.Row)
		if !ok {
			return fmt.Errorf("txn for app %q has no version", t.AppID)
		}
		t.Version = v
		t.LastUpdated = lastUpdated.Int64p(a.Row)
		if err := fn(t); err != nil {
			return err
		}
	}
	return nil
}

func (c *checkpointColumns) readDomains(rg parquet.RowGroup, fn func(Action) error) error {
	doms, err := ckptfile.ReadCells(rg, c.dmDomain)
	if err != nil || len(doms) == 0 {
		return err
	}
	var config, removed ckptfile.Cursor
	if err := ckptfile.ReadCursors(rg, c.dmConfig, &config, c.dmRemove, &removed); err != nil {
		return err
	}
	for _, d := range doms {
		dm := &DomainMetadata{Domain: d.Str()}
		dm.Configuration, _ = config.Str(d.Row)
		dm.Removed, _ = removed.Bool(d.Row)
		if err := fn(dm); err != nil {
			return err
		}
	}
	return nil
}
