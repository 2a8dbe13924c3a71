package deltalog

import (
	"slices"
	"strings"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"
)

// The checkpoint schema: Delta-Spark's column layout (see checkpoint_write.go
// for the decisions) declared as a tree of ckptfile fields, which lays it
// out as a Parquet schema.

// checkpointSchema is the schema of one checkpoint (or sidecar) and its
// actions' top-level fields.
type checkpointSchema struct {
	file                                         *ckptfile.Schema
	txn, add, remove, metaData, protocol, domain *ckptfile.Field
	// stats fills add.stats_parsed; nil when the checkpoint has none.
	stats *statsWriter
}

// Short names for the schema's declaration.
var group, fieldOf = ckptfile.NewGroup, ckptfile.NewLeaf

const cString, cInt64, cInt32, cBool = ckptfile.String, ckptfile.Int64, ckptfile.Int32, ckptfile.Bool
const cList, cMap = ckptfile.StringList, ckptfile.StringMap

func dvNode() *ckptfile.Field {
	return group("deletionVector",
		fieldOf("storageType", cString), fieldOf("pathOrInlineDv", cString), fieldOf("offset", cInt32),
		fieldOf("sizeInBytes", cInt32), fieldOf("cardinality", cInt64), fieldOf("maxRowIndex", cInt64))
}

// buildCheckpointSchema returns the schema of st's checkpoint, or with
// sidecar that of a V2 sidecar file (add and remove only).
func buildCheckpointSchema(st *State, o *CheckpointOptions, sidecar bool) (*checkpointSchema, error) {
	statsJSON, statsParsed := checkpointStatsColumns(st, o)
	cs := &checkpointSchema{}
	cs.txn = group("txn", fieldOf("appId", cString), fieldOf("version", cInt64), fieldOf("lastUpdated", cInt64))
	addKids := []*ckptfile.Field{fieldOf("path", cString), fieldOf("partitionValues", cMap), fieldOf("size", cInt64),
		fieldOf("modificationTime", cInt64), fieldOf("dataChange", cBool)}
	if statsJSON {
		addKids = append(addKids, fieldOf("stats", cString))
	}
	addKids = append(addKids, fieldOf("tags", cMap), dvNode(), fieldOf("baseRowId", cInt64),
		fieldOf("defaultRowCommitVersion", cInt64), fieldOf("clusteringProvider", cString))
	if statsParsed != nil {
		addKids = append(addKids, statsParsed)
		cs.stats = &statsWriter{n: statsParsed}
	}
	cs.add = group("add", addKids...)
	cs.remove = group("remove", fieldOf("path", cString), fieldOf("deletionTimestamp", cInt64),
		fieldOf("dataChange", cBool), fieldOf("extendedFileMetadata", cBool),
		fieldOf("partitionValues", cMap), fieldOf("size", cInt64), dvNode(), fieldOf("baseRowId", cInt64),
		fieldOf("defaultRowCommitVersion", cInt64))
	cs.metaData = group("metaData", fieldOf("id", cString), fieldOf("name", cString), fieldOf("description", cString),
		group("format", fieldOf("provider", cString), fieldOf("options", cMap)),
		fieldOf("schemaString", cString), fieldOf("partitionColumns", cList),
		fieldOf("configuration", cMap), fieldOf("createdTime", cInt64))
	cs.protocol = group("protocol", fieldOf("minReaderVersion", cInt32), fieldOf("minWriterVersion", cInt32),
		fieldOf("readerFeatures", cList), fieldOf("writerFeatures", cList))
	cs.domain = group("domainMetadata", fieldOf("domain", cString), fieldOf("configuration", cString),
		fieldOf("removed", cBool))
	top := []*ckptfile.Field{cs.txn, cs.add, cs.remove, cs.metaData, cs.protocol, cs.domain}
	if sidecar {
		top = []*ckptfile.Field{cs.add, cs.remove}
	}
	var err error
	cs.file, err = ckptfile.NewSchema(top...)
	return cs, err
}

// checkpointStatsColumns decides the add stats columns of st's
// checkpoint: add.stats (JSON) unless delta.checkpoint.writeStatsAsJson is
// false, and add.stats_parsed (returned, else nil) when
// delta.checkpoint.writeStatsAsStruct is true and the table does not use
// column mapping. When stats_parsed cannot be written the JSON column is,
// so the stats are never lost.
func checkpointStatsColumns(st *State, o *CheckpointOptions) (statsJSON bool, statsParsed *ckptfile.Field) {
	conf := st.Metadata.Configuration
	statsJSON = !strings.EqualFold(strings.TrimSpace(conf["delta.checkpoint.writeStatsAsJson"]), "false")
	if !strings.EqualFold(strings.TrimSpace(conf["delta.checkpoint.writeStatsAsStruct"]), "true") {
		return statsJSON, nil
	}
	if mode := strings.ToLower(strings.TrimSpace(conf["delta.columnMapping.mode"])); mode != "" && mode != "none" {
		o.logger().Info("deltalog: not writing add.stats_parsed: the table uses column mapping; stats stay JSON", "mode", mode)
		return true, nil
	}
	sp, err := statsParsedNode(st)
	if err != nil {
		o.logger().Warn("deltalog: not writing add.stats_parsed; stats stay JSON", "err", err)
		return true, nil
	}
	return statsJSON, sp
}

// statsParsedNode builds add.stats_parsed for the table's indexed columns
// (the columns stats are collected for): numRecords, minValues/maxValues
// (types that have bounds), nullCount (every indexed leaf), and
// tightBounds when the table supports deletion vectors.
func statsParsedNode(st *State) (*ckptfile.Field, error) {
	schema, err := ParseSchema(st.Metadata.SchemaString)
	if err != nil {
		return nil, err
	}
	sc, err := NewStatsCollectorFor(schema, st.Metadata.PartitionColumns, st.Metadata.Configuration, clusteringColumns(st.domains))
	if err != nil {
		return nil, err
	}
	var build func(n *statsNode, path []string, section string) *ckptfile.Field
	build = func(n *statsNode, path []string, section string) *ckptfile.Field {
		var kids []*ckptfile.Field
		for _, ch := range n.children {
			p := append(slices.Clone(path), ch.name)
			if ch.col == nil {
				if k := build(ch, p, section); k != nil {
					kids = append(kids, k)
				}
				continue
			}
			if section == "nullCount" {
				kids = append(kids, fieldOf(ch.name, cInt64))
			} else if ch.col.minMax {
				kids = append(kids, statField(ch.name, ch.col.Type))
			}
		}
		if len(kids) == 0 {
			return nil
		}
		return group(n.name, kids...)
	}
	kids := []*ckptfile.Field{fieldOf("numRecords", cInt64)}
	for _, section := range []string{"minValues", "maxValues", "nullCount"} {
		if g := build(sc.root, nil, section); g != nil {
			g.Name = section
			kids = append(kids, g)
		}
	}
	if st.Protocol.HasReaderFeature("deletionVectors") {
		kids = append(kids, fieldOf("tightBounds", cBool))
	}
	return group("stats_parsed", kids...), nil
}

// statField is the stats_parsed leaf of a column of Delta type t: its
// Parquet type is the one Delta-Spark gives t in data files.
func statField(name string, t DataType) *ckptfile.Field {
	switch t := t.(type) {
	case DecimalType:
		return ckptfile.NewDecimal(name, t.Precision, t.Scale)
	case PrimitiveType:
		if k, ok := statKinds[t]; ok {
			return fieldOf(name, k)
		}
	}
	return fieldOf(name, ckptfile.String)
}

// statKinds are the leaf kinds of the primitive types with stats.
var statKinds = map[PrimitiveType]ckptfile.Kind{
	TypeByte: ckptfile.Int8, TypeShort: ckptfile.Int16, TypeInteger: ckptfile.Int32, TypeLong: ckptfile.Int64,
	TypeFloat: ckptfile.Float, TypeDouble: ckptfile.Double, TypeDate: ckptfile.Date,
	TypeTimestamp: ckptfile.Timestamp, TypeTimestampNTZ: ckptfile.TimestampNTZ, TypeBoolean: ckptfile.Bool,
}
