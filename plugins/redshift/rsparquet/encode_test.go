package rsparquet_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsparquet"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
)

func combos() []rsql.Options {
	var out []rsql.Options
	for _, meta := range []bool{true, false} {
		for _, key := range []bool{true, false} {
			for _, p := range []rsql.PayloadFormat{rsql.PayloadVarbyte, rsql.PayloadText} {
				out = append(out, rsql.Options{IncludeMetadata: meta, IncludeKey: key, Payload: p})
			}
		}
	}
	return out
}

func optName(o rsql.Options) string {
	return fmt.Sprintf("metadata=%v/key=%v/payload=%v", o.IncludeMetadata, o.IncludeKey, o.Payload)
}

const createdAt = "2025-11-29T11:08:00.123Z"

func sampleChunk() rsparquet.Chunk {
	return rsparquet.Chunk{Topic: "orders.eu", Partition: 0, CreatedAt: createdAt, Records: []rsparquet.Record{
		{Offset: 0, Timestamp: 1732878480123, Key: []byte("order-42"), Payload: []byte(`{"id":42}`)},
		{Offset: 1, Timestamp: 1732878480124, Key: nil, Payload: []byte(`"no key"`)},
		{Offset: 18446744073709551615, Timestamp: -1, Key: []byte{}, Payload: []byte{}},
		{Offset: 7, Timestamp: 0, Key: []byte{0xfb, 0xff}, Payload: []byte("größe ✓")},
	}}
}

func openFile(t *testing.T, data []byte) *parquet.File {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("open parquet: %v", err)
	}
	return f
}

// readRows returns every row as column name -> value (nil for NULL).
func readRows(t *testing.T, f *parquet.File) []map[string]any {
	t.Helper()
	names := []string{}
	for _, c := range f.Schema().Fields() {
		names = append(names, c.Name())
	}
	var out []map[string]any
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, 16)
		for {
			n, err := rows.ReadRows(buf)
			for _, row := range buf[:n] {
				m := map[string]any{}
				for _, v := range row {
					name := names[v.Column()]
					switch {
					case v.IsNull():
						m[name] = nil
					case v.Kind() == parquet.Int64:
						m[name] = v.Int64()
					default:
						m[name] = string(v.ByteArray())
					}
				}
				out = append(out, m)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rows.Close()
	}
	return out
}

func TestColumnOrderFollowsTheLayout(t *testing.T) {
	for _, o := range combos() {
		t.Run(optName(o), func(t *testing.T) {
			l := rsql.NewLayout(o)
			data, err := rsparquet.NewEncoder(l).Encode(sampleChunk())
			if err != nil {
				t.Fatal(err)
			}
			f := openFile(t, data)
			var got []string
			for _, el := range f.Metadata().Schema[1:] {
				got = append(got, el.Name)
			}
			if !slices.Equal(got, l.Names()) {
				t.Fatalf("file columns %v, layout %v", got, l.Names())
			}
			// The sorted order differs from the layout whenever metadata is
			// on: this is what a parquet.Group would have produced.
			if o.IncludeMetadata && slices.IsSorted(got) {
				t.Fatal("test is vacuous: layout order is alphabetical")
			}
		})
	}
}

func TestValuesRoundTrip(t *testing.T) {
	for _, o := range combos() {
		t.Run(optName(o), func(t *testing.T) {
			l := rsql.NewLayout(o)
			c := sampleChunk()
			data, err := rsparquet.NewEncoder(l).Encode(c)
			if err != nil {
				t.Fatal(err)
			}
			rows := readRows(t, openFile(t, data))
			if len(rows) != len(c.Records) {
				t.Fatalf("%d rows, want %d", len(rows), len(c.Records))
			}
			for i, r := range c.Records {
				want := map[string]any{
					"id":         fmt.Sprintf("orders.eu:0:%d", r.Offset),
					"payload":    string(r.Payload),
					"created_at": createdAt,
				}
				if o.IncludeMetadata {
					want["pico_offset"] = fmt.Sprint(r.Offset)
					want["pico_timestamp"] = fmt.Sprint(r.Timestamp)
					want["pico_topic"] = "orders.eu"
					want["pico_partition"] = int64(0)
				}
				if o.IncludeKey {
					if r.Key == nil {
						want["pico_key"] = nil
					} else {
						want["pico_key"] = base64.StdEncoding.EncodeToString(r.Key)
					}
				}
				if fmt.Sprint(rows[i]) != fmt.Sprint(want) {
					t.Errorf("row %d:\n got %v\nwant %v", i, rows[i], want)
				}
			}
		})
	}
}

func TestPartitionAndTopicLandInEveryRow(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: true})
	c := rsparquet.Chunk{Topic: `we"ird:topic`, Partition: 3, CreatedAt: createdAt,
		Records: []rsparquet.Record{{Offset: 5, Payload: []byte("x")}, {Offset: 6, Payload: []byte("y")}}}
	data, err := rsparquet.NewEncoder(l).Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, openFile(t, data))
	for i, r := range rows {
		if r["pico_partition"] != int64(3) || r["pico_topic"] != `we"ird:topic` || r["id"] != fmt.Sprintf(`we"ird:topic:3:%d`, 5+i) {
			t.Errorf("row %d: %v", i, r)
		}
	}
}

// pageTypes decodes the page headers of one column chunk.
func pageTypes(t *testing.T, data []byte, md *format.ColumnMetaData) []format.PageType {
	t.Helper()
	start := md.DataPageOffset
	if md.DictionaryPageOffset != 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	r := bytes.NewReader(data[start : start+md.TotalCompressedSize])
	var proto thrift.CompactProtocol
	var types []format.PageType
	for r.Len() > 0 {
		var h format.PageHeader
		if err := thrift.NewDecoder(proto.NewReader(r)).Decode(&h); err != nil {
			t.Fatalf("page header: %v", err)
		}
		types = append(types, h.Type)
		if _, err := r.Seek(int64(h.CompressedPageSize), io.SeekCurrent); err != nil {
			t.Fatal(err)
		}
	}
	return types
}

func TestFileFormat(t *testing.T) {
	for _, payload := range []rsql.PayloadFormat{rsql.PayloadVarbyte, rsql.PayloadText} {
		t.Run(payload.String(), func(t *testing.T) {
			l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true, Payload: payload})
			c := sampleChunk()
			// Enough rows for several pages in the payload column.
			for i := 0; i < 3000; i++ {
				c.Records = append(c.Records, rsparquet.Record{Offset: uint64(100 + i), Payload: bytes.Repeat([]byte("p"), 200)})
			}
			data, err := rsparquet.NewEncoder(l).Encode(c)
			if err != nil {
				t.Fatal(err)
			}
			f := openFile(t, data)
			md := f.Metadata()
			if len(md.RowGroups) != 1 || md.NumRows != int64(len(c.Records)) {
				t.Fatalf("%d row groups, %d rows", len(md.RowGroups), md.NumRows)
			}
			type want struct {
				physical  format.Type
				logical   string // "" for none
				required  bool
				encodings []format.Encoding
			}
			plain := []format.Encoding{format.Plain}
			dict := []format.Encoding{format.Plain, format.RLEDictionary}
			payloadLogical := ""
			if payload == rsql.PayloadText {
				payloadLogical = "STRING"
			}
			wants := map[string]want{
				"id":             {format.ByteArray, "STRING", true, plain},
				"pico_offset":    {format.ByteArray, "STRING", true, plain},
				"pico_timestamp": {format.ByteArray, "STRING", true, plain},
				"pico_topic":     {format.ByteArray, "STRING", true, dict},
				"pico_partition": {format.Int64, "INT(64,true)", true, plain},
				"pico_key":       {format.ByteArray, "STRING", false, []format.Encoding{format.Plain, format.RLE}},
				"payload":        {format.ByteArray, payloadLogical, true, plain},
				"created_at":     {format.ByteArray, "STRING", true, dict},
			}
			for i, el := range md.Schema[1:] {
				w := wants[el.Name]
				if typ, ok := el.Type.Get(); !ok || typ != w.physical {
					t.Errorf("%s: physical type %v, want %v", el.Name, el.Type, w.physical)
				}
				if logical := el.LogicalType.String(); logical != w.logical {
					t.Errorf("%s: logical type %q, want %q", el.Name, logical, w.logical)
				}
				if rep, ok := el.RepetitionType.Get(); (ok && rep == format.Required) != w.required {
					t.Errorf("%s: repetition %v, want required=%v", el.Name, el.RepetitionType, w.required)
				}
				cc := md.RowGroups[0].Columns[i].MetaData
				if cc.Codec != format.Zstd {
					t.Errorf("%s: codec %v, want ZSTD", el.Name, cc.Codec)
				}
				var encs []format.Encoding
				for _, e := range cc.Encoding {
					encs = append(encs, e)
				}
				slices.Sort(encs)
				wantEncs := slices.Clone(w.encodings)
				slices.Sort(wantEncs)
				if !slices.Equal(encs, wantEncs) {
					t.Errorf("%s: encodings %v, want %v", el.Name, encs, wantEncs)
				}
				if slices.Contains(encs, format.DeltaLengthByteArray) {
					t.Errorf("%s: DELTA_LENGTH_BYTE_ARRAY", el.Name)
				}
				types := pageTypes(t, data, &cc)
				for _, pt := range types {
					if pt != format.DataPage && pt != format.DictionaryPage {
						t.Errorf("%s: page type %v, want v1 data pages", el.Name, pt)
					}
				}
				if el.Name == "payload" && len(types) < 2 {
					t.Errorf("payload: %d pages, the test wanted several", len(types))
				}
			}
		})
	}
}

func TestEncodeKeepsNoBorrowedMemory(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true})
	e := rsparquet.NewEncoder(l)
	c := sampleChunk()
	data, err := e.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	file := bytes.Clone(data)
	// The host poisons what it lent once the call returns.
	for _, r := range c.Records {
		for i := range r.Payload {
			r.Payload[i] = 0xA5
		}
		for i := range r.Key {
			r.Key[i] = 0xA5
		}
	}
	if !bytes.Equal(file, data) {
		t.Fatal("the encoded file changed when the input was overwritten")
	}
	rows := readRows(t, openFile(t, file))
	if rows[0]["payload"] != `{"id":42}` || rows[0]["pico_key"] != base64.StdEncoding.EncodeToString([]byte("order-42")) {
		t.Fatalf("row 0: %v", rows[0])
	}
}

func TestEncoderReuse(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeKey: true, Payload: rsql.PayloadText})
	e := rsparquet.NewEncoder(l)
	big := sampleChunk()
	for i := 0; i < 500; i++ {
		big.Records = append(big.Records, rsparquet.Record{Offset: uint64(1000 + i), Key: []byte("k"), Payload: []byte("v")})
	}
	if _, err := e.Encode(big); err != nil {
		t.Fatal(err)
	}
	small := rsparquet.Chunk{Topic: "t", CreatedAt: createdAt, Records: []rsparquet.Record{{Offset: 9, Payload: []byte("only")}}}
	data, err := e.Encode(small)
	if err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, openFile(t, data))
	if len(rows) != 1 || rows[0]["id"] != "t:0:9" || rows[0]["payload"] != "only" || rows[0]["pico_key"] != nil {
		t.Fatalf("second file: %v", rows)
	}
}

func TestSchemaIsNotSorted(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true})
	var got []string
	for _, el := range rsparquet.Schema(l)[1:] {
		got = append(got, el.Name)
	}
	if strings.Join(got, ",") != "id,pico_offset,pico_timestamp,pico_topic,pico_partition,pico_key,payload,created_at" {
		t.Fatalf("schema order %v", got)
	}
}

// A record of the documented maximum size is copied once, into the file:
// the file is about the size of an incompressible payload (no statistics
// or page index carry copies of it) and encoding it allocates little more
// than the file.
func TestHugePayloadIsCopiedOnce(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true})
	payload := make([]byte, rsql.VarbyteMax)
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	e := rsparquet.NewEncoder(l)
	if _, err := e.Encode(sampleChunk()); err != nil { // first-use allocations
		t.Fatal(err)
	}
	c := rsparquet.Chunk{Topic: "orders.eu", CreatedAt: createdAt,
		Records: []rsparquet.Record{{Offset: 1, Key: []byte("k"), Payload: payload}}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	data, err := e.Encode(c)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if limit := len(payload) + len(payload)/20; len(data) > limit {
		t.Errorf("file is %d bytes for a %d-byte payload, want at most %d (1.05x)", len(data), len(payload), limit)
	}
	if alloc, limit := after.TotalAlloc-before.TotalAlloc, uint64(len(payload))*5/4; alloc > limit {
		t.Errorf("encoding allocated %d bytes for a %d-byte payload, want at most %d (1.25x)", alloc, len(payload), limit)
	}
	rows := readRows(t, openFile(t, data))
	if len(rows) != 1 || rows[0]["payload"] != string(payload) {
		t.Fatalf("the payload did not round-trip (%d rows)", len(rows))
	}
	// A huge file is handed over, not kept for the next chunk.
	next, err := e.Encode(sampleChunk())
	if err != nil {
		t.Fatal(err)
	}
	if cap(next) >= len(payload) {
		t.Errorf("the encoder kept a %d-byte buffer after a huge chunk", cap(next))
	}
}

// Columns long enough for several pages, the optional key among them, read
// back row by row.
func TestManyPagesRoundTrip(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true})
	c := rsparquet.Chunk{Topic: "orders.eu", Partition: 1, CreatedAt: createdAt}
	for i := range 20000 {
		r := rsparquet.Record{Offset: uint64(i), Timestamp: int64(i), Payload: bytes.Repeat([]byte{byte(i)}, i%97)}
		if i%5 != 0 {
			r.Key = bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 20)
		}
		c.Records = append(c.Records, r)
	}
	data, err := rsparquet.NewEncoder(l).Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	f := openFile(t, data)
	for i, name := range []string{"id", "pico_key", "payload"} {
		cc := f.Metadata().RowGroups[0].Columns[slices.Index(l.Names(), name)].MetaData
		if n := len(pageTypes(t, data, &cc)); n < 2 {
			t.Errorf("column %d %s: %d pages, the test wanted several", i, name, n)
		}
	}
	rows := readRows(t, f)
	if len(rows) != len(c.Records) {
		t.Fatalf("%d rows, want %d", len(rows), len(c.Records))
	}
	for i, r := range c.Records {
		var key any
		if r.Key != nil {
			key = base64.StdEncoding.EncodeToString(r.Key)
		}
		if rows[i]["id"] != fmt.Sprintf("orders.eu:1:%d", i) || rows[i]["pico_key"] != key || rows[i]["payload"] != string(r.Payload) {
			t.Fatalf("row %d: %v", i, rows[i])
		}
	}
}

// An empty key is the smallest value of pico_key: the statistics say so,
// rather than leaving the minimum out next to a maximum.
func TestEmptySmallestValueInStatistics(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeKey: true})
	c := rsparquet.Chunk{Topic: "t", CreatedAt: createdAt, Records: []rsparquet.Record{
		{Offset: 1, Key: []byte{}}, {Offset: 2}, {Offset: 3, Key: []byte("order-42")}}}
	data, err := rsparquet.NewEncoder(l).Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	md := openFile(t, data).Metadata()
	st := md.RowGroups[0].Columns[slices.Index(l.Names(), "pico_key")].MetaData.Statistics
	if st.MinValue == nil || len(st.MinValue) != 0 || string(st.MaxValue) != "b3JkZXItNDI=" || st.NullCount != 1 {
		t.Fatalf("pico_key statistics: min %q (nil %v), max %q, nulls %d", st.MinValue, st.MinValue == nil, st.MaxValue, st.NullCount)
	}
}
