package deltalog

import "github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"

// Checkpoint rows: which field of an action goes into which column of the
// checkpoint schema, for the entries of a State. ckptfile.Row writes the
// values (levels, nulls, physical types).

// writePV writes partitionValues, keys in the order the add listed them.
func writePV(w *ckptfile.Row, n *ckptfile.Field, pv *pvTuple) {
	if pv == nil {
		w.Null(n)
		return
	}
	w.Map(n, pv.keys, func(k string) (string, bool) {
		if v := pv.m[k]; v != nil {
			return *v, true
		}
		return "", false
	})
}

// writeDV writes a deletionVector group (its fields in dvNode's order).
func writeDV(w *ckptfile.Row, n *ckptfile.Field, dv *DeletionVector) {
	if dv == nil {
		w.Null(n)
		return
	}
	k := n.Kids
	w.Str(k[0], dv.StorageType)
	w.Str(k[1], dv.PathOrInlineDv)
	if dv.Offset != nil {
		w.Int32(k[2], *dv.Offset)
	} else {
		w.Null(k[2])
	}
	w.Int32(k[3], dv.SizeInBytes)
	w.Int64(k[4], dv.Cardinality)
	w.Int64p(k[5], dv.MaxRowIndex)
}

// fileField writes field k of an add or remove row when it is one both
// have (path, partitionValues, dataChange — false in a checkpoint, as
// Spark's — deletionVector and the row-tracking fields) and reports
// whether it was.
func fileField(w *ckptfile.Row, k *ckptfile.Field, path string, pv *pvTuple, x *fileExtra) bool {
	switch k.Name {
	case "path":
		w.Str(k, path)
	case "partitionValues":
		writePV(w, k, pv)
	case "dataChange":
		w.Bool(k, false)
	case "deletionVector":
		writeDV(w, k, x.dv)
	case "baseRowId":
		w.Int64p(k, x.baseRowID)
	case "defaultRowCommitVersion":
		w.Int64p(k, x.defaultRowCommitVersion)
	default:
		return false
	}
	return true
}

// noExtra stands for the fields of an entry without a fileExtra.
var noExtra = &fileExtra{}

// extraOr is x, or noExtra when nil.
func extraOr(x *fileExtra) *fileExtra {
	if x == nil {
		return noExtra
	}
	return x
}

func addFields(w *ckptfile.Row, n *ckptfile.Field, e *fileEntry, sp *statsWriter) {
	x := extraOr(e.x)
	for _, k := range n.Kids {
		if fileField(w, k, e.path, e.pv, x) {
			continue
		}
		switch k.Name {
		case "size":
			w.Int64(k, e.size)
		case "modificationTime":
			w.Int64(k, e.modTime)
		case "stats":
			w.StrOrNull(k, e.stats)
		case "tags":
			w.StrMap(k, x.tags, x.tags != nil)
		case "clusteringProvider":
			w.StrOrNull(k, x.clusteringProvider)
		case "stats_parsed":
			sp.write(w, e.stats)
		default:
			w.Null(k)
		}
	}
}

func removeFields(w *ckptfile.Row, n *ckptfile.Field, t *tombEntry) {
	x := extraOr(t.x)
	for _, k := range n.Kids {
		if fileField(w, k, t.path, t.pv, x) {
			continue
		}
		switch {
		case k.Name == "deletionTimestamp" && t.delTS != 0:
			w.Int64(k, t.delTS)
		case k.Name == "extendedFileMetadata" && t.flags&tombHasExt != 0:
			w.Bool(k, t.flags&tombExtTrue != 0)
		case k.Name == "size" && t.flags&tombHasSize != 0:
			w.Int64(k, t.size)
		default: // absent from the remove, or not a remove field
			w.Null(k)
		}
	}
}

// protocolFields, metadataFields, txnFields and domainFields fill the
// fields of one non-file action's row (n is the action's top-level group,
// its fields in the order buildCheckpointSchema declares them).

func protocolFields(w *ckptfile.Row, n *ckptfile.Field, p *Protocol) {
	w.Int32(n.Kids[0], p.MinReaderVersion)
	w.Int32(n.Kids[1], p.MinWriterVersion)
	w.List(n.Kids[2], p.ReaderFeatures, p.MinReaderVersion >= TableFeaturesReaderVersion || p.ReaderFeatures != nil)
	w.List(n.Kids[3], p.WriterFeatures, p.MinWriterVersion >= TableFeaturesWriterVersion || p.WriterFeatures != nil)
}

func metadataFields(w *ckptfile.Row, n *ckptfile.Field, m *Metadata) {
	k := n.Kids
	w.Str(k[0], m.ID)
	w.StrOrNull(k[1], m.Name)
	w.StrOrNull(k[2], m.Description)
	w.StrOrNull(k[3].Kids[0], m.Format.Provider)
	w.StrMap(k[3].Kids[1], m.Format.Options, true)
	w.Str(k[4], m.SchemaString)
	w.List(k[5], m.PartitionColumns, true)
	w.StrMap(k[6], m.Configuration, true)
	w.Int64p(k[7], m.CreatedTime)
}

func txnFields(w *ckptfile.Row, n *ckptfile.Field, t *Txn) {
	w.Str(n.Kids[0], t.AppID)
	w.Int64(n.Kids[1], t.Version)
	w.Int64p(n.Kids[2], t.LastUpdated)
}

func domainFields(w *ckptfile.Row, n *ckptfile.Field, d *DomainMetadata) {
	w.Str(n.Kids[0], d.Domain)
	w.Str(n.Kids[1], d.Configuration)
	w.Bool(n.Kids[2], false)
}
