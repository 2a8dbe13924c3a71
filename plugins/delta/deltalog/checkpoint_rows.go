package deltalog

import (
	"maps"
	"slices"
	"unsafe"

	"github.com/parquet-go/parquet-go"
)

// Checkpoint rows: shredder fills one Parquet row of the checkpoint schema,
// leaf by leaf in column order, from a State's entries.

// shredder builds one Parquet row (every leaf column, in column order).
type shredder struct {
	row parquet.Row
}

func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// null writes n as null; its parent is present (or n is top-level).
func (w *shredder) null(n *cnode, rep int) {
	if rep == 0 {
		if n.nulls == nil {
			for c := n.col; c < n.col+n.nleaves; c++ {
				n.nulls = append(n.nulls, parquet.Value{}.Level(0, n.def-1, c))
			}
		}
		w.row = append(w.row, n.nulls...)
		return
	}
	for c := n.col; c < n.col+n.nleaves; c++ {
		w.row = append(w.row, parquet.Value{}.Level(rep, n.def-1, c))
	}
}

func (w *shredder) value(n *cnode, v parquet.Value) {
	w.row = append(w.row, v.Level(0, n.def, n.col))
}

func (w *shredder) str(n *cnode, s string) {
	w.value(n, parquet.ByteArrayValue(unsafeBytes(s)))
}

func (w *shredder) strOrNull(n *cnode, s string) {
	if s == "" {
		w.null(n, 0)
		return
	}
	w.str(n, s)
}

func (w *shredder) i64(n *cnode, v int64) { w.value(n, parquet.Int64Value(v)) }

func (w *shredder) i64p(n *cnode, v *int64) {
	if v == nil {
		w.null(n, 0)
		return
	}
	w.i64(n, *v)
}

func (w *shredder) boolean(n *cnode, b bool) { w.value(n, parquet.BooleanValue(b)) }

func (w *shredder) list(n *cnode, elems []string, present bool) {
	if !present {
		w.null(n, 0)
		return
	}
	if len(elems) == 0 {
		w.row = append(w.row, parquet.Value{}.Level(0, n.def, n.col))
		return
	}
	for i, e := range elems {
		w.row = append(w.row, parquet.ByteArrayValue(unsafeBytes(e)).Level(min(i, 1), n.def+2, n.col))
	}
}

// mapEntries writes a map given as sorted keys and a value lookup.
func (w *shredder) mapEntries(n *cnode, keys []string, value func(string) (string, bool)) {
	if len(keys) == 0 {
		w.row = append(w.row, parquet.Value{}.Level(0, n.def, n.col), parquet.Value{}.Level(0, n.def, n.col+1))
		return
	}
	for i, k := range keys {
		w.row = append(w.row, parquet.ByteArrayValue(unsafeBytes(k)).Level(min(i, 1), n.def+1, n.col))
	}
	for i, k := range keys {
		if v, ok := value(k); ok {
			w.row = append(w.row, parquet.ByteArrayValue(unsafeBytes(v)).Level(min(i, 1), n.def+2, n.col+1))
		} else {
			w.row = append(w.row, parquet.Value{}.Level(min(i, 1), n.def+1, n.col+1))
		}
	}
}

func (w *shredder) strMap(n *cnode, m map[string]string, present bool) {
	if !present {
		w.null(n, 0)
		return
	}
	w.mapEntries(n, slices.Sorted(maps.Keys(m)), func(k string) (string, bool) { v, ok := m[k]; return v, ok })
}

func (w *shredder) pvMap(n *cnode, pv *pvTuple) {
	if pv == nil {
		w.null(n, 0)
		return
	}
	w.mapEntries(n, pv.keys, func(k string) (string, bool) {
		if v := pv.m[k]; v != nil {
			return *v, true
		}
		return "", false
	})
}

func (w *shredder) dv(n *cnode, dv *DeletionVector) {
	if dv == nil {
		w.null(n, 0)
		return
	}
	for _, k := range n.kids {
		switch k.name {
		case "storageType":
			w.str(k, dv.StorageType)
		case "pathOrInlineDv":
			w.str(k, dv.PathOrInlineDv)
		case "offset":
			if dv.Offset == nil {
				w.null(k, 0)
			} else {
				w.value(k, parquet.Int32Value(*dv.Offset))
			}
		case "sizeInBytes":
			w.value(k, parquet.Int32Value(dv.SizeInBytes))
		case "cardinality":
			w.i64(k, dv.Cardinality)
		case "maxRowIndex":
			w.i64p(k, dv.MaxRowIndex)
		default:
			w.null(k, 0)
		}
	}
}

func (w *shredder) addFields(n *cnode, e *fileEntry, sp *statsWriter) {
	x := e.x
	if x == nil {
		x = &fileExtra{}
	}
	for _, k := range n.kids {
		switch k.name {
		case "path":
			w.str(k, e.path)
		case "partitionValues":
			w.pvMap(k, e.pv)
		case "size":
			w.i64(k, e.size)
		case "modificationTime":
			w.i64(k, e.modTime)
		case "dataChange":
			w.boolean(k, false)
		case "stats":
			w.strOrNull(k, e.stats)
		case "tags":
			w.strMap(k, x.tags, x.tags != nil)
		case "deletionVector":
			w.dv(k, x.dv)
		case "baseRowId":
			w.i64p(k, x.baseRowID)
		case "defaultRowCommitVersion":
			w.i64p(k, x.defaultRowCommitVersion)
		case "clusteringProvider":
			w.strOrNull(k, x.clusteringProvider)
		case "stats_parsed":
			sp.write(w, e.stats)
		default:
			w.null(k, 0)
		}
	}
}

func (w *shredder) removeFields(n *cnode, t *tombEntry) {
	x := t.x
	if x == nil {
		x = &fileExtra{}
	}
	for _, k := range n.kids {
		switch k.name {
		case "path":
			w.str(k, t.path)
		case "deletionTimestamp":
			if t.delTS == 0 {
				w.null(k, 0)
			} else {
				w.i64(k, t.delTS)
			}
		case "dataChange":
			w.boolean(k, false)
		case "extendedFileMetadata":
			if t.flags&tombHasExt == 0 {
				w.null(k, 0)
			} else {
				w.boolean(k, t.flags&tombExtTrue != 0)
			}
		case "partitionValues":
			w.pvMap(k, t.pv)
		case "size":
			if t.flags&tombHasSize == 0 {
				w.null(k, 0)
			} else {
				w.i64(k, t.size)
			}
		case "deletionVector":
			w.dv(k, x.dv)
		case "baseRowId":
			w.i64p(k, x.baseRowID)
		case "defaultRowCommitVersion":
			w.i64p(k, x.defaultRowCommitVersion)
		default:
			w.null(k, 0)
		}
	}
}

// protocolFields, metadataFields, txnFields and domainFields fill the
// fields of one non-file action's row (n is the action's top-level group),
// like addFields and removeFields.

func (w *shredder) protocolFields(n *cnode, p *Protocol) {
	w.value(n.kids[0], parquet.Int32Value(p.MinReaderVersion))
	w.value(n.kids[1], parquet.Int32Value(p.MinWriterVersion))
	w.list(n.kids[2], p.ReaderFeatures, p.MinReaderVersion >= TableFeaturesReaderVersion || p.ReaderFeatures != nil)
	w.list(n.kids[3], p.WriterFeatures, p.MinWriterVersion >= TableFeaturesWriterVersion || p.WriterFeatures != nil)
}

func (w *shredder) metadataFields(n *cnode, m *Metadata) {
	for _, k := range n.kids {
		switch k.name {
		case "id":
			w.str(k, m.ID)
		case "name":
			w.strOrNull(k, m.Name)
		case "description":
			w.strOrNull(k, m.Description)
		case "format":
			w.strOrNull(k.kids[0], m.Format.Provider)
			w.strMap(k.kids[1], m.Format.Options, true)
		case "schemaString":
			w.str(k, m.SchemaString)
		case "partitionColumns":
			w.list(k, m.PartitionColumns, true)
		case "configuration":
			w.strMap(k, m.Configuration, true)
		case "createdTime":
			w.i64p(k, m.CreatedTime)
		}
	}
}

func (w *shredder) txnFields(n *cnode, t *Txn) {
	w.str(n.kids[0], t.AppID)
	w.i64(n.kids[1], t.Version)
	w.i64p(n.kids[2], t.LastUpdated)
}

func (w *shredder) domainFields(n *cnode, d *DomainMetadata) {
	w.str(n.kids[0], d.Domain)
	w.str(n.kids[1], d.Configuration)
	w.boolean(n.kids[2], false)
}
