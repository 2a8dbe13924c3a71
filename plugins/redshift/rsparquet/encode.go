package rsparquet

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// Record is one record to encode. Key and Payload may be borrowed: Encode
// copies them into the file and keeps no reference after it returns.
type Record struct {
	Offset    uint64
	Timestamp int64  // epoch milliseconds
	Key       []byte // nil when the record has no key (pico_key NULL)
	Payload   []byte
	// With write_mode = "upsert" (layouts with key columns): the change,
	// rsql.OpUpsert or rsql.OpDelete (whose Payload is nil and staged as
	// NULL), and the text of each key column, in key_columns order.
	Change    string
	KeyValues [][]byte
}

// Chunk is the rows of one Parquet file: records of one topic partition
// and the created_at every row of the chunk carries.
type Chunk struct {
	Topic     string
	Partition uint32
	CreatedAt string // RFC 3339
	Records   []Record
}

const (
	// pageTarget is the uncompressed size at which a page is cut (on a row
	// boundary; one value larger than this is a page of its own).
	pageTarget = 256 << 10

	// zstdWindow bounds the compressor's history. Pages are cut at 256 KiB,
	// so a larger window would only matter inside one huge payload, and
	// would cost its size in memory on every encoder.
	zstdWindow = 1 << 20

	// keepBuffer is the largest file buffer the encoder keeps for the next
	// chunk. A larger one (a chunk of huge records) is handed to the caller
	// and forgotten, so one huge record does not pin its memory for the
	// life of the sink.
	keepBuffer = 8 << 20

	createdBy = "picomq redshift_sink"
)

// Encoder turns chunks into Parquet files: one row group, v1 data pages,
// zstd, columns in layout order with the types Schema documents. It reuses
// its buffers between calls and is not safe for concurrent use.
//
// It writes the file itself rather than through a generic Parquet writer so
// that a value is copied exactly once, from the record into the compressor
// that appends to the file: a generic writer buffers each value in a column
// buffer, an encoded page, a compressed page and a column chunk before the
// file, which for a 16 MiB payload costs several times its size.
type Encoder struct {
	layout *rsql.Layout
	zw     *zstd.Encoder
	out    []byte   // the file
	vals   []byte   // PLAIN values of the page being built
	levels []byte   // definition levels of the page being built
	hdr    []byte   // scratch for a page header
	parts  [][]byte // the pieces of one page, in order
	lens   []byte   // length prefixes of the payloads of one page
	min    [][]byte // per column, statistics
	max    [][]byte
	meta   format.FileMetaData
	schema []format.SchemaElement
	orders []format.ColumnOrder
	chunks []format.ColumnChunk
}

// NewEncoder returns an encoder for the layout's columns.
func NewEncoder(l *rsql.Layout) *Encoder {
	zw, err := zstd.NewWriter(nil,
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithWindowSize(zstdWindow),
		zstd.WithZeroFrames(true),
		zstd.WithEncoderCRC(false),
	)
	if err != nil {
		panic(err) // only for invalid options, which are constant
	}
	e := &Encoder{layout: l, zw: zw, schema: Schema(l)}
	n := len(l.Columns)
	e.min, e.max = make([][]byte, n), make([][]byte, n)
	for i := range n {
		// Never nil: an empty smallest value is written as present and
		// empty, where nil would leave the field out.
		e.min[i], e.max[i] = []byte{}, []byte{}
	}
	e.orders = make([]format.ColumnOrder, n)
	for i := range e.orders {
		e.orders[i] = format.ColumnOrder{Value: &format.TypeDefinedOrder{}}
	}
	e.chunks = make([]format.ColumnChunk, n)
	return e
}

// Schema returns the Parquet schema elements of a layout: the root, then
// one column per layout column, in layout order, which is the order of the
// COPY column list (Redshift maps Parquet columns by position).
//
//   - VARCHAR columns are BYTE_ARRAY with the String logical type (UTF8).
//   - pico_partition is INT64, annotated INT(64, signed).
//   - payload is BYTE_ARRAY without annotation for varbyte, a String for text.
//   - pico_key is optional (NULL when a record has no key), and so is the
//     staging payload of write_mode = "upsert" (NULL for a delete).
//   - upsert's staging columns: the key columns and pico_op are strings,
//     pico_change_partition and pico_change_offset INT64.
//
// pico_topic, pico_change_topic and created_at hold one value per chunk
// and are dictionary encoded; every other column is PLAIN. PLAIN and dictionary pages are what
// every Parquet reader, Redshift's included, handles.
func Schema(l *rsql.Layout) []format.SchemaElement {
	out := make([]format.SchemaElement, 0, 1+len(l.Columns))
	out = append(out, format.SchemaElement{Name: "picomq_redshift", NumChildren: thrift.New(int32(len(l.Columns)))})
	for _, c := range l.Columns {
		el := format.SchemaElement{Name: c.Name, RepetitionType: thrift.New(format.Required)}
		if c.Nullable {
			el.RepetitionType = thrift.New(format.Optional)
		}
		switch c.Family {
		case rsql.FamilyBigint:
			el.Type = thrift.New(format.Int64)
			el.ConvertedType = thrift.New(deprecated.Int64)
			el.LogicalType = format.LogicalType{Value: &format.IntType{BitWidth: 64, IsSigned: true}}
		case rsql.FamilyVarbyte:
			el.Type = thrift.New(format.ByteArray)
		default:
			el.Type = thrift.New(format.ByteArray)
			el.ConvertedType = thrift.New(deprecated.UTF8)
			el.LogicalType = format.LogicalType{Value: &format.StringType{}}
		}
		out = append(out, el)
	}
	return out
}

// Encode writes c as one Parquet file and returns its bytes, which stay
// valid until the next call. c must have passed Check: Encode does not
// measure values against column limits.
func (e *Encoder) Encode(c Chunk) ([]byte, error) {
	if len(c.Records) == 0 {
		return nil, fmt.Errorf("rsparquet: a file needs at least one row")
	}
	// The file goes into one buffer sized up front, so that a huge payload
	// is never copied by the buffer growing.
	if need := e.sizeBound(c); cap(e.out) < need {
		e.out = make([]byte, 0, need)
	}
	defer func() {
		clear(e.parts) // they point into borrowed payloads
		if cap(e.out) > keepBuffer {
			e.out = nil
		}
	}()
	e.out = append(e.out[:0], "PAR1"...)
	var total int64
	for col, spec := range e.layout.Columns {
		cc := &e.chunks[col]
		*cc = format.ColumnChunk{MetaData: format.ColumnMetaData{
			Type:         format.ByteArray,
			PathInSchema: thrift.Slice[string]{spec.Name},
			Codec:        format.Zstd,
			NumValues:    int64(len(c.Records)),
		}}
		if err := e.column(col, spec, c, &cc.MetaData); err != nil {
			return nil, err
		}
		total += cc.MetaData.TotalUncompressedSize
	}
	e.meta = format.FileMetaData{
		Version: 2,
		Schema:  e.schema,
		NumRows: int64(len(c.Records)),
		RowGroups: thrift.Slice[format.RowGroup]{{
			Columns:             e.chunks,
			TotalByteSize:       total,
			NumRows:             int64(len(c.Records)),
			FileOffset:          4,
			TotalCompressedSize: int64(len(e.out) - 4),
		}},
		CreatedBy:    createdBy,
		ColumnOrders: e.orders,
	}
	start := len(e.out)
	if err := thrift.NewEncoder(new(thrift.CompactProtocol).NewWriter(appender{&e.out})).Encode(&e.meta); err != nil {
		return nil, fmt.Errorf("rsparquet: file footer: %w", err)
	}
	e.out = binary.LittleEndian.AppendUint32(e.out, uint32(len(e.out)-start))
	e.out = append(e.out, "PAR1"...)
	return e.out, nil
}

// column writes the column chunk of one layout column.
func (e *Encoder) column(col int, spec rsql.Column, c Chunk, md *format.ColumnMetaData) error {
	e.min[col], e.max[col] = e.min[col][:0], e.max[col][:0]
	stats := &md.Statistics
	switch spec.ID {
	case rsql.Partition:
		md.Type = format.Int64
		md.Encoding = thrift.Slice[format.Encoding]{format.Plain}
		v := binary.LittleEndian.AppendUint64(nil, uint64(c.Partition))
		stats.MinValue, stats.MaxValue = v, v
		for lo := 0; lo < len(c.Records); {
			hi := min(len(c.Records), lo+pageTarget/8)
			e.vals = e.vals[:0]
			for range hi - lo {
				e.vals = append(e.vals, v...)
			}
			if err := e.dataPage(md, format.Plain, hi-lo, e.vals); err != nil {
				return err
			}
			lo = hi
		}
		return nil

	case rsql.ChangePart:
		md.Type = format.Int64
		md.Encoding = thrift.Slice[format.Encoding]{format.Plain}
		v := binary.LittleEndian.AppendUint64(nil, uint64(c.Partition))
		stats.MinValue, stats.MaxValue = v, v
		return e.int64Column(md, len(c.Records), func(int) uint64 { return uint64(c.Partition) })

	case rsql.ChangeOffset:
		md.Type = format.Int64
		md.Encoding = thrift.Slice[format.Encoding]{format.Plain}
		lo, hi := c.Records[0].Offset, c.Records[0].Offset
		for i := range c.Records {
			lo, hi = min(lo, c.Records[i].Offset), max(hi, c.Records[i].Offset)
		}
		stats.MinValue = binary.LittleEndian.AppendUint64(nil, lo)
		stats.MaxValue = binary.LittleEndian.AppendUint64(nil, hi)
		return e.int64Column(md, len(c.Records), func(i int) uint64 { return c.Records[i].Offset })

	case rsql.Topic, rsql.CreatedAt, rsql.ChangeTopic:
		v := c.Topic
		if spec.ID == rsql.CreatedAt {
			v = c.CreatedAt
		}
		return e.dictColumn(md, []byte(v), len(c.Records))

	case rsql.Payload:
		md.Encoding = thrift.Slice[format.Encoding]{format.Plain}
		if spec.Nullable {
			md.Encoding = append(md.Encoding, format.RLE) // definition levels
		}
		return e.payloadColumn(md, c.Records, spec.Nullable)
	}

	md.Encoding = thrift.Slice[format.Encoding]{format.Plain}
	if spec.Nullable {
		md.Encoding = append(md.Encoding, format.RLE) // definition levels
	}
	lo, nulls := 0, 0
	e.vals = e.vals[:0]
	for i := range c.Records {
		r := &c.Records[i]
		start := len(e.vals)
		e.vals = append(e.vals, 0, 0, 0, 0) // length prefix, set below
		switch spec.ID {
		case rsql.ID:
			e.vals = metadata.AppendRecordID(e.vals, c.Topic, c.Partition, r.Offset)
		case rsql.Offset:
			e.vals = strconv.AppendUint(e.vals, r.Offset, 10)
		case rsql.Timestamp:
			e.vals = strconv.AppendInt(e.vals, r.Timestamp, 10)
		case rsql.Key:
			var ok bool
			if e.vals, ok = metadata.AppendKeyBase64(e.vals, r.Key); !ok {
				e.vals = e.vals[:start]
				nulls++
			}
		case rsql.KeyColumn:
			if spec.KeyIndex >= len(r.KeyValues) {
				return fmt.Errorf("rsparquet: record at offset %d has no value for key column %s", r.Offset, spec.Name)
			}
			e.vals = append(e.vals, r.KeyValues[spec.KeyIndex]...)
		case rsql.ChangeOp:
			e.vals = append(e.vals, r.Change...)
		default:
			return fmt.Errorf("rsparquet: column %s has no encoder", spec.Name)
		}
		if len(e.vals) > start {
			v := e.vals[start+4:]
			binary.LittleEndian.PutUint32(e.vals[start:], uint32(len(v)))
			e.bounds(col, v, i == nulls)
		}
		if len(e.vals) >= pageTarget || i == len(c.Records)-1 {
			var err error
			if spec.Nullable {
				e.levels = definitionLevels(e.levels[:0], c.Records[lo:i+1], hasKey)
				err = e.page(md, dataPageHeader(format.Plain, i+1-lo), e.levels, e.vals)
			} else {
				err = e.dataPage(md, format.Plain, i+1-lo, e.vals)
			}
			if err != nil {
				return err
			}
			lo = i + 1
			e.vals = e.vals[:0]
		}
	}
	stats.NullCount = int64(nulls)
	if nulls < len(c.Records) {
		stats.MinValue, stats.MaxValue = e.min[col], e.max[col]
	}
	return nil
}

// bounds widens column col's min and max by v (unsigned byte order, the
// order of BYTE_ARRAY and String columns). The first value sets both.
func (e *Encoder) bounds(col int, v []byte, first bool) {
	if first || bytes.Compare(v, e.min[col]) < 0 {
		e.min[col] = append(e.min[col][:0], v...)
	}
	if first || bytes.Compare(v, e.max[col]) > 0 {
		e.max[col] = append(e.max[col][:0], v...)
	}
}

// dictColumn writes a column that holds one value in every row: a
// dictionary page with the value and a data page of indices, all zero.
func (e *Encoder) dictColumn(md *format.ColumnMetaData, v []byte, rows int) error {
	md.Encoding = thrift.Slice[format.Encoding]{format.Plain, format.RLEDictionary}
	md.Statistics.MinValue, md.Statistics.MaxValue = v, v
	e.vals = binary.LittleEndian.AppendUint32(e.vals[:0], uint32(len(v)))
	e.vals = append(e.vals, v...)
	h := format.PageHeader{Type: format.DictionaryPage, DictionaryPageHeader: thrift.New(format.DictionaryPageHeader{
		NumValues: 1, Encoding: format.Plain})}
	md.DictionaryPageOffset = int64(len(e.out))
	if err := e.page(md, h, e.vals); err != nil {
		return err
	}
	// Indices: a bit width of 1, then one RLE run of rows zeros.
	e.levels = append(e.levels[:0], 1)
	e.levels = binary.AppendUvarint(e.levels, uint64(rows)<<1)
	e.levels = append(e.levels, 0)
	return e.dataPage(md, format.RLEDictionary, rows, e.levels)
}

// int64Column writes n INT64 values, v(i) for row i, in pages.
func (e *Encoder) int64Column(md *format.ColumnMetaData, n int, v func(i int) uint64) error {
	for lo := 0; lo < n; {
		hi := min(n, lo+pageTarget/8)
		e.vals = e.vals[:0]
		for i := lo; i < hi; i++ {
			e.vals = binary.LittleEndian.AppendUint64(e.vals, v(i))
		}
		if err := e.dataPage(md, format.Plain, hi-lo, e.vals); err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

func hasKey(r *Record) bool      { return r.Key != nil }
func isNotDelete(r *Record) bool { return r.Change != rsql.OpDelete }

// payloadColumn writes the payloads, streaming each one from the record
// into the compressor: no copy of a payload is made before the file.
// Pages are cut on row boundaries at pageTarget; a larger payload is a
// page of its own. A nullable payload (upsert mode) is NULL for a delete.
func (e *Encoder) payloadColumn(md *format.ColumnMetaData, recs []Record, nullable bool) error {
	nulls := 0
	for lo := 0; lo < len(recs); {
		size, hi := 0, lo
		for hi < len(recs) && (hi == lo || size+4+len(recs[hi].Payload) <= pageTarget) {
			size += 4 + len(recs[hi].Payload)
			hi++
		}
		e.lens = e.lens[:0]
		for i := lo; i < hi; i++ {
			e.lens = binary.LittleEndian.AppendUint32(e.lens, uint32(len(recs[i].Payload)))
		}
		e.parts = e.parts[:0]
		if nullable {
			e.levels = definitionLevels(e.levels[:0], recs[lo:hi], isNotDelete)
			e.parts = append(e.parts, e.levels)
		}
		for i := lo; i < hi; i++ {
			if nullable && !isNotDelete(&recs[i]) {
				nulls++
				continue
			}
			e.parts = append(e.parts, e.lens[4*(i-lo):4*(i-lo+1)], recs[i].Payload)
		}
		if err := e.page(md, dataPageHeader(format.Plain, hi-lo), e.parts...); err != nil {
			return err
		}
		lo = hi
	}
	if nullable {
		md.Statistics.NullCount = int64(nulls)
	}
	return nil
}

func dataPageHeader(enc format.Encoding, values int) format.PageHeader {
	return format.PageHeader{Type: format.DataPage, DataPageHeader: thrift.New(format.DataPageHeader{
		NumValues:               int32(values),
		Encoding:                enc,
		DefinitionLevelEncoding: format.RLE,
		RepetitionLevelEncoding: format.RLE,
	})}
}

// dataPage writes a v1 data page of a required column.
func (e *Encoder) dataPage(md *format.ColumnMetaData, enc format.Encoding, values int, body []byte) error {
	return e.page(md, dataPageHeader(enc, values), body)
}

// definitionLevels appends the v1 definition levels of an optional column
// (present says which records have a value): a 4-byte length, then RLE
// runs (bit width 1) of 1 for a value, 0 for NULL.
func definitionLevels(b []byte, recs []Record, has func(*Record) bool) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	for i := 0; i < len(recs); {
		present := has(&recs[i])
		j := i + 1
		for j < len(recs) && has(&recs[j]) == present {
			j++
		}
		b = binary.AppendUvarint(b, uint64(j-i)<<1)
		if present {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		i = j
	}
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

// page compresses the concatenation of parts into the file as one page with
// header h, and adds it to the column chunk's sizes.
func (e *Encoder) page(md *format.ColumnMetaData, h format.PageHeader, parts ...[]byte) error {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	if size > math.MaxInt32 {
		return fmt.Errorf("rsparquet: column %s: a page of %d bytes exceeds the Parquet limit of 2 GiB", md.PathInSchema[0], size)
	}
	// Compress straight into the file, then slide the body up by the
	// header's size and put the header in front: the header holds the
	// compressed size, and a move within the buffer costs no memory.
	pos := len(e.out)
	e.zw.ResetContentSize(appender{&e.out}, int64(size))
	for _, p := range parts {
		if _, err := e.zw.Write(p); err != nil {
			return fmt.Errorf("rsparquet: compress: %w", err)
		}
	}
	if err := e.zw.Close(); err != nil {
		return fmt.Errorf("rsparquet: compress: %w", err)
	}
	body := len(e.out) - pos
	h.UncompressedPageSize = int32(size)
	h.CompressedPageSize = int32(body)
	h.CRC = int32(crc32.ChecksumIEEE(e.out[pos:]))
	e.hdr = e.hdr[:0]
	if err := thrift.NewEncoder(new(thrift.CompactProtocol).NewWriter(appender{&e.hdr})).Encode(&h); err != nil {
		return fmt.Errorf("rsparquet: page header: %w", err)
	}
	e.out = append(e.out, e.hdr...)
	copy(e.out[pos+len(e.hdr):], e.out[pos:pos+body])
	copy(e.out[pos:], e.hdr)

	if h.Type == format.DataPage && md.DataPageOffset == 0 {
		md.DataPageOffset = int64(pos)
	}
	md.TotalUncompressedSize += int64(len(e.hdr) + size)
	md.TotalCompressedSize += int64(len(e.hdr) + body)
	return nil
}

// sizeBound is an upper bound of the file's size for c, not counting on
// compression: payloads and keys as they are, the small columns generously.
func (e *Encoder) sizeBound(c Chunk) int {
	n := len(c.Records)
	perRow := 4 + len(c.Topic) + 2 + 10 + 20 // id
	perRow += 4 + 20 + 4 + 20 + 8            // offset, timestamp, partition
	perRow += 4 + 4 + 1                      // payload and key length prefixes, a level
	size, keyMax := n*perRow, 0
	for i := range c.Records {
		k := metadata.KeyBase64Len(len(c.Records[i].Key))
		size += len(c.Records[i].Payload) + k
		for _, v := range c.Records[i].KeyValues {
			// the value, its length prefix, and its copy in the statistics
			size += 4 + 3*len(v)
		}
		if c.Records[i].Change != "" {
			size += 4 + 1 + 8 + 8 + 1 // pico_op, the offset, the partition, a level
		}
		keyMax = max(keyMax, k)
	}
	// Per page: a header and the zstd frame's overhead (a frame header and
	// 3 bytes per 128 KiB block of incompressible data). Pages: at most one
	// per row in the payload column, size/pageTarget plus one elsewhere.
	pages := n + len(e.layout.Columns)*(2+size/pageTarget)
	size += pages*96 + size>>15
	// Footer: schema and column metadata, and the statistics, which hold a
	// column's smallest and largest value.
	size += 4096 + len(e.layout.Columns)*(256+2*(len(c.Topic)+len(c.CreatedAt)+64)) + 2*keyMax
	return size
}

// appender is an io.Writer appending to a byte slice.
type appender struct{ b *[]byte }

func (a appender) Write(p []byte) (int, error) {
	*a.b = append(*a.b, p...)
	return len(p), nil
}

// validText reports whether p is UTF-8 text a Redshift VARCHAR can hold.
func validText(p []byte) (ok bool, why string) {
	if !utf8.Valid(p) {
		return false, "is not valid UTF-8"
	}
	if bytes.IndexByte(p, 0) >= 0 {
		return false, "contains a NUL character, which Redshift VARCHAR cannot store"
	}
	return true, ""
}
