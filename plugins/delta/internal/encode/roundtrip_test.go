package encode_test

import (
	"testing"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

// kitchenSink has every Delta type the encoder writes, in an order that is
// not alphabetical, nullable and not, nested. Shared with the pyarrow test.
func kitchenSink(t testing.TB) *deltalog.StructType {
	return mustSchema(t,
		field("zid", `"long"`, false),
		field("str", `"string"`, true),
		field("int", `"integer"`, true),
		field("short", `"short"`, true),
		field("byte", `"byte"`, true),
		field("float", `"float"`, true),
		field("double", `"double"`, true),
		field("bool", `"boolean"`, true),
		field("bin", `"binary"`, true),
		field("date", `"date"`, true),
		field("ts", `"timestamp"`, true),
		field("ntz", `"timestamp_ntz"`, true),
		field("dec9", `"decimal(9,2)"`, true),
		field("dec18", `"decimal(18,4)"`, true),
		field("dec38", `"decimal(38,6)"`, true),
		field("rec", structType(field("b", `"string"`, false), field("a", `"long"`, true)), true),
		field("list", arrayType(`"long"`, true), true),
		field("objs", arrayType(structType(field("k", `"string"`, true)), false), true),
		field("map", mapType(`"string"`, `"double"`, true), false),
		field("part", `"string"`, true),
	)
}

var kitchenSinkRecords = []string{
	`{"zid":1,"str":"héllo","int":-2147483648,"short":-32768,"byte":-128,"float":1.5,"double":-2.25,"bool":true,"bin":"AAEC","date":"2026-09-03","ts":"2026-09-03T21:15:04.123456Z","ntz":"2026-09-03 21:15:04","dec9":"1234567.89","dec18":-12345678901234.5678,"dec38":"-12345678901234567890123456789012.123456","rec":{"b":"x","a":7},"list":[1,null,3],"objs":[{"k":"a"},{"k":null}],"map":{"pi":3.14,"nan":null},"part":"p1"}`,
	`{"zid":2,"str":{"a":1},"map":{},"part":"p1","objs":[],"list":[]}`,
	`{"zid":3,"map":{"e":2.71},"rec":null,"list":null,"part":"p1"}`,
}

const kitchenSinkParquetSchema = `message spark_schema {
	required int64 zid (INT(64,true));
	optional binary str (STRING);
	optional int32 int (INT(32,true));
	optional int32 short (INT(16,true));
	optional int32 byte (INT(8,true));
	optional float float;
	optional double double;
	optional boolean bool;
	optional binary bin;
	optional int32 date (DATE);
	optional int64 ts (TIMESTAMP(isAdjustedToUTC=true,unit=MICROS));
	optional int64 ntz (TIMESTAMP(isAdjustedToUTC=false,unit=MICROS));
	optional int32 dec9 (DECIMAL(9,2));
	optional int64 dec18 (DECIMAL(18,4));
	optional fixed_len_byte_array(16) dec38 (DECIMAL(38,6));
	optional group rec {
		required binary b (STRING);
		optional int64 a (INT(64,true));
	}
	optional group list (LIST) {
		repeated group list {
			optional int64 element (INT(64,true));
		}
	}
	optional group objs (LIST) {
		repeated group list {
			required group element {
				optional binary k (STRING);
			}
		}
	}
	required group map (MAP) {
		repeated group key_value {
			required binary key (STRING);
			optional double value;
		}
	}
}`

func TestParquetLayout(t *testing.T) {
	for _, dict := range []bool{false, true} {
		enc := mustEncoder(t, kitchenSink(t), []string{"part"}, encode.Options{DictionaryEncoding: dict})
		files := encodeRecords(t, enc, kitchenSinkRecords...)
		if len(files) != 1 {
			t.Fatalf("%d files", len(files))
		}
		data := files[0].Data
		pf := openParquet(t, data)
		if got := pf.Schema().String(); got != kitchenSinkParquetSchema {
			t.Fatalf("schema:\n%s\nwant:\n%s", got, kitchenSinkParquetSchema)
		}
		md := pf.Metadata()
		if md.NumRows != 3 || len(md.RowGroups) != 1 {
			t.Fatalf("%d rows in %d row groups", md.NumRows, len(md.RowGroups))
		}
		for _, cc := range md.RowGroups[0].Columns {
			cm := cc.MetaData
			if cm.Codec != format.Snappy {
				t.Errorf("%v: codec %v", cm.PathInSchema, cm.Codec)
			}
			for _, e := range cm.Encoding {
				switch e {
				case format.Plain, format.RLE:
				case format.RLEDictionary:
					if !dict {
						t.Errorf("%v: dictionary encoding without DictionaryEncoding", cm.PathInSchema)
					}
				default:
					t.Errorf("%v: encoding %v", cm.PathInSchema, e)
				}
			}
			for _, s := range cm.EncodingStats {
				if s.PageType != format.DataPage && s.PageType != format.DictionaryPage {
					t.Errorf("%v: page type %v", cm.PathInSchema, s.PageType)
				}
			}
			// Read the first page header itself: v1 data pages only.
			off := cm.DataPageOffset
			if cm.DictionaryPageOffset > 0 {
				off = cm.DictionaryPageOffset
			}
			var h format.PageHeader
			r := new(thrift.CompactProtocol).NewReaderFromBytes(data[off:])
			if err := thrift.NewDecoder(r).Decode(&h); err != nil {
				t.Fatalf("%v: page header: %v", cm.PathInSchema, err)
			}
			if h.Type != format.DataPage && !(dict && h.Type == format.DictionaryPage) {
				t.Errorf("%v: first page is %v", cm.PathInSchema, h.Type)
			}
		}
		rows := readRows(t, data)
		normalizeTimes(rows)
		if got := rows[0]["str"]; got != "héllo" {
			t.Errorf("str %v", got)
		}
		if got := rows[1]["str"]; got != `{"a":1}` {
			t.Errorf("str %v", got)
		}
		if got := rows[0]["rec"]; got.(map[string]any)["b"] != "x" {
			t.Errorf("rec %v", got)
		}
		if got := rows[0]["bin"]; got != "\x00\x01\x02" {
			t.Errorf("bin %q", got)
		}
		if got := rows[0]["short"]; got != int16(-32768) && got != int32(-32768) {
			t.Errorf("short %#v", got)
		}
	}
}
