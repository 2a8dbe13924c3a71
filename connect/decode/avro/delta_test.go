package avro_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/decode/avro"
	"github.com/picomq/heavy-sinks/connect/decode/decodetest"
)

// The JSON each vector decodes to has the type the codec declares.
func TestValueSchemaFitsVectors(t *testing.T) {
	described := 0
	for _, v := range vectors(t) {
		c, p := v.compile(t)
		s := c.(decode.Described).ValueSchema()
		if s == nil {
			continue // a datum that is no record
		}
		described++
		got, err := c.AppendJSON(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := decodetest.Fits(s, got); err != nil {
			t.Errorf("%s: %v\nschema %s\njson   %s", v.Name, err, s, got)
		}
	}
	if described < 20 {
		t.Fatalf("only %d vectors described", described)
	}
}

// The mapping, type by type.
func TestValueSchema(t *testing.T) {
	const schema = `{"type":"record","name":"R","fields":[
	 {"name":"i","type":"int"},{"name":"l","type":"long"},{"name":"f","type":"float"},{"name":"d","type":"double"},
	 {"name":"b","type":"boolean"},{"name":"s","type":"string"},{"name":"by","type":"bytes"},
	 {"name":"fx","type":{"type":"fixed","name":"F","size":2}},
	 {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":20,"scale":4}},
	 {"name":"wide","type":{"type":"bytes","logicalType":"decimal","precision":40,"scale":2}},
	 {"name":"day","type":{"type":"int","logicalType":"date"}},
	 {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
	 {"name":"lts","type":{"type":"long","logicalType":"local-timestamp-millis"}},
	 {"name":"tod","type":{"type":"int","logicalType":"time-millis"}},
	 {"name":"id","type":{"type":"string","logicalType":"uuid"}},
	 {"name":"e","type":{"type":"enum","name":"E","symbols":["A"]}},
	 {"name":"opt","type":["null","long"]},
	 {"name":"u","type":["null","int","string"]},
	 {"name":"arr","type":{"type":"array","items":["null","string"]}},
	 {"name":"m","type":{"type":"map","values":"long"}},
	 {"name":"dur","type":{"type":"fixed","name":"D","size":12,"logicalType":"duration"}},
	 {"name":"sub","type":{"type":"record","name":"Sub","fields":[{"name":"x","type":"long"},{"name":"next","type":["null","R"]}]}}]}`
	c, err := avro.Compile(schema, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"struct","fields":[` +
		`{"name":"i","type":"integer","nullable":false,"metadata":{}},` +
		`{"name":"l","type":"long","nullable":false,"metadata":{}},` +
		`{"name":"f","type":"double","nullable":false,"metadata":{}},` + // a float: a later double fits it
		`{"name":"d","type":"double","nullable":false,"metadata":{}},` +
		`{"name":"b","type":"boolean","nullable":false,"metadata":{}},` +
		`{"name":"s","type":"string","nullable":false,"metadata":{}},` +
		`{"name":"by","type":"binary","nullable":false,"metadata":{}},` +
		`{"name":"fx","type":"binary","nullable":false,"metadata":{}},` +
		`{"name":"dec","type":"decimal(20,4)","nullable":false,"metadata":{}},` +
		`{"name":"wide","type":"string","nullable":false,"metadata":{}},` +
		`{"name":"day","type":"date","nullable":false,"metadata":{}},` +
		`{"name":"ts","type":"timestamp","nullable":false,"metadata":{}},` +
		`{"name":"lts","type":"timestamp_ntz","nullable":false,"metadata":{}},` +
		`{"name":"tod","type":"string","nullable":false,"metadata":{}},` +
		`{"name":"id","type":"string","nullable":false,"metadata":{}},` +
		`{"name":"e","type":"string","nullable":false,"metadata":{}},` +
		`{"name":"opt","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"u","type":{"type":"struct","fields":[{"name":"int","type":"integer","nullable":true,"metadata":{}},{"name":"string","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},` +
		`{"name":"arr","type":{"type":"array","elementType":"string","containsNull":true},"nullable":false,"metadata":{}},` +
		`{"name":"m","type":{"type":"map","keyType":"string","valueType":"long","valueContainsNull":false},"nullable":false,"metadata":{}},` +
		`{"name":"dur","type":{"type":"struct","fields":[{"name":"months","type":"long","nullable":false,"metadata":{}},{"name":"days","type":"long","nullable":false,"metadata":{}},{"name":"milliseconds","type":"long","nullable":false,"metadata":{}}]},"nullable":false,"metadata":{}},` +
		`{"name":"sub","type":{"type":"struct","fields":[{"name":"x","type":"long","nullable":false,"metadata":{}},{"name":"next","type":"string","nullable":true,"metadata":{}}]},"nullable":false,"metadata":{}}]}`
	if got := string(c.(decode.Described).ValueSchema()); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// With a reader schema the value schema is the reader's: its order, a field
// it adds (with its default), not the field it drops.
func TestValueSchemaFollowsTheReader(t *testing.T) {
	w := `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"gone","type":"string"},{"name":"b","type":"string"}]}`
	r := `{"type":"record","name":"R","fields":[{"name":"b","type":"string"},{"name":"a","type":"long"},{"name":"new","type":["null","double"],"default":null}]}`
	c, err := avro.Compile(w, nil, r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"struct","fields":[{"name":"b","type":"string","nullable":false,"metadata":{}},{"name":"a","type":"long","nullable":false,"metadata":{}},{"name":"new","type":"double","nullable":true,"metadata":{}}]}`
	if got := string(c.(decode.Described).ValueSchema()); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
