package deltalog

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
)

// Checkpoint writing (PROTOCOL.md "Checkpoints", "Checkpoint Schema",
// "Last Checkpoint File Schema"). Decisions:
//
//   - Always a classic single-file checkpoint, NNN.checkpoint.parquet,
//     written with PutIfAbsent: an existing checkpoint for the version (a
//     racing writer's) is kept and counts as success. Multi-part
//     checkpoints are deprecated and UUID-named ones are not needed with
//     put-if-absent (delta-kernel-rs makes the same choice).
//   - Tables with the v2Checkpoint feature get a classic-named V2-spec
//     checkpoint: the same rows plus one checkpointMetadata row, file
//     actions inline (no sidecars) — what delta-kernel-rs writes for them.
//   - Column layout follows Delta-Spark's: top-level txn, add, remove,
//     metaData, protocol, domainMetadata (then checkpointMetadata), every
//     field optional, 3-level lists, key_value maps with optional values,
//     INT32/INT64 exactly as Spark types them. Readers find columns by name.
//   - add.stats is the JSON string unless delta.checkpoint.writeStatsAsJson
//     is false; add.stats_parsed (typed, parsed back from the JSON) only
//     when delta.checkpoint.writeStatsAsStruct is true and the table does
//     not use column mapping (stats_parsed would need physical names).
//     partitionValues_parsed is not written.
//   - Checkpoint rows carry dataChange=false (as Spark's); removes have no
//     stats or tags (PROTOCOL.md: tombstones only serve VACUUM).
//   - Tombstones whose deletionTimestamp is not after now -
//     delta.deletedFileRetentionDuration (default 1 week; no timestamp = 0)
//     and txns whose lastUpdated is at or before now -
//     delta.setTransactionRetentionDuration are left out.
//   - Rows are ordered: protocol, metaData, txns and domains (by id), adds
//     and removes in log order — the same state always encodes the same
//     way.
//   - _last_checkpoint is then written, never moved backwards (see
//     WriteLastCheckpoint).

// CheckpointPath is the classic checkpoint file of version.
func CheckpointPath(version int64) string {
	return fmt.Sprintf("%s%020d.checkpoint.parquet", LogDir, version)
}

// ErrCheckpointNotSupported is matched by every refusal to checkpoint a
// table whose protocol this package does not know how to checkpoint.
var ErrCheckpointNotSupported = errors.New("deltalog: this writer cannot checkpoint the table")

// CheckpointSupported reports whether WriteCheckpoint may checkpoint a table
// with this protocol: known versions, no unknown feature (it could change
// what a checkpoint must hold), not catalog-managed (checkpoints there
// follow the catalog's rules).
func CheckpointSupported(p Protocol) error {
	if p.MinReaderVersion > MaxReaderVersion || p.MinWriterVersion > MaxWriterVersion {
		return fmt.Errorf("%w: protocol (reader %d, writer %d)", ErrCheckpointNotSupported, p.MinReaderVersion, p.MinWriterVersion)
	}
	for _, name := range SupportedFeatures(p) {
		f := LookupFeature(name)
		switch {
		case !f.Known:
			return fmt.Errorf("%w: unknown table feature %q", ErrCheckpointNotSupported, name)
		case name == "catalogManaged" || name == "catalogOwned-preview":
			return fmt.Errorf("%w: table feature %q", ErrCheckpointNotSupported, name)
		}
	}
	return nil
}

// CheckpointOptions tunes WriteCheckpoint. The zero value is ready to use.
type CheckpointOptions struct {
	// Now is the clock of tombstone and txn retention. Default time.Now.
	Now func() time.Time
	// Logger receives notes (e.g. stats_parsed skipped). Default: discard.
	Logger *slog.Logger
	// CreatedBy is the Parquet footer's created_by. Default
	// DefaultEngineInfo.
	CreatedBy string
	// RowGroupRows bounds the rows of one Parquet row group (and so the
	// writer's and readers' memory). Default 16384.
	RowGroupRows int
	// Cache, when set, keeps the encoded adds from one checkpoint of a
	// State to the next (checkpoint_cache.go). Default: none, every add
	// is encoded.
	Cache *CheckpointCache
}

func (o *CheckpointOptions) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o *CheckpointOptions) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// CheckpointResult describes a written (or found) checkpoint.
type CheckpointResult struct {
	Version int64
	Path    string
	// Actions is the number of rows (actions) in our encoding, Adds the
	// number of add rows, SizeInBytes the file's size.
	Actions, Adds, SizeInBytes int64
	// Existed is set when the checkpoint file was already there (another
	// writer's); it was left untouched.
	Existed bool
	// LastCheckpointWritten reports whether _last_checkpoint now names this
	// checkpoint because we wrote it (false: it already named this version
	// or a newer one).
	LastCheckpointWritten bool
	// Cache says how the encoding used CheckpointOptions.Cache.
	Cache CheckpointCacheStats
}

// WriteCheckpoint writes the classic checkpoint of st at st.Version with
// PutIfAbsent, then updates _last_checkpoint (never backwards). st is only
// read. A checkpoint must only be written for a committed version, which a
// State loaded from the log always is.
func WriteCheckpoint(ctx context.Context, store Store, st *State, opts *CheckpointOptions) (*CheckpointResult, error) {
	var o CheckpointOptions
	if opts != nil {
		o = *opts
	}
	if err := CheckpointSupported(st.Protocol); err != nil {
		return nil, err
	}
	res := &CheckpointResult{Version: st.Version, Path: CheckpointPath(st.Version)}
	if fi, ok, err := statObject(ctx, store, res.Path); err != nil {
		return nil, err
	} else if ok {
		res.Existed, res.SizeInBytes = true, fi.Size
		res.Actions, res.Adds = checkpointActions(st, o.now())
	} else {
		data, n, adds, cst, err := encodeCheckpoint(ctx, st, &o)
		if err != nil {
			return nil, err
		}
		res.Cache = cst
		res.Actions, res.Adds, res.SizeInBytes = n, adds, int64(len(data))
		err = store.PutIfAbsent(ctx, res.Path, data)
		switch {
		case errors.Is(err, ErrAlreadyExists):
			res.Existed = true
		case err != nil:
			return nil, err
		}
	}
	written, err := WriteLastCheckpoint(ctx, store, LastCheckpoint{
		Version: st.Version, Size: res.Actions, SizeInBytes: res.SizeInBytes, NumOfAddFiles: res.Adds})
	if err != nil {
		return res, fmt.Errorf("deltalog: checkpoint %d written, _last_checkpoint not updated: %w", st.Version, err)
	}
	res.LastCheckpointWritten = written
	return res, nil
}

// checkpointActions counts the rows EncodeCheckpoint would write.
func checkpointActions(st *State, now time.Time) (actions, adds int64) {
	adds = int64(len(st.files))
	actions = 2 + adds + int64(len(st.domains))
	actions += int64(len(liveTxns(st.txns, &st.Metadata, LoadOptions{Now: func() time.Time { return now }})))
	cutoff, expire := st.tombstoneCutoff(now)
	for _, t := range st.tombs {
		if !expire || t.delTS > cutoff {
			actions++
		}
	}
	if st.Protocol.MinReaderVersion >= TableFeaturesReaderVersion && st.Protocol.HasReaderFeature("v2Checkpoint") {
		actions++
	}
	return actions, adds
}

// statObject lists exactly path.
func statObject(ctx context.Context, store Store, path string) (FileInfo, bool, error) {
	files, err := store.List(ctx, path, "")
	if err != nil {
		return FileInfo{}, false, err
	}
	for _, f := range files {
		if f.Path == path {
			return f, true, nil
		}
	}
	return FileInfo{}, false, nil
}

// ---- _last_checkpoint ------------------------------------------------------

// LastCheckpoint is the _last_checkpoint file.
type LastCheckpoint struct {
	Version       int64  `json:"version"`
	Size          int64  `json:"size"`
	Parts         *int64 `json:"parts,omitempty"`
	SizeInBytes   int64  `json:"sizeInBytes"`
	NumOfAddFiles int64  `json:"numOfAddFiles"`
	// Checksum is filled in by WriteLastCheckpoint.
	Checksum string `json:"checksum,omitempty"`
}

// Putter is implemented by stores with an unconditional write (objstore's
// Put). WriteLastCheckpoint uses it to replace _last_checkpoint in one
// request where the store allows; a Put that refuses to replace an
// existing object (ErrAlreadyExists) falls back to delete + PutIfAbsent.
type Putter interface {
	Put(ctx context.Context, path string, data []byte) error
}

// WriteLastCheckpoint points _last_checkpoint at lc.Version unless it
// already names that version or a newer one; it reports whether it wrote.
// The file is only a hint (readers list the log from it and use any newer
// checkpoint they find), and the store offers no compare-and-swap on an
// existing object, so two writers racing here can at worst leave an older
// version in it for a moment; each re-reads after writing and repairs a
// regression it sees.
func WriteLastCheckpoint(ctx context.Context, store Store, lc LastCheckpoint) (bool, error) {
	lc.Checksum = ""
	raw, err := json.Marshal(lc)
	if err != nil {
		return false, err
	}
	sum, err := LastCheckpointChecksum(raw)
	if err != nil {
		return false, err
	}
	lc.Checksum = sum
	data, _ := json.Marshal(lc)
	wrote := false
	for attempt := 0; attempt < 4; attempt++ {
		cur, ok, err := readLastCheckpoint(ctx, store)
		if err != nil {
			return wrote, err
		}
		if ok && cur >= lc.Version {
			return wrote, nil
		}
		exists := ok
		if !ok {
			_, exists, err = statObject(ctx, store, LastCheckpointPath)
			if err != nil {
				return wrote, err
			}
		}
		err = replaceObject(ctx, store, LastCheckpointPath, data, exists)
		if errors.Is(err, ErrAlreadyExists) {
			continue // someone wrote it in between: look again
		}
		if err != nil {
			return wrote, err
		}
		wrote = true
	}
	return wrote, nil
}

func replaceObject(ctx context.Context, store Store, path string, data []byte, exists bool) error {
	if !exists {
		return store.PutIfAbsent(ctx, path, data)
	}
	if p, ok := store.(Putter); ok {
		err := p.Put(ctx, path, data)
		if err == nil || !errors.Is(err, ErrAlreadyExists) {
			return err
		}
	}
	if err := store.Delete(ctx, path); err != nil {
		return err
	}
	return store.PutIfAbsent(ctx, path, data)
}

// LastCheckpointChecksum computes the checksum field of a _last_checkpoint
// JSON (PROTOCOL.md "JSON checksum"): MD5 over the canonical form, any
// top-level checksum key ignored.
func LastCheckpointChecksum(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("deltalog: _last_checkpoint: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return "", errors.New("deltalog: _last_checkpoint is not a JSON object")
	}
	delete(obj, "checksum")
	var pairs [][2]string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		join := func(seg string) string {
			if path == "" {
				return seg
			}
			return path + "+" + seg
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(join(`"`+canonicalEscape(k)+`"`), e)
			}
		case []any:
			for i, e := range x {
				walk(join(strconv.Itoa(i)), e)
			}
		case string:
			pairs = append(pairs, [2]string{path, `"` + canonicalEscape(x) + `"`})
		case json.Number:
			pairs = append(pairs, [2]string{path, x.String()})
		case bool:
			pairs = append(pairs, [2]string{path, strconv.FormatBool(x)})
		case nil:
			pairs = append(pairs, [2]string{path, "null"})
		}
	}
	walk("", obj)
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p[0] + "=" + p[1])
	}
	sum := md5.Sum([]byte(b.String()))
	return hex.EncodeToString(sum[:]), nil
}

// canonicalEscape percent-encodes every octet but a-z A-Z 0-9 - . _ ~.
func canonicalEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
	return b.String()
}

// ---- Schema ------------------------------------------------------------------

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
		g := &ckptGroup{}
		for _, k := range n.kids {
			g.fields = append(g.fields, ckptField{Node: k.parquetNode(), name: k.name})
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

// ckptGroup is a Parquet group whose fields keep their order (parquet.Group
// is a map and sorts them by name).
type ckptGroup struct{ fields []parquet.Field }

type ckptField struct {
	parquet.Node
	name string
}

func (f ckptField) Name() string                      { return f.name }
func (f ckptField) Value(reflect.Value) reflect.Value { return reflect.Value{} }

func (g *ckptGroup) ID() int                     { return 0 }
func (g *ckptGroup) Type() parquet.Type          { return parquet.Group{}.Type() }
func (g *ckptGroup) Optional() bool              { return false }
func (g *ckptGroup) Repeated() bool              { return false }
func (g *ckptGroup) Required() bool              { return true }
func (g *ckptGroup) Leaf() bool                  { return false }
func (g *ckptGroup) Fields() []parquet.Field     { return g.fields }
func (g *ckptGroup) Encoding() encoding.Encoding { return nil }
func (g *ckptGroup) Compression() compress.Codec { return nil }
func (g *ckptGroup) String() string              { return parquet.NewSchema("group", g).String() }
func (g *ckptGroup) GoType() reflect.Type {
	sf := make([]reflect.StructField, len(g.fields))
	for i, f := range g.fields {
		sf[i] = reflect.StructField{Name: "F" + strconv.Itoa(i), Type: f.GoType(),
			Tag: reflect.StructTag(`parquet:"` + strings.ReplaceAll(f.Name(), `"`, ``) + `"`)}
	}
	return reflect.StructOf(sf)
}

func dvNode() *cnode {
	return group("deletionVector", fieldOf("storageType", cString), fieldOf("pathOrInlineDv", cString),
		fieldOf("offset", cInt32), fieldOf("sizeInBytes", cInt32), fieldOf("cardinality", cInt64),
		fieldOf("maxRowIndex", cInt64))
}

// checkpointSchema is the schema of one checkpoint.
type checkpointSchema struct {
	root                                               *cnode
	txn, add, remove, metaData, protocol, domain, cpMD *cnode
	schema                                             *parquet.Schema
	ncols                                              int
}

func buildCheckpointSchema(st *State, o *CheckpointOptions) (*checkpointSchema, error) {
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
	if st.Protocol.MinReaderVersion >= TableFeaturesReaderVersion && st.Protocol.HasReaderFeature("v2Checkpoint") {
		cs.cpMD = group("checkpointMetadata", fieldOf("version", cInt64), fieldOf("tags", cStrMap))
		top = append(top, cs.cpMD)
	}
	cs.root = group("", top...)
	col := 0
	for _, k := range cs.root.kids {
		k.layout(&col, 0)
	}
	cs.ncols = col
	g := &ckptGroup{}
	for _, k := range cs.root.kids {
		g.fields = append(g.fields, ckptField{Node: k.parquetNode(), name: k.name})
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

// ---- Rows --------------------------------------------------------------------

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

// top writes a row holding one action: fill writes the target's fields,
// every other top-level column is null.
func (w *shredder) top(cs *checkpointSchema, target *cnode, fill func()) {
	for _, k := range cs.root.kids {
		if k == target {
			fill()
		} else {
			w.null(k, 0)
		}
	}
}

// EncodeCheckpoint renders st as a classic checkpoint's Parquet bytes and
// returns them with the number of actions (rows) and of adds. With
// opts.Cache it reuses the adds that cache encoded for st before (and the
// cache follows st from then on), and the bytes are only valid until the
// cache's next checkpoint; without, every row is encoded.
func EncodeCheckpoint(ctx context.Context, st *State, opts *CheckpointOptions) (data []byte, actions, adds int64, err error) {
	data, actions, adds, _, err = encodeCheckpoint(ctx, st, opts)
	return data, actions, adds, err
}

func encodeCheckpoint(ctx context.Context, st *State, opts *CheckpointOptions) ([]byte, int64, int64, CheckpointCacheStats, error) {
	var o CheckpointOptions
	if opts != nil {
		o = *opts
	}
	c := o.Cache
	if c == nil {
		c = &CheckpointCache{oneShot: true}
	}
	return c.encode(ctx, st, &o)
}

// filesInOrder and tombsInOrder return the entries in the order they
// reached the state (log order): checkpoints of the same state are
// identical, and sorting integers is much cheaper than sorting paths.
func filesInOrder(m map[string]fileEntry) []fileEntry {
	out := slices.AppendSeq(make([]fileEntry, 0, len(m)), maps.Values(m))
	slices.SortFunc(out, func(a, b fileEntry) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

func tombsInOrder(m map[string]tombEntry) []tombEntry {
	out := slices.AppendSeq(make([]tombEntry, 0, len(m)), maps.Values(m))
	slices.SortFunc(out, func(a, b tombEntry) int { return cmp.Compare(a.seq, b.seq) })
	return out
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

// ---- stats_parsed ------------------------------------------------------------

// statsWriter fills add.stats_parsed from an add's stats JSON.
type statsWriter struct {
	n *cnode
}

func (s *statsWriter) write(w *shredder, stats string) {
	if stats == "" {
		w.null(s.n, 0)
		return
	}
	dec := json.NewDecoder(strings.NewReader(stats))
	dec.UseNumber()
	var obj map[string]any
	if dec.Decode(&obj) != nil {
		w.null(s.n, 0)
		return
	}
	for _, k := range s.n.kids {
		switch k.name {
		case "numRecords":
			if n, ok := obj["numRecords"].(json.Number); ok {
				if v, err := n.Int64(); err == nil {
					w.i64(k, v)
					continue
				}
			}
			w.null(k, 0)
		case "tightBounds":
			if b, ok := obj["tightBounds"].(bool); ok {
				w.boolean(k, b)
			} else {
				w.null(k, 0)
			}
		default: // minValues, maxValues, nullCount
			section, _ := obj[k.name].(map[string]any)
			s.writeStruct(w, k, section)
		}
	}
}

func (s *statsWriter) writeStruct(w *shredder, n *cnode, obj map[string]any) {
	if obj == nil {
		w.null(n, 0)
		return
	}
	for _, k := range n.kids {
		v, ok := obj[k.name]
		if !ok || v == nil {
			w.null(k, 0)
			continue
		}
		if k.kind == cGroup {
			sub, _ := v.(map[string]any)
			s.writeStruct(w, k, sub)
			continue
		}
		if pv, ok := statParquetValue(k.dtype, v); ok {
			w.value(k, pv)
		} else {
			w.null(k, 0)
		}
	}
}

// statParquetValue converts one JSON stats value to the Parquet value of its
// column type; false when it does not parse (the bound is then left out,
// which only disables skipping on it).
func statParquetValue(t DataType, v any) (parquet.Value, bool) {
	num, isNum := v.(json.Number)
	str, isStr := v.(string)
	switch t := t.(type) {
	case DecimalType:
		if !isNum {
			return parquet.Value{}, false
		}
		r, ok := new(big.Rat).SetString(num.String())
		if !ok {
			return parquet.Value{}, false
		}
		u, err := unscaledDecimal(r, t)
		if err != nil {
			return parquet.Value{}, false
		}
		switch {
		case t.Precision <= 9:
			return parquet.Int32Value(int32(u.Int64())), true
		case t.Precision <= 18:
			return parquet.Int64Value(u.Int64()), true
		default:
			return parquet.FixedLenByteArrayValue(twosComplementBytes(u, decimalWidth(t.Precision))), true
		}
	case PrimitiveType:
		switch t {
		case TypeByte, TypeShort, TypeInteger:
			if n, err := num.Int64(); isNum && err == nil {
				return parquet.Int32Value(int32(n)), true
			}
		case TypeLong:
			if n, err := num.Int64(); isNum && err == nil {
				return parquet.Int64Value(n), true
			}
		case TypeFloat:
			if f, err := num.Float64(); isNum && err == nil {
				return parquet.FloatValue(float32(f)), true
			}
		case TypeDouble:
			if f, err := num.Float64(); isNum && err == nil {
				return parquet.DoubleValue(f), true
			}
		case TypeDate:
			if d, err := time.Parse("2006-01-02", str); isStr && err == nil {
				return parquet.Int32Value(int32(floorDiv(d.Unix(), 86400))), true
			}
		case TypeTimestamp, TypeTimestampNTZ:
			if isStr {
				if ts, ok := parseStatTimestamp(str); ok {
					return parquet.Int64Value(ts.UnixMicro()), true
				}
			}
		case TypeString:
			if isStr {
				return parquet.ByteArrayValue([]byte(str)), true
			}
		case TypeBoolean:
			if b, ok := v.(bool); ok {
				return parquet.BooleanValue(b), true
			}
		}
	}
	return parquet.Value{}, false
}

func parseStatTimestamp(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// twosComplementBytes renders x big-endian in width bytes.
func twosComplementBytes(x *big.Int, width int) []byte {
	out := make([]byte, width)
	v := new(big.Int).Set(x)
	if v.Sign() < 0 {
		v.Add(v, new(big.Int).Lsh(big.NewInt(1), uint(8*width)))
	}
	b := v.Bytes()
	copy(out[width-len(b):], b)
	return out
}
