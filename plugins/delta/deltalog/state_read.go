package deltalog

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"
)

// Reading the file actions (add, remove, sidecar) of Parquet checkpoints
// and sidecars, for State. Like the non-file reader in checkpoint_read.go,
// columns are found by name (ckptfile.Lookup) and each is read on its own
// into the cursors of ckptfile, so any writer's
// layout works: optional columns present or not, list and map group names,
// INT32 or INT64 integers. readParquetCheckpoint (checkpoint_read.go) reads
// them when the projection wants the file actions.
//
// An add whose stats column is missing or null but that has stats_parsed
// (Spark with delta.checkpoint.writeStatsAsJson=false) gets its stats
// re-serialized to the JSON form: State keeps stats only as JSON, the
// form every reader accepts and the one appends write.

type dvLeaves struct {
	storageType, pathOrInline, offset, size, cardinality, maxRowIndex ckptfile.Leaf
}

type fileColumns struct {
	addPath, addSize, addModTime, addDataChange, addStats ckptfile.Leaf
	addPV, addTags                                        ckptfile.MapLeaves
	addDV                                                 dvLeaves
	addBaseRowID, addDefaultRCV, addClustering            ckptfile.Leaf
	addStatsParsed                                        *parquet.Column

	rmPath, rmDelTS, rmDataChange, rmExt, rmSize ckptfile.Leaf
	rmPV                                         ckptfile.MapLeaves
	rmDV                                         dvLeaves
	rmBaseRowID, rmDefaultRCV                    ckptfile.Leaf

	scPath, scSize, scModTime ckptfile.Leaf
}

func dvLeavesAt(l *ckptfile.Lookup, action string) dvLeaves {
	return dvLeaves{
		storageType:  l.Scalar(action, "deletionVector", "storageType"),
		pathOrInline: l.Scalar(action, "deletionVector", "pathOrInlineDv"),
		offset:       l.Scalar(action, "deletionVector", "offset"),
		size:         l.Scalar(action, "deletionVector", "sizeInBytes"),
		cardinality:  l.Scalar(action, "deletionVector", "cardinality"),
		maxRowIndex:  l.Scalar(action, "deletionVector", "maxRowIndex"),
	}
}

func lookupFileColumns(l *ckptfile.Lookup) *fileColumns {
	c := &fileColumns{
		addPath:       l.Scalar("add", "path"),
		addSize:       l.Scalar("add", "size"),
		addModTime:    l.Scalar("add", "modificationTime"),
		addDataChange: l.Scalar("add", "dataChange"),
		addStats:      l.Scalar("add", "stats"),
		addPV:         l.Map("add", "partitionValues"),
		addTags:       l.Map("add", "tags"),
		addDV:         dvLeavesAt(l, "add"),
		addBaseRowID:  l.Scalar("add", "baseRowId"),
		addDefaultRCV: l.Scalar("add", "defaultRowCommitVersion"),
		addClustering: l.Scalar("add", "clusteringProvider"),

		rmPath:       l.Scalar("remove", "path"),
		rmDelTS:      l.Scalar("remove", "deletionTimestamp"),
		rmDataChange: l.Scalar("remove", "dataChange"),
		rmExt:        l.Scalar("remove", "extendedFileMetadata"),
		rmSize:       l.Scalar("remove", "size"),
		rmPV:         l.Map("remove", "partitionValues"),
		rmDV:         dvLeavesAt(l, "remove"),
		rmBaseRowID:  l.Scalar("remove", "baseRowId"),
		rmDefaultRCV: l.Scalar("remove", "defaultRowCommitVersion"),

		scPath:    l.Scalar("sidecar", "path"),
		scSize:    l.Scalar("sidecar", "sizeInBytes"),
		scModTime: l.Scalar("sidecar", "modificationTime"),
	}
	if sp := ckptfile.Child(l.Root, "add", "stats_parsed"); sp != nil && !sp.Leaf() {
		c.addStatsParsed = sp
	}
	return c
}

type dvCursor struct {
	storageType, pathOrInline, offset, size, cardinality, maxRowIndex ckptfile.Cursor
}

func readDVCursor(rg parquet.RowGroup, l dvLeaves) (*dvCursor, error) {
	c := &dvCursor{}
	for _, x := range []struct {
		l ckptfile.Leaf
		c *ckptfile.Cursor
	}{{l.storageType, &c.storageType}, {l.pathOrInline, &c.pathOrInline}, {l.offset, &c.offset},
		{l.size, &c.size}, {l.cardinality, &c.cardinality}, {l.maxRowIndex, &c.maxRowIndex}} {
		cells, err := ckptfile.ReadCells(rg, x.l)
		if err != nil {
			return nil, err
		}
		x.c.Cells = cells
	}
	return c, nil
}

func (c *dvCursor) at(r int32) *DeletionVector {
	st, ok := c.storageType.Str(r)
	if !ok {
		return nil
	}
	dv := &DeletionVector{StorageType: st}
	dv.PathOrInlineDv, _ = c.pathOrInline.Str(r)
	if v, ok := c.offset.Int64(r); ok {
		o := int32(v)
		dv.Offset = &o
	}
	size, _ := c.size.Int64(r)
	dv.SizeInBytes = int32(size)
	dv.Cardinality, _ = c.cardinality.Int64(r)
	dv.MaxRowIndex = c.maxRowIndex.Int64p(r)
	return dv
}

// rawDV renders a descriptor in the raw JSON form Add and Remove keep.
func rawDV(dv *DeletionVector) []byte {
	if dv == nil {
		return nil
	}
	b, _ := marshalDV(dv)
	return b
}

func marshalDV(dv *DeletionVector) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"storageType":`)
	writeJSONString(&b, dv.StorageType)
	b.WriteString(`,"pathOrInlineDv":`)
	writeJSONString(&b, dv.PathOrInlineDv)
	if dv.Offset != nil {
		b.WriteString(`,"offset":` + strconv.FormatInt(int64(*dv.Offset), 10))
	}
	b.WriteString(`,"sizeInBytes":` + strconv.FormatInt(int64(dv.SizeInBytes), 10))
	b.WriteString(`,"cardinality":` + strconv.FormatInt(dv.Cardinality, 10))
	if dv.MaxRowIndex != nil {
		b.WriteString(`,"maxRowIndex":` + strconv.FormatInt(*dv.MaxRowIndex, 10))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (c *fileColumns) readRowGroup(rg parquet.RowGroup, fn func(Action) error) error {
	if err := c.readAdds(rg, fn); err != nil {
		return err
	}
	if err := c.readRemoves(rg, fn); err != nil {
		return err
	}
	return c.readSidecars(rg, fn)
}

func (c *fileColumns) readAdds(rg parquet.RowGroup, fn func(Action) error) error {
	paths, err := ckptfile.ReadCells(rg, c.addPath)
	if err != nil || len(paths) == 0 {
		return err
	}
	var size, modTime, dataChange, stats, baseRowID, defaultRCV, clustering ckptfile.Cursor
	if err := ckptfile.ReadCursors(rg, c.addSize, &size, c.addModTime, &modTime, c.addDataChange, &dataChange,
		c.addStats, &stats, c.addBaseRowID, &baseRowID, c.addDefaultRCV, &defaultRCV, c.addClustering, &clustering); err != nil {
		return err
	}
	pv, err := ckptfile.ReadMapCursor(rg, c.addPV)
	if err != nil {
		return err
	}
	tags, err := ckptfile.ReadMapCursor(rg, c.addTags)
	if err != nil {
		return err
	}
	dvs, err := readDVCursor(rg, c.addDV)
	if err != nil {
		return err
	}
	// stats_parsed only for adds without JSON stats.
	var sp *statsParsed
	if c.addStatsParsed != nil && len(stats.Cells) < len(paths) {
		if sp, err = readStatsParsed(rg, c.addStatsParsed); err != nil {
			return fmt.Errorf("add.stats_parsed: %w", err)
		}
	}
	for _, pc := range paths {
		r := pc.Row
		a := &Add{Path: pc.Str(), PartitionValues: PartitionValues{}}
		a.Size, _ = size.Int64(r)
		a.ModificationTime, _ = modTime.Int64(r)
		a.DataChange, _ = dataChange.Bool(r)
		if s, ok := stats.Str(r); ok {
			a.Stats = s
		} else if sp != nil {
			a.Stats = sp.json(r)
		}
		pv.Each(r, func(k string, v *string) { a.PartitionValues[k] = v })
		a.Tags = tags.Strings(r)
		a.DeletionVector = rawDV(dvs.at(r))
		a.BaseRowID = baseRowID.Int64p(r)
		a.DefaultRowCommitVersion = defaultRCV.Int64p(r)
		a.ClusteringProvider, _ = clustering.Str(r)
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

func (c *fileColumns) readRemoves(rg parquet.RowGroup, fn func(Action) error) error {
	paths, err := ckptfile.ReadCells(rg, c.rmPath)
	if err != nil || len(paths) == 0 {
		return err
	}
	var delTS, dataChange, ext, size, baseRowID, defaultRCV ckptfile.Cursor
	if err := ckptfile.ReadCursors(rg, c.rmDelTS, &delTS, c.rmDataChange, &dataChange, c.rmExt, &ext, c.rmSize, &size,
		c.rmBaseRowID, &baseRowID, c.rmDefaultRCV, &defaultRCV); err != nil {
		return err
	}
	pv, err := ckptfile.ReadMapCursor(rg, c.rmPV)
	if err != nil {
		return err
	}
	pvPresent, err := ckptfile.MapPresence(rg, c.rmPV)
	if err != nil {
		return err
	}
	dvs, err := readDVCursor(rg, c.rmDV)
	if err != nil {
		return err
	}
	for _, pc := range paths {
		r := pc.Row
		rm := &Remove{Path: pc.Str()}
		rm.DeletionTimestamp = delTS.Int64p(r)
		rm.DataChange, _ = dataChange.Bool(r)
		if b, ok := ext.Bool(r); ok {
			v := b // escapes: allocated only for a row that has one
			rm.ExtendedFileMetadata = &v
		}
		rm.Size = size.Int64p(r)
		if pvPresent.Has(r) {
			rm.PartitionValues = PartitionValues{}
			pv.Each(r, func(k string, v *string) { rm.PartitionValues[k] = v })
		}
		rm.DeletionVector = rawDV(dvs.at(r))
		rm.BaseRowID = baseRowID.Int64p(r)
		rm.DefaultRowCommitVersion = defaultRCV.Int64p(r)
		if err := fn(rm); err != nil {
			return err
		}
	}
	return nil
}

func (c *fileColumns) readSidecars(rg parquet.RowGroup, fn func(Action) error) error {
	paths, err := ckptfile.ReadCells(rg, c.scPath)
	if err != nil || len(paths) == 0 {
		return err
	}
	var size, modTime ckptfile.Cursor
	if err := ckptfile.ReadCursors(rg, c.scSize, &size, c.scModTime, &modTime); err != nil {
		return err
	}
	for _, pc := range paths {
		sc := &Sidecar{Path: pc.Str()}
		sc.SizeInBytes, _ = size.Int64(pc.Row)
		sc.ModificationTime, _ = modTime.Int64(pc.Row)
		if err := fn(sc); err != nil {
			return err
		}
	}
	return nil
}
