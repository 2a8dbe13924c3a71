package deltalog

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// Reading the file actions (add, remove, sidecar) of Parquet checkpoints
// and sidecars, for State. Like the non-file reader in checkpoint_read.go,
// columns are found by name (columnLookup) and each is read on its own
// into the cursors of checkpoint_cells.go, so any writer's
// layout works: optional columns present or not, list and map group names,
// INT32 or INT64 integers. readParquetCheckpoint (checkpoint_read.go) reads
// them when the projection wants the file actions.
//
// An add whose stats column is missing or null but that has stats_parsed
// (Spark with delta.checkpoint.writeStatsAsJson=false) gets its stats
// re-serialized to the JSON form: State keeps stats only as JSON, the
// form every reader accepts and the one appends write.

type dvLeaves struct {
	storageType, pathOrInline, offset, size, cardinality, maxRowIndex leaf
}

type fileColumns struct {
	addPath, addSize, addModTime, addDataChange, addStats leaf
	addPV, addTags                                        mapLeaves
	addDV                                                 dvLeaves
	addBaseRowID, addDefaultRCV, addClustering            leaf
	addStatsParsed                                        *parquet.Column

	rmPath, rmDelTS, rmDataChange, rmExt, rmSize leaf
	rmPV                                         mapLeaves
	rmDV                                         dvLeaves
	rmBaseRowID, rmDefaultRCV                    leaf

	scPath, scSize, scModTime leaf
}

func dvLeavesAt(l *columnLookup, action string) dvLeaves {
	return dvLeaves{
		storageType:  l.scalar(action, "deletionVector", "storageType"),
		pathOrInline: l.scalar(action, "deletionVector", "pathOrInlineDv"),
		offset:       l.scalar(action, "deletionVector", "offset"),
		size:         l.scalar(action, "deletionVector", "sizeInBytes"),
		cardinality:  l.scalar(action, "deletionVector", "cardinality"),
		maxRowIndex:  l.scalar(action, "deletionVector", "maxRowIndex"),
	}
}

func lookupFileColumns(l *columnLookup) *fileColumns {
	c := &fileColumns{
		addPath:       l.scalar("add", "path"),
		addSize:       l.scalar("add", "size"),
		addModTime:    l.scalar("add", "modificationTime"),
		addDataChange: l.scalar("add", "dataChange"),
		addStats:      l.scalar("add", "stats"),
		addPV:         l.mapOf("add", "partitionValues"),
		addTags:       l.mapOf("add", "tags"),
		addDV:         dvLeavesAt(l, "add"),
		addBaseRowID:  l.scalar("add", "baseRowId"),
		addDefaultRCV: l.scalar("add", "defaultRowCommitVersion"),
		addClustering: l.scalar("add", "clusteringProvider"),

		rmPath:       l.scalar("remove", "path"),
		rmDelTS:      l.scalar("remove", "deletionTimestamp"),
		rmDataChange: l.scalar("remove", "dataChange"),
		rmExt:        l.scalar("remove", "extendedFileMetadata"),
		rmSize:       l.scalar("remove", "size"),
		rmPV:         l.mapOf("remove", "partitionValues"),
		rmDV:         dvLeavesAt(l, "remove"),
		rmBaseRowID:  l.scalar("remove", "baseRowId"),
		rmDefaultRCV: l.scalar("remove", "defaultRowCommitVersion"),

		scPath:    l.scalar("sidecar", "path"),
		scSize:    l.scalar("sidecar", "sizeInBytes"),
		scModTime: l.scalar("sidecar", "modificationTime"),
	}
	if sp := childColumn(l.root, "add", "stats_parsed"); sp != nil && !sp.Leaf() {
		c.addStatsParsed = sp
	}
	return c
}

type dvCursor struct {
	storageType, pathOrInline, offset, size, cardinality, maxRowIndex cursor
}

func readDVCursor(rg parquet.RowGroup, l dvLeaves) (*dvCursor, error) {
	c := &dvCursor{}
	for _, x := range []struct {
		l leaf
		c *cursor
	}{{l.storageType, &c.storageType}, {l.pathOrInline, &c.pathOrInline}, {l.offset, &c.offset},
		{l.size, &c.size}, {l.cardinality, &c.cardinality}, {l.maxRowIndex, &c.maxRowIndex}} {
		cells, err := readCells(rg, x.l)
		if err != nil {
			return nil, err
		}
		x.c.cells = cells
	}
	return c, nil
}

func (c *dvCursor) at(r int32) *DeletionVector {
	st, ok := c.storageType.str(r)
	if !ok {
		return nil
	}
	dv := &DeletionVector{StorageType: st}
	dv.PathOrInlineDv, _ = c.pathOrInline.str(r)
	if v, ok := c.offset.at(r); ok {
		o := int32(v.int64())
		dv.Offset = &o
	}
	if v, ok := c.size.at(r); ok {
		dv.SizeInBytes = int32(v.int64())
	}
	if v, ok := c.cardinality.at(r); ok {
		dv.Cardinality = v.int64()
	}
	dv.MaxRowIndex = c.maxRowIndex.int64p(r)
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
	paths, err := readCells(rg, c.addPath)
	if err != nil || len(paths) == 0 {
		return err
	}
	var size, modTime, dataChange, stats, baseRowID, defaultRCV, clustering cursor
	if err := readCursors(rg, c.addSize, &size, c.addModTime, &modTime, c.addDataChange, &dataChange,
		c.addStats, &stats, c.addBaseRowID, &baseRowID, c.addDefaultRCV, &defaultRCV, c.addClustering, &clustering); err != nil {
		return err
	}
	pv, err := readMapCursor(rg, c.addPV)
	if err != nil {
		return err
	}
	tags, err := readMapCursor(rg, c.addTags)
	if err != nil {
		return err
	}
	dvs, err := readDVCursor(rg, c.addDV)
	if err != nil {
		return err
	}
	// stats_parsed only for adds without JSON stats.
	var sp *statsParsed
	if c.addStatsParsed != nil && len(stats.cells) < len(paths) {
		if sp, err = readStatsParsed(rg, c.addStatsParsed); err != nil {
			return fmt.Errorf("add.stats_parsed: %w", err)
		}
	}
	for _, pc := range paths {
		r := pc.row
		a := &Add{Path: pc.str(), PartitionValues: PartitionValues{}}
		if v, ok := size.at(r); ok {
			a.Size = v.int64()
		}
		if v, ok := modTime.at(r); ok {
			a.ModificationTime = v.int64()
		}
		if v, ok := dataChange.at(r); ok {
			a.DataChange = v.val.Boolean()
		}
		if s, ok := stats.str(r); ok {
			a.Stats = s
		} else if sp != nil {
			a.Stats = sp.json(r)
		}
		pv.each(r, func(k string, v *string) { a.PartitionValues[k] = v })
		a.Tags = tags.strings(r)
		a.DeletionVector = rawDV(dvs.at(r))
		a.BaseRowID = baseRowID.int64p(r)
		a.DefaultRowCommitVersion = defaultRCV.int64p(r)
		a.ClusteringProvider, _ = clustering.str(r)
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

func (c *fileColumns) readRemoves(rg parquet.RowGroup, fn func(Action) error) error {
	paths, err := readCells(rg, c.rmPath)
	if err != nil || len(paths) == 0 {
		return err
	}
	var delTS, dataChange, ext, size, baseRowID, defaultRCV cursor
	if err := readCursors(rg, c.rmDelTS, &delTS, c.rmDataChange, &dataChange, c.rmExt, &ext, c.rmSize, &size,
		c.rmBaseRowID, &baseRowID, c.rmDefaultRCV, &defaultRCV); err != nil {
		return err
	}
	pv, err := readMapCursor(rg, c.rmPV)
	if err != nil {
		return err
	}
	pvPresent, err := mapPresence(rg, c.rmPV)
	if err != nil {
		return err
	}
	dvs, err := readDVCursor(rg, c.rmDV)
	if err != nil {
		return err
	}
	for _, pc := range paths {
		r := pc.row
		rm := &Remove{Path: pc.str()}
		rm.DeletionTimestamp = delTS.int64p(r)
		if v, ok := dataChange.at(r); ok {
			rm.DataChange = v.val.Boolean()
		}
		if v, ok := ext.at(r); ok {
			b := v.val.Boolean()
			rm.ExtendedFileMetadata = &b
		}
		rm.Size = size.int64p(r)
		if pvPresent.has(r) {
			rm.PartitionValues = PartitionValues{}
			pv.each(r, func(k string, v *string) { rm.PartitionValues[k] = v })
		}
		rm.DeletionVector = rawDV(dvs.at(r))
		rm.BaseRowID = baseRowID.int64p(r)
		rm.DefaultRowCommitVersion = defaultRCV.int64p(r)
		if err := fn(rm); err != nil {
			return err
		}
	}
	return nil
}

func (c *fileColumns) readSidecars(rg parquet.RowGroup, fn func(Action) error) error {
	paths, err := readCells(rg, c.scPath)
	if err != nil || len(paths) == 0 {
		return err
	}
	var size, modTime cursor
	if err := readCursors(rg, c.scSize, &size, c.scModTime, &modTime); err != nil {
		return err
	}
	for _, pc := range paths {
		sc := &Sidecar{Path: pc.str()}
		if v, ok := size.at(pc.row); ok {
			sc.SizeInBytes = v.int64()
		}
		if v, ok := modTime.at(pc.row); ok {
			sc.ModificationTime = v.int64()
		}
		if err := fn(sc); err != nil {
			return err
		}
	}
	return nil
}
