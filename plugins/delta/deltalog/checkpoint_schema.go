package deltalog

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/shared/pqgroup"
)

// The checkpoint schema: Delta-Spark's column layout (see checkpoint_write.go
// for the decisions) built as a tree of cnodes, from which the Parquet
// schema and each leaf's column index and levels are derived.

type cnodeKind int

const (
	cGroup cnodeKind = iota
	cString
	cInt64
	cInt32
	cBool
	cStrList // list<string>, elements nullable
	cStrMap  // map<string,string>, values nullable
	cTyped   // a stats leaf of a Delta type (dtype)
)

// cnode is one field of the checkpoint schema. Every field is optional.
type cnode struct {
	name     string
	kind     cnodeKind
	kids     []*cnode
	dtype    DataType // cTyped
	col      int      // first leaf column
	nleaves  int
	def      int // definition level when the field is non-null
	minMax   bool
	statPath []string        // cTyped stats leaves: path below minValues/maxValues/nullCount
	nulls    []parquet.Value // the field written as null, cached
}

func group(name string, kids ...*cnode) *cnode { return &cnode{name: name, kind: cGroup, kids: kids} }
func fieldOf(name string, k cnodeKind) *cnode  { return &cnode{name: name, kind: k} }

func (n *cnode) kid(name string) *cnode {
	for _, k := range n.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

// parquetNode renders the field as a parquet-go node.
func (n *cnode) parquetNode() parquet.Node {
	var pn parquet.Node
	switch n.kind {
	case cGroup:
		g := pqgroup.New(len(n.kids))
		for _, k := range n.kids {
			g.Add(k.name, k.parquetNode())
		}
		pn = g
	case cString:
		pn = parquet.String()
	case cInt64:
		pn = parquet.Leaf(parquet.Int64Type)
	case cInt32:
		pn = parquet.Leaf(parquet.Int32Type)
	case cBool:
		pn = parquet.Leaf(parquet.BooleanType)
	case cStrList:
		pn = parquet.List(parquet.Optional(parquet.String()))
	case cStrMap:
		pn = parquet.Map(parquet.String(), parquet.Optional(parquet.String()))
	case cTyped:
		pn = typedNode(n.dtype)
	}
	if pn.Leaf() {
		pn = parquet.Encoded(pn, &parquet.Plain)
	}
	return parquet.Optional(pn)
}

func typedNode(t DataType) parquet.Node {
	switch t := t.(type) {
	case DecimalType:
		switch {
		case t.Precision <= 9:
			return parquet.Decimal(t.Scale, t.Precision, parquet.Int32Type)
		case t.Precision <= 18:
			return parquet.Decimal(t.Scale, t.Precision, parquet.Int64Type)
		default:
			return parquet.Decimal(t.Scale, t.Precision, SignedFixedLenByteArrayType(decimalWidth(t.Precision)))
		}
	case PrimitiveType:
		switch t {
		case TypeByte:
			return parquet.Int(8)
		case TypeShort:
			return parquet.Int(16)
		case TypeInteger:
			return parquet.Leaf(parquet.Int32Type)
		case TypeLong:
			return parquet.Leaf(parquet.Int64Type)
		case TypeFloat:
			return parquet.Leaf(parquet.FloatType)
		case TypeDouble:
			return parquet.Leaf(parquet.DoubleType)
		case TypeDate:
			return parquet.Date()
		case TypeTimestamp:
			return parquet.TimestampAdjusted(parquet.Microsecond, true)
		case TypeTimestampNTZ:
			return parquet.TimestampAdjusted(parquet.Microsecond, false)
		case TypeBoolean:
			return parquet.Leaf(parquet.BooleanType)
		}
	}
	return parquet.String()
}

// decimalWidth is the smallest two's complement byte width holding every
// unscaled value of the precision.
func decimalWidth(precision int) int {
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(precision)), nil)
	for n := 1; ; n++ {
		if limit.Cmp(new(big.Int).Lsh(big.NewInt(1), uint(8*n-1))) <= 0 {
			return n
		}
	}
}

// layout assigns leaf column indexes (depth first, the order parquet-go
// gives a schema's leaves) and definition levels.
func (n *cnode) layout(col *int, parentDef int) {
	n.col, n.def = *col, parentDef+1
	switch n.kind {
	case cGroup:
		for _, k := range n.kids {
			k.layout(col, n.def)
		}
	case cStrMap:
		*col += 2
	default:
		*col++
	}
	n.nleaves = *col - n.col
}

func dvNode() *cnode {
	return group("deletionVector", fieldOf("storageType", cString), fieldOf("pathOrInlineDv", cString),
		fieldOf("offset", cInt32), fieldOf("sizeInBytes", cInt32), fieldOf("cardinality", cInt64),
		fieldOf("maxRowIndex", cInt64))
}

// checkpointSchema is the schema of one checkpoint.
type checkpointSchema struct {
	root                                         *cnode
	txn, add, remove, metaData, protocol, domain *cnode
	schema                                       *parquet.Schema
	ncols                                        int
}

// buildCheckpointSchema returns the schema of st's checkpoint, or with
// sidecar that of a V2 sidecar file (add and remove only).
func buildCheckpointSchema(st *State, o *CheckpointOptions, sidecar bool) (*checkpointSchema, error) {
	conf := st.Metadata.Configuration
	statsJSON := !strings.EqualFold(strings.TrimSpace(conf["delta.checkpoint.writeStatsAsJson"]), "false")
	statsStruct := strings.EqualFold(strings.TrimSpace(conf["delta.checkpoint.writeStatsAsStruct"]), "true")
	var statsParsed *cnode
	if statsStruct {
		mode := strings.ToLower(strings.TrimSpace(conf["delta.columnMapping.mode"]))
		if mode != "" && mode != "none" {
			o.logger().Info("deltalog: not writing add.stats_parsed: the table uses column mapping; stats stay JSON", "mode", mode)
			statsJSON = true
		} else {
			sp, err := statsParsedNode(st)
			if err != nil {
				o.logger().Warn("deltalog: not writing add.stats_parsed; stats stay JSON", "err", err)
				statsJSON = true
			} else {
				statsParsed = sp
			}
		}
	}

	cs := &checkpointSchema{}
	cs.txn = group("txn", fieldOf("appId", cString), fieldOf("version", cInt64), fieldOf("lastUpdated", cInt64))
	addKids := []*cnode{fieldOf("path", cString), fieldOf("partitionValues", cStrMap), fieldOf("size", cInt64),
		fieldOf("modificationTime", cInt64), fieldOf("dataChange", cBool)}
	if statsJSON {
		addKids = append(addKids, fieldOf("stats", cString))
	}
	addKids = append(addKids, fieldOf("tags", cStrMap), dvNode(), fieldOf("baseRowId", cInt64),
		fieldOf("defaultRowCommitVersion", cInt64), fieldOf("clusteringProvider", cString))
	if statsParsed != nil {
		addKids = append(addKids, statsParsed)
	}
	cs.add = group("add", addKids...)
	cs.remove = group("remove", fieldOf("path", cString), fieldOf("deletionTimestamp", cInt64), fieldOf("dataChange", cBool),
		fieldOf("extendedFileMetadata", cBool), fieldOf("partitionValues", cStrMap), fieldOf("size", cInt64),
		dvNode(), fieldOf("baseRowId", cInt64), fieldOf("defaultRowCommitVersion", cInt64))
	cs.metaData = group("metaData", fieldOf("id", cString), fieldOf("name", cString), fieldOf("description", cString),
		group("format", fieldOf("provider", cString), fieldOf("options", cStrMap)),
		fieldOf("schemaString", cString), fieldOf("partitionColumns", cStrList), fieldOf("configuration", cStrMap),
		fieldOf("createdTime", cInt64))
	cs.protocol = group("protocol", fieldOf("minReaderVersion", cInt32), fieldOf("minWriterVersion", cInt32),
		fieldOf("readerFeatures", cStrList), fieldOf("writerFeatures", cStrList))
	cs.domain = group("domainMetadata", fieldOf("domain", cString), fieldOf("configuration", cString), fieldOf("removed", cBool))
	top := []*cnode{cs.txn, cs.add, cs.remove, cs.metaData, cs.protocol, cs.domain}
	if sidecar {
		top = []*cnode{cs.add, cs.remove}
	}
	cs.root = group("", top...)
	col := 0
	for _, k := range cs.root.kids {
		k.layout(&col, 0)
	}
	cs.ncols = col
	g := pqgroup.New(len(cs.root.kids))
	for _, k := range cs.root.kids {
		g.Add(k.name, k.parquetNode())
	}
	cs.schema = parquet.NewSchema("spark_schema", g)
	if n := len(cs.schema.Columns()); n != cs.ncols {
		return nil, fmt.Errorf("deltalog: internal error: checkpoint schema has %d leaf columns, expected %d", n, cs.ncols)
	}
	return cs, nil
}

// statsParsedNode builds add.stats_parsed for the table's indexed columns
// (the columns stats are collected for): numRecords, minValues/maxValues
// (types that have bounds), nullCount (every indexed leaf), and
// tightBounds when the table supports deletion vectors.
func statsParsedNode(st *State) (*cnode, error) {
	schema, err := ParseSchema(st.Metadata.SchemaString)
	if err != nil {
		return nil, err
	}
	sc, err := NewStatsCollectorFor(schema, st.Metadata.PartitionColumns, st.Metadata.Configuration, clusteringColumns(st.domains))
	if err != nil {
		return nil, err
	}
	var build func(n *statsNode, path []string, section string) *cnode
	build = func(n *statsNode, path []string, section string) *cnode {
		var kids []*cnode
		for _, ch := range n.children {
			p := append(slices.Clone(path), ch.name)
			if ch.col == nil {
				if k := build(ch, p, section); k != nil {
					kids = append(kids, k)
				}
				continue
			}
			if section == "nullCount" {
				kids = append(kids, &cnode{name: ch.name, kind: cTyped, dtype: TypeLong, statPath: p})
			} else if ch.col.minMax {
				kids = append(kids, &cnode{name: ch.name, kind: cTyped, dtype: ch.col.Type, statPath: p})
			}
		}
		if len(kids) == 0 {
			return nil
		}
		return group(n.name, kids...)
	}
	kids := []*cnode{fieldOf("numRecords", cInt64)}
	for _, section := range []string{"minValues", "maxValues", "nullCount"} {
		if g := build(sc.root, nil, section); g != nil {
			g.name = section
			kids = append(kids, g)
		}
	}
	if st.Protocol.HasReaderFeature("deletionVectors") {
		kids = append(kids, fieldOf("tightBounds", cBool))
	}
	return group("stats_parsed", kids...), nil
}
