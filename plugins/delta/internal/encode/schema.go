package encode

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// kind is a Delta type as the decoder sees it.
type kind uint8

const (
	kString kind = iota + 1
	kBinary
	kBool
	kByte
	kShort
	kInt
	kLong
	kFloat
	kDouble
	kDate
	kTimestamp
	kTimestampNTZ
	kDecimal
	kStruct
	kArray
	kMap
)

var kindNames = [...]string{
	kString: "string", kBinary: "binary", kBool: "boolean", kByte: "byte", kShort: "short",
	kInt: "integer", kLong: "long", kFloat: "float", kDouble: "double", kDate: "date",
	kTimestamp: "timestamp", kTimestampNTZ: "timestamp_ntz", kDecimal: "decimal",
	kStruct: "struct", kArray: "array", kMap: "map",
}

func (k kind) String() string { return kindNames[k] }

// node is one value position of the table schema: a column, a nested field,
// an array element, a map key or value. Levels follow the Parquet
// definition/repetition level rules for the file layout built in
// parquet.go (3-level LIST, MAP with key_value).
type node struct {
	kind     kind
	name     string // field name; "" for elements, keys, values
	nullable bool   // may hold null (field nullable / containsNull / valueContainsNull)
	// def is the definition level of a leaf slot when this value is present
	// (not null). A null of this node is written with def-1.
	def uint8
	// repDepth is the repetition level of the innermost repeated group
	// enclosing this node (0 outside arrays and maps).
	repDepth uint8

	// decimal
	precision, scale int

	// leaf column index for primitives (-1 for partition columns, which are
	// not stored in the file).
	leaf int
	// leaves lists every leaf column under this node (itself for a
	// primitive), in file order. Used to write nulls and to roll back.
	leaves []int
	// part is the index into the partition columns for a top-level
	// partition column, else -1; dtype is its Delta type.
	part  int
	dtype deltalog.DataType

	// struct
	fields []*node
	byName map[string]int
	// plainName: the field name needs no escaping in JSON (fast key match)
	plainName bool
	// filled: a top-level column the encoder fills itself (fill.go); the
	// decoder skips its payload field. filledMask has the root's filled
	// fields among its first 64.
	filled     bool
	filledMask uint64
	// capture is 1 + the index of decoder.caps that keeps this top-level
	// field's JSON value for a derivation; 0 when not kept.
	capture int

	// array element / map key+value
	elem, key, val *node
}

func (n *node) typeName() string {
	if n.kind == kDecimal {
		return fmt.Sprintf("decimal(%d,%d)", n.precision, n.scale)
	}
	return n.kind.String()
}

// schemaError is returned by New for schemas the encoder cannot write.
func schemaError(path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if path == "" {
		return fmt.Errorf("encode: unsupported schema: %s", msg)
	}
	return fmt.Errorf("encode: unsupported schema: column %q: %s", path, msg)
}

// compiler turns a deltalog schema into the node tree and the leaf column
// list, in the same depth-first order the Parquet schema uses.
type compiler struct {
	leaves     []*leafInfo // file leaves, in Parquet column order
	fileLeaves int
	partNames  []string
}

// leafInfo is the static description of one Parquet leaf column.
type leafInfo struct {
	node   *node
	path   []string // Parquet column path (includes list/element, key_value/key)
	maxDef uint8
	maxRep uint8
}

func compileSchema(schema *deltalog.StructType, partitionCols []string) (*node, *compiler, error) {
	if schema == nil {
		return nil, nil, schemaError("", "nil schema")
	}
	c := &compiler{partNames: partitionCols}
	root := &node{kind: kStruct, leaf: -1, part: -1}
	partSeen := make([]bool, len(partitionCols))
	for i := range schema.Fields {
		f := &schema.Fields[i]
		part := partIndex(partitionCols, f.Name)
		if part >= 0 {
			if partSeen[part] {
				return nil, nil, schemaError(f.Name, "partition column listed twice")
			}
			partSeen[part] = true
			n, err := c.partitionNode(f, part)
			if err != nil {
				return nil, nil, err
			}
			root.fields = append(root.fields, n)
			continue
		}
		n, err := c.field(f, nil, 0, 0)
		if err != nil {
			return nil, nil, err
		}
		if n != nil {
			root.fields = append(root.fields, n)
			root.leaves = append(root.leaves, n.leaves...)
		}
	}
	for i, seen := range partSeen {
		if !seen {
			return nil, nil, schemaError(partitionCols[i], "partition column is not a top-level column of the schema")
		}
	}
	if len(c.leaves) == 0 {
		return nil, nil, schemaError("", "no column to write (every column is void or a partition column)")
	}
	// Partition values are decoded into columns of their own, after the
	// file's leaves; they never reach the Parquet writer.
	c.fileLeaves = len(c.leaves)
	root.leaves = root.leaves[:0]
	for _, f := range root.fields {
		if f.part >= 0 {
			f.leaf = c.fileLeaves + f.part
			f.leaves = []int{f.leaf}
		}
		root.leaves = append(root.leaves, f.leaves...)
	}
	indexFields(root)
	return root, c, nil
}

// partIndex finds name among the partition columns: exactly, or else
// case-insensitively (Delta column names are unique regardless of case).
func partIndex(partitionCols []string, name string) int {
	for i, p := range partitionCols {
		if p == name {
			return i
		}
	}
	for i, p := range partitionCols {
		if strings.EqualFold(p, name) {
			return i
		}
	}
	return -1
}

func indexFields(n *node) {
	if n.kind != kStruct {
		return
	}
	n.byName = make(map[string]int, len(n.fields))
	for i, f := range n.fields {
		n.byName[f.name] = i
		f.plainName = plainJSONName(f.name)
	}
}

// plainJSONName reports whether name appears in JSON exactly as its bytes
// (no character that must be escaped), so a key can be matched without
// decoding it.
func plainJSONName(name string) bool {
	if !utf8.ValidString(name) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func (c *compiler) partitionNode(f *deltalog.StructField, part int) (*node, error) {
	n := &node{name: f.Name, nullable: f.Nullable, leaf: -1, part: part, dtype: f.Type}
	if f.Nullable {
		n.def = 1
	}
	if err := setPrimitive(n, f.Type, f.Name); err != nil {
		return nil, err
	}
	if n.kind == 0 {
		return nil, schemaError(f.Name, "partition column of type %s", f.Type)
	}
	return n, nil
}

// setPrimitive fills kind (and precision/scale) for primitive Delta types.
// It leaves kind zero for struct/array/map and void, and fails for types the
// encoder cannot write.
func setPrimitive(n *node, t deltalog.DataType, path string) error {
	switch t := t.(type) {
	case deltalog.DecimalType:
		if t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision {
			return schemaError(path, "invalid %s", t)
		}
		n.kind, n.precision, n.scale = kDecimal, t.Precision, t.Scale
	case deltalog.PrimitiveType:
		switch t {
		case deltalog.TypeString:
			n.kind = kString
		case deltalog.TypeBinary:
			n.kind = kBinary
		case deltalog.TypeBoolean:
			n.kind = kBool
		case deltalog.TypeByte:
			n.kind = kByte
		case deltalog.TypeShort:
			n.kind = kShort
		case deltalog.TypeInteger:
			n.kind = kInt
		case deltalog.TypeLong:
			n.kind = kLong
		case deltalog.TypeFloat:
			n.kind = kFloat
		case deltalog.TypeDouble:
			n.kind = kDouble
		case deltalog.TypeDate:
			n.kind = kDate
		case deltalog.TypeTimestamp:
			n.kind = kTimestamp
		case deltalog.TypeTimestampNTZ:
			n.kind = kTimestampNTZ
		case deltalog.TypeVoid:
			// never materialized; the caller drops the field
		default:
			return schemaError(path, "type %q is not supported", string(t))
		}
	case nil:
		return schemaError(path, "missing type")
	}
	return nil
}

// field compiles a struct field. It returns nil for void fields, which are
// never written (PROTOCOL.md "Void Type"); their JSON values are skipped like
// unknown fields.
func (c *compiler) field(f *deltalog.StructField, parentPath []string, parentDef, repDepth uint8) (*node, error) {
	n, err := c.value(f.Type, f.Nullable, append(parentPath[:len(parentPath):len(parentPath)], f.Name), parentDef, repDepth, dotted(parentPath, f.Name))
	if n != nil {
		n.name = f.Name
	}
	return n, err
}

func dotted(parent []string, name string) string {
	if len(parent) == 0 {
		return name
	}
	return strings.Join(parent, ".") + "." + name
}

// maxLevel bounds nesting: Parquet levels are bytes.
const maxLevel = 250

func (c *compiler) value(t deltalog.DataType, nullable bool, path []string, parentDef, repDepth uint8, where string) (*node, error) {
	n := &node{nullable: nullable, leaf: -1, part: -1, repDepth: repDepth}
	n.def = parentDef
	if nullable {
		n.def++
	}
	if n.def > maxLevel || repDepth > maxLevel {
		return nil, schemaError(where, "nested too deeply")
	}
	switch t := t.(type) {
	case *deltalog.StructType:
		n.kind = kStruct
		for i := range t.Fields {
			f := &t.Fields[i]
			child, err := c.field(f, path, n.def, repDepth)
			if err != nil {
				return nil, err
			}
			if child != nil {
				n.fields = append(n.fields, child)
				n.leaves = append(n.leaves, child.leaves...)
			}
		}
		if len(n.fields) == 0 {
			// An empty group is not valid Parquet; a struct of only void
			// fields is refused by the protocol.
			return nil, schemaError(where, "struct with no writable field")
		}
		indexFields(n)
	case *deltalog.ArrayType:
		n.kind = kArray
		elemPath := append(path[:len(path):len(path)], "list", "element")
		e, err := c.value(t.ElementType, t.ContainsNull, elemPath, n.def+1, repDepth+1, where+"[]")
		if err != nil {
			return nil, err
		}
		if e == nil {
			return nil, schemaError(where, "void inside an array")
		}
		n.elem = e
		n.leaves = e.leaves
	case *deltalog.MapType:
		n.kind = kMap
		kvPath := append(path[:len(path):len(path)], "key_value")
		k, err := c.value(t.KeyType, false, append(kvPath[:len(kvPath):len(kvPath)], "key"), n.def+1, repDepth+1, where+".key")
		if err != nil {
			return nil, err
		}
		if k == nil {
			return nil, schemaError(where, "void inside a map")
		}
		switch k.kind {
		case kStruct, kArray, kMap:
			return nil, schemaError(where, "map keys of type %s are not supported (JSON object keys are strings)", k.kind)
		}
		v, err := c.value(t.ValueType, t.ValueContainsNull, append(kvPath[:len(kvPath):len(kvPath)], "value"), n.def+1, repDepth+1, where+".value")
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, schemaError(where, "void inside a map")
		}
		n.key, n.val = k, v
		n.leaves = append(append([]int(nil), k.leaves...), v.leaves...)
	default:
		if err := setPrimitive(n, t, where); err != nil {
			return nil, err
		}
		if n.kind == 0 {
			return nil, nil // void
		}
		n.leaf = len(c.leaves)
		n.leaves = []int{n.leaf}
		c.leaves = append(c.leaves, &leafInfo{node: n, path: path, maxDef: n.def, maxRep: repDepth})
	}
	return n, nil
}
