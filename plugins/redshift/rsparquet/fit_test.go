package rsparquet_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsparquet"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
)

func TestCheckLimits(t *testing.T) {
	all := rsql.Options{IncludeMetadata: true, IncludeKey: true, Payload: rsql.PayloadVarbyte}
	text := rsql.Options{IncludeMetadata: true, IncludeKey: true, Payload: rsql.PayloadText}
	long := func(n int) string { return strings.Repeat("t", n) }
	rec := func(off uint64, key, payload []byte) []rsparquet.Record {
		return []rsparquet.Record{{Offset: 1, Payload: []byte("ok")}, {Offset: off, Key: key, Payload: payload}}
	}
	tests := []struct {
		name  string
		opts  rsql.Options
		chunk rsparquet.Chunk
		want  string // "" for no error
	}{
		{"fits", all, rsparquet.Chunk{Topic: "orders", CreatedAt: createdAt, Records: rec(2, []byte("k"), []byte("v"))}, ""},
		{"topic of 256 bytes fits", all, rsparquet.Chunk{Topic: long(256), CreatedAt: createdAt, Records: rec(2, nil, nil)}, ""},
		{"topic over 256 bytes", all, rsparquet.Chunk{Topic: long(257), CreatedAt: createdAt, Records: rec(2, nil, nil)},
			`record at topic "` + long(257) + `" offset 1 cannot be loaded into Redshift: column pico_topic needs 257 bytes but holds at most 256 (Redshift measures VARCHAR and VARBYTE in bytes)`},
		{"multi-byte topic counts bytes", all, rsparquet.Chunk{Topic: strings.Repeat("ü", 129), CreatedAt: createdAt, Records: rec(2, nil, nil)},
			`column pico_topic needs 258 bytes but holds at most 256`},
		{"long topic without metadata only meets the id", rsql.Options{Payload: rsql.PayloadVarbyte},
			rsparquet.Chunk{Topic: long(300), CreatedAt: createdAt, Records: rec(2, nil, nil)}, ""},
		{"id over 512 bytes", rsql.Options{Payload: rsql.PayloadVarbyte},
			rsparquet.Chunk{Topic: long(500), CreatedAt: createdAt, Records: rec(1234567890123, nil, nil)},
			`offset 1234567890123 cannot be loaded into Redshift: column id needs 516 bytes but holds at most 512`},
		{"key whose base64 exceeds VARCHAR(MAX)", all,
			rsparquet.Chunk{Topic: "orders", CreatedAt: createdAt, Records: rec(5, make([]byte, 49150), nil)},
			`record at topic "orders" offset 5 cannot be loaded into Redshift: column pico_key needs 65536 bytes but holds at most 65535`},
		{"key of 49149 bytes fits", all,
			rsparquet.Chunk{Topic: "orders", CreatedAt: createdAt, Records: rec(5, make([]byte, 49149), nil)}, ""},
		{"key ignored without include_key", rsql.Options{IncludeMetadata: true},
			rsparquet.Chunk{Topic: "orders", CreatedAt: createdAt, Records: rec(5, make([]byte, 100000), nil)}, ""},
		{"text payload over 65535 bytes", text,
			rsparquet.Chunk{Topic: "orders", CreatedAt: createdAt, Records: rec(6, nil, bytes.Repeat([]byte("a"), 65536))},
			`record at topic "orders" offset 6 cannot be loaded into Redshift: column payload needs 65536 bytes but holds at most 65535`},
		{"text payload of 65535 bytes fits", text,
			rsparquet.Chunk{Topic: "orders", CreatedAt: createdAt, Records: rec(6, nil, bytes.Repeat([]byte("a"), 65535))}, ""},
		{"varbyte payload over 16777216 bytes", all,
			rsparquet.Chunk{Topic: "orders", CreatedAt: createdAt, Records: rec(7, nil, make([]byte, 16777217))},
			`record at topic "orders" offset 7 cannot be loaded into Redshift: column payload needs 16777217 bytes but holds at most 16777216`},
		{"varbyte payload may be anything", all,
			rsparquet.Chunk{Topic: "orders", CreatedAt: createdAt, Records: rec(7, nil, []byte{0xff, 0, 0xfe})}, ""},
		{"text payload not UTF-8", text,
			rsparquet.Chunk{Topic: "orders", CreatedAt: createdAt, Records: rec(8, nil, []byte{'a', 0xff})},
			`record at topic "orders" offset 8 cannot be loaded into Redshift: column payload is not valid UTF-8 (payload_format = "text" stores the payload as VARCHAR)`},
		{"text payload with NUL", text,
			rsparquet.Chunk{Topic: "orders", CreatedAt: createdAt, Records: rec(9, nil, []byte("a\x00b"))},
			`record at topic "orders" offset 9 cannot be loaded into Redshift: column payload contains a NUL character, which Redshift VARCHAR cannot store (payload_format = "text" stores the payload as VARCHAR)`},
		{"topic is quoted in the message", all,
			rsparquet.Chunk{Topic: "a\"b\n" + long(300), CreatedAt: createdAt, Records: rec(2, nil, nil)},
			`record at topic "a\"b\n` + long(300) + `" offset 1`},
		{"topic not UTF-8, with any payload format", rsql.Options{Payload: rsql.PayloadVarbyte},
			rsparquet.Chunk{Topic: "orders.\xff\xfe", CreatedAt: createdAt, Records: rec(2, nil, nil)},
			`record at topic "orders.\xff\xfe" offset 1 cannot be loaded into Redshift: column id would hold the topic name, which is not valid UTF-8 (id is a VARCHAR)`},
		{"topic with NUL", all,
			rsparquet.Chunk{Topic: "orders\x00eu", CreatedAt: createdAt, Records: rec(2, nil, nil)},
			`record at topic "orders\x00eu" offset 1 cannot be loaded into Redshift: column id would hold the topic name, which contains a NUL character`},
		{"multi-byte UTF-8 topic is text", all,
			rsparquet.Chunk{Topic: "bestellungen.müller", CreatedAt: createdAt, Records: rec(2, nil, nil)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := rsql.NewLayout(tt.opts)
			err := rsparquet.Check(l, l.DefaultLimits(), tt.chunk)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got  %v\nwant %s", err, tt.want)
			}
			var re *rsparquet.RecordError
			if !errors.As(err, &re) {
				t.Fatalf("error is %T", err)
			}
		})
	}
}

func TestCheckUsesTheTablesLimits(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: true})
	lim := l.DefaultLimits()
	lim[l.Position(rsql.Offset)] = 3     // an older table with pico_offset VARCHAR(3)
	lim[l.Position(rsql.CreatedAt)] = 10 // and created_at VARCHAR(10)
	c := rsparquet.Chunk{Topic: "t", CreatedAt: "x", Records: []rsparquet.Record{{Offset: 999}, {Offset: 1000}}}
	err := rsparquet.Check(l, lim, c)
	if err == nil || !strings.Contains(err.Error(), "offset 1000 cannot be loaded into Redshift: column pico_offset needs 4 bytes but holds at most 3") {
		t.Fatalf("pico_offset: %v", err)
	}
	c = rsparquet.Chunk{Topic: "t", CreatedAt: createdAt, Records: []rsparquet.Record{{Offset: 1}}}
	err = rsparquet.Check(l, lim, c)
	if err == nil || !strings.Contains(err.Error(), "column created_at needs 24 bytes but holds at most 10") {
		t.Fatalf("created_at: %v", err)
	}
	lim[l.Position(rsql.Timestamp)] = 2
	c = rsparquet.Chunk{Topic: "t", CreatedAt: "x", Records: []rsparquet.Record{{Offset: 1, Timestamp: -10}}}
	err = rsparquet.Check(l, lim, c)
	if err == nil || !strings.Contains(err.Error(), "column pico_timestamp needs 3 bytes but holds at most 2") {
		t.Fatalf("pico_timestamp: %v", err)
	}
}

func TestCheckReportsTheFirstBadRecord(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeKey: true, Payload: rsql.PayloadText})
	c := rsparquet.Chunk{Topic: "t", CreatedAt: createdAt, Records: []rsparquet.Record{
		{Offset: 1, Payload: []byte("fine")},
		{Offset: 2, Payload: []byte{0xff}},                  // bad text, first
		{Offset: 3, Key: make([]byte, 60000), Payload: nil}, // too long key, later
	}}
	err := rsparquet.Check(l, l.DefaultLimits(), c)
	if err == nil || !strings.Contains(err.Error(), "offset 2 ") {
		t.Fatalf("%v", err)
	}
}

// With payload_format = "super" every payload must be what JSON_PARSE
// accepts, and fit the staging column; each failure names its record and
// says what kind of failure it is (for the rejection reason).
func TestCheckSuperPayloads(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true, Payload: rsql.PayloadSuper})
	big := append(append([]byte(`"`), bytes.Repeat([]byte("a"), rsql.SuperMax-1)...), '"') // SuperMax+1 bytes
	recs := []rsparquet.Record{
		{Offset: 10, Payload: []byte(`{"a":1}`)},
		{Offset: 11, Payload: []byte(`{"a":`)},
		{Offset: 12, Payload: nil},
		{Offset: 13, Payload: []byte(`{"a":1,"a":2}`)},
		{Offset: 14, Payload: []byte(strings.Repeat("[", 1001) + strings.Repeat("]", 1001))},
		{Offset: 15, Payload: []byte(`["` + strings.Repeat("x", 65536) + `"]`)},
		{Offset: 16, Payload: big},
		{Offset: 17, Payload: []byte(`[1, "two", null]`)},
	}
	type got struct {
		offset       uint64
		long, value  bool
		msgSubstring string
	}
	want := []got{
		{11, false, false, `offset 11 cannot be loaded into Redshift: column payload is not a JSON value (payload_format = "super" loads the payload with Redshift's JSON_PARSE)`},
		{12, false, false, "offset 12 cannot be loaded into Redshift: column payload is empty, not a JSON value"},
		{13, false, false, `has the attribute "a" twice in one object`},
		{14, false, true, "nests arrays and objects deeper than 1000 levels"},
		{15, true, false, "has a string value of 65536 bytes, over the 65535 bytes"},
		{16, true, false, "column payload needs 1000001 bytes but holds at most 1000000"},
	}
	var bad []got
	err := rsparquet.CheckEach(l, l.DefaultLimits(), rsparquet.Chunk{Topic: "orders", CreatedAt: createdAt, Records: recs},
		func(i int, e *rsparquet.RecordError) {
			if e.Offset != recs[i].Offset {
				t.Errorf("index %d reported with offset %d", i, e.Offset)
			}
			bad = append(bad, got{e.Offset, e.TooLong(), e.Value, e.Error()})
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != len(want) {
		t.Fatalf("refused %+v, want %d records", bad, len(want))
	}
	for i, w := range want {
		b := bad[i]
		if b.offset != w.offset || b.long != w.long || b.value != w.value || !strings.Contains(b.msgSubstring, w.msgSubstring) {
			t.Errorf("got %+v, want %+v", b, w)
		}
	}
}
