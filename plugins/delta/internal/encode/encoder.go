package encode

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// Options tune an Encoder. The zero value is the documented default.
type Options struct {
	// Configuration is the table's metaData.configuration, handed to
	// deltalog.NewStatsCollectorFor, which reads the statistics keys
	// (delta.dataSkippingStatsColumns, delta.dataSkippingNumIndexedCols,
	// delta.dataSkippingStringPrefixLength). Invalid values make New fail
	// rather than write wrong statistics.
	Configuration map[string]string

	// ExtraStatsColumns are column paths whose statistics are collected
	// whatever the configuration says (clustering columns); passed to
	// deltalog.NewStatsCollectorFor.
	ExtraStatsColumns [][]string

	// CreatedBy is the Parquet footer's created_by. Default
	// "picomq-delta-sink".
	CreatedBy string

	// FileName names the i-th file (0-based) of a Flush, without directory.
	// Default DataFileName: "part-%05d-<random UUID>-c000.snappy.parquet".
	// Names must be unique across the table's life (PROTOCOL.md "Data
	// Files").
	FileName func(i int) string

	// PageBufferSize is the uncompressed size at which a data page is cut.
	// Default 256 KiB (parquet-go's default).
	PageBufferSize int

	// DictionaryEncoding writes string and binary columns RLE_DICTIONARY
	// encoded instead of PLAIN. Default false: see schemaBuilder.encoding
	// for the measurement behind that.
	DictionaryEncoding bool

	// InferUnknown makes the encoder type the top-level fields that name
	// no column from their values, for NewColumns (unknown.go). Default
	// false: they are only listed by Unknown.
	InferUnknown bool

	// DictionaryMaxBytes is the dictionary size after which a dictionary
	// encoded column switches to PLAIN for the rest of the file. Default
	// 1 MiB.
	DictionaryMaxBytes int64

	// Metadata fills the table's top-level pico_* columns (shared/metadata
	// names; any the table lacks are left out) from the Meta given to
	// AddRecord, instead of from the payload: pico_topic (string),
	// pico_partition (integer or long), pico_offset (long), pico_timestamp
	// (long epoch milliseconds, or timestamp/timestamp_ntz), pico_key
	// (binary as sent, string base64, null without a key) and pico_headers
	// (map<string,string>, metadata.HeaderValue for keys and values, every
	// header in order, an empty map without any). A column of another type
	// makes New fail with a *ConfigError. Default false.
	Metadata bool

	// Derive fills columns from a timestamp in another top-level field
	// (see Derivation, ParseDerivations, fill.go). Default none.
	Derive []Derivation
}

const (
	defaultCreatedBy      = "picomq-delta-sink"
	defaultDictionaryMax  = 1 << 20
	defaultNumIndexedCols = 32
	defaultStringPrefix   = 32
)

// Encoder turns JSON records into Parquet data files for one Delta table.
// Build one per table (and a new one when the table's schema or partition
// columns change) and reuse it across batches: it keeps its buffers.
//
// An Encoder is not safe for concurrent use; the sink serializes batches
// per table.
type Encoder struct {
	root   *node
	leaves []*leafInfo // file leaves, Parquet column order
	cols   []*column   // file leaves, then one column per partition column
	nFile  int
	// repeated lists the columns that need per-record slot offsets.
	repeated []*column
	// bytesCols lists the string/binary columns, whose offsets are 32-bit.
	bytesCols []*column

	partNames []string
	partNodes []*node

	fills []*filler // columns filled from Meta or derived (fill.go)

	schema *parquet.Schema
	pw     *parquet.GenericWriter[any]
	stats  *statsFeed
	opts   Options

	dec   decoder
	nrec  int // buffered records
	calls int // Add calls since the last Flush/Reset

	groups   []*group // partitioned tables: one per partition value tuple
	groupIdx map[string]int32
	keyBuf   []byte

	// unknown: the buffered records' top-level fields that name no
	// column, by first appearance; unknownIdx indexes it by name.
	unknown    []unknownField
	unknownIdx map[string]int
	// truncated: the columns of the buffered records whose timestamps lost
	// digits beyond the microsecond (truncated.go).
	truncated []truncatedColumn

	vals    []parquet.Value // Flush scratch
	runs    []run           // Flush scratch
	allRecs []int32         // 0, 1, 2, ...: the records of an unpartitioned file
}

// New builds an Encoder for a table schema (deltalog.ParseSchema of
// metaData.schemaString) and its partition columns (metaData.
// partitionColumns, in order). It fails for schemas it cannot write:
// variant or unknown types, map keys that are structs, arrays or maps, void
// inside arrays or maps, structs with no writable field, partition columns
// that are not top-level primitives, and a table whose every column is a
// partition column or void.
func New(schema *deltalog.StructType, partitionColumns []string, opts Options) (*Encoder, error) {
	root, comp, err := compileSchema(schema, partitionColumns)
	if err != nil {
		return nil, err
	}
	e := &Encoder{
		root:       root,
		leaves:     comp.leaves,
		nFile:      comp.fileLeaves,
		partNames:  append([]string(nil), partitionColumns...),
		opts:       opts,
		groupIdx:   map[string]int32{},
		unknownIdx: map[string]int{},
	}
	if e.opts.CreatedBy == "" {
		e.opts.CreatedBy = defaultCreatedBy
	}
	if e.opts.DictionaryMaxBytes == 0 {
		e.opts.DictionaryMaxBytes = defaultDictionaryMax
	}
	if e.opts.FileName == nil {
		e.opts.FileName = DataFileName
	}
	for _, li := range comp.leaves {
		e.cols = append(e.cols, newColumn(li))
	}
	e.partNodes = make([]*node, len(partitionColumns))
	for _, f := range root.fields {
		if f.part >= 0 {
			e.partNodes[f.part] = f
		}
	}
	for _, n := range e.partNodes {
		e.cols = append(e.cols, newColumn(&leafInfo{node: n, maxDef: n.def}))
	}
	for _, c := range e.cols {
		if c.maxRep > 0 {
			c.recStart = append(c.recStart, 0)
			e.repeated = append(e.repeated, c)
		}
		if c.phys == physBytes {
			e.bytesCols = append(e.bytesCols, c)
		}
	}
	e.dec.cols = e.cols
	var ncap int
	e.fills, e.dec.capNames, ncap, err = compileFills(root, opts)
	if err != nil {
		return nil, err
	}
	e.dec.caps = make([]span, ncap)
	e.dec.metaNames = opts.Metadata

	e.stats, err = newStatsFeed(schema, partitionColumns, root, e.cols, opts)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}

	e.schema = parquetSchema(root, opts.DictionaryEncoding)
	paths := make([][]string, len(e.leaves))
	for i, li := range e.leaves {
		paths[i] = li.path
	}
	wopts := writerOptions(e.schema, e.opts.CreatedBy, e.opts.DictionaryMaxBytes, paths)
	if e.opts.PageBufferSize > 0 {
		wopts = append(wopts, parquet.PageBufferSize(e.opts.PageBufferSize))
	}
	config, err := parquet.NewWriterConfig(wopts...)
	if err != nil {
		return nil, fmt.Errorf("encode: parquet writer config: %w", err)
	}
	e.pw = parquet.NewGenericWriter[any](io.Discard, config)
	if n := len(e.pw.ColumnWriters()); n != e.nFile {
		return nil, fmt.Errorf("encode: internal error: parquet schema has %d leaf columns, encoder %d", n, e.nFile)
	}
	return e, nil
}

// writerOptions are the Parquet writer settings of every data file the
// sink writes, batches and compactions alike.
func writerOptions(schema *parquet.Schema, createdBy string, dictMax int64, leaves [][]string) []parquet.WriterOption {
	wopts := []parquet.WriterOption{
		schema,
		parquet.DataPageVersion(1),
		parquet.Compression(snappyCodec{}),
		parquet.CreatedBy(createdBy, "", ""),
		parquet.DictionaryMaxBytes(dictMax),
		// Belt and braces: leafEncoding sets every leaf's encoding, but no
		// byte array may ever fall back to DELTA_LENGTH_BYTE_ARRAY.
		parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.Plain),
	}
	// Page header statistics duplicate the column index and the column
	// chunk statistics, which readers use instead; computing them costs a
	// second pass over every page.
	for _, p := range leaves {
		wopts = append(wopts, parquet.SkipPageStatistics(p...))
	}
	return wopts
}

// DataFileName is the default Options.FileName: the i-th data file's name,
// Spark's shape with a random UUID. Compaction names its files with it too.
func DataFileName(i int) string {
	return fmt.Sprintf("part-%05d-%s-c000.snappy.parquet", i, uuid.NewString())
}

// Add decodes one record, a JSON object, and buffers it. offset is only
// used in error messages. A record that fails leaves nothing behind: the
// error is a *RecordError (errors.Is(err, ErrInvalidRecord)) and the records
// added before it stay buffered.
//
// Add is AddRecord with a Meta that holds only the offset: an encoder with
// Options.Metadata takes its records through AddRecord.
func (e *Encoder) Add(payload []byte, offset uint64) error {
	return e.AddRecord(payload, &Meta{Offset: offset})
}

// AddRecord is Add with the record's metadata, which Options.Metadata
// writes to the pico_* columns. m.Offset is the offset error messages
// name. Nothing of m is kept.
func (e *Encoder) AddRecord(payload []byte, m *Meta) error {
	offset := m.Offset
	index := e.calls
	e.calls++
	d := &e.dec
	d.reset(payload, e.nrec)
	// The payload is borrowed from the host for one call: keep no reference.
	defer func() { d.buf = nil }()
	if verr := d.record(e.root); verr != nil {
		e.rollback()
		return toRecordError(verr, index, offset)
	}
	if len(e.fills) > 0 {
		if verr := e.fill(m); verr != nil {
			e.rollback()
			return toRecordError(verr, index, offset)
		}
	}
	for _, c := range e.bytesCols {
		if len(c.data) > math.MaxUint32 {
			e.rollback()
			return fmt.Errorf("encode: batch too large: a column holds more than 4 GiB; flush more often")
		}
	}
	for _, c := range e.repeated {
		c.recStart = append(c.recStart, int32(c.slots()))
	}
	if len(e.partNodes) > 0 {
		if _, err := e.groupOf(e.nrec); err != nil {
			e.nrec++ // the record is complete; drop it like a failed one
			e.rollbackLast()
			return toRecordError(err, index, offset)
		}
	}
	e.nrec++
	if len(d.unknown) > 0 {
		e.keepUnknown(offset)
	}
	if len(d.cuts) > 0 {
		e.keepCuts(offset)
	}
	return nil
}

// rollback drops the slots of the record being decoded.
func (e *Encoder) rollback() {
	for _, c := range e.cols {
		if c.maxRep == 0 {
			c.truncate(e.nrec)
		} else {
			c.truncate(int(c.recStart[len(c.recStart)-1]))
		}
	}
}

// rollbackLast drops the last completed record.
func (e *Encoder) rollbackLast() {
	e.nrec--
	for _, c := range e.repeated {
		c.recStart = c.recStart[:len(c.recStart)-1]
	}
	e.rollback()
}

func toRecordError(verr *valueError, index int, offset uint64) *RecordError {
	re := &RecordError{Index: index, Offset: offset, Kind: verr.kind, Detail: verr.detail}
	if verr.kind == ErrInvalidJSON {
		re.Detail += " at byte " + strconv.Itoa(verr.pos)
	}
	re.Field = verr.pathString()
	return re
}

// Matched reports whether the record the last successful Add buffered had
// a top-level field naming a column (partition columns included). Names
// match case-sensitively, so a record whose every field is spelled
// differently from the table's columns is buffered as a row of nulls with
// Matched false; callers count and report those.
func (e *Encoder) Matched() bool { return e.dec.matched }

// Len returns the number of buffered records.
func (e *Encoder) Len() int { return e.nrec }

// BufferedBytes estimates the memory held by buffered values, for callers
// that flush on size.
func (e *Encoder) BufferedBytes() int {
	n := 0
	for _, c := range e.cols {
		n += c.bufferedBytes()
	}
	return n
}

// Reset discards every buffered record. The encoder keeps its memory for
// the next batch.
func (e *Encoder) Reset() {
	for _, c := range e.cols {
		c.reset()
		if c.maxRep > 0 {
			c.recStart = append(c.recStart, 0)
		}
	}
	e.nrec, e.calls = 0, 0
	e.groups = e.groups[:0]
	clear(e.groupIdx)
	e.resetUnknown()
	e.truncated = e.truncated[:0]
}
