package pipeline

import (
	"context"
	"testing"

	decoding "github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/definition"
)

// describedCodec is numberCodec with a value schema.
type describedCodec struct {
	numberCodec
	schema []byte
}

func (c describedCodec) ValueSchema() []byte { return c.schema }

// versions describes record i with schemas[i%len(schemas)], as a registry
// decoder with several schema ids in one batch would.
type versions struct {
	decoding.Static
	schemas [][]byte
	n       *int
}

func (v versions) RecordSchema(context.Context, string, []byte) []byte {
	s := v.schemas[*v.n%len(v.schemas)]
	*v.n++
	return s
}

func TestBatchValueSchema(t *testing.T) {
	const (
		v1 = `{"type":"struct","fields":[{"name":"a","type":"long","nullable":false,"metadata":{}}]}`
		v2 = `{"type":"struct","fields":[{"name":"a","type":"long","nullable":false,"metadata":{}},{"name":"b","type":"string","nullable":false,"metadata":{}}]}`
	)
	recs := binaryRecords(3)
	var sc scratch
	run := func(dec decoding.Decoder) []byte {
		t.Helper()
		b, _, _, _, err := decode(context.Background(), definition.SchemaAvro, dec, recs, false, false, nil, &sc)
		if err != nil {
			t.Fatal(err)
		}
		return b.ValueSchema
	}
	if got := run(decoding.Static{Codec: describedCodec{schema: []byte(v1)}}); string(got) != v1 {
		t.Errorf("static: %s", got)
	}
	if got := run(decoding.Static{Codec: numberCodec{}}); got != nil {
		t.Errorf("a codec that does not describe: %s", got)
	}
	n := 0
	merged := `{"type":"struct","fields":[{"name":"a","type":"long","nullable":false,"metadata":{}},{"name":"b","type":"string","nullable":true,"metadata":{}}]}`
	if got := run(versions{decoding.Static{Codec: numberCodec{}}, [][]byte{[]byte(v1), []byte(v2)}, &n}); string(got) != merged {
		t.Errorf("two versions: %s", got)
	}
	n = 0
	if got := run(versions{decoding.Static{Codec: numberCodec{}}, [][]byte{[]byte(v1), nil}, &n}); got != nil {
		t.Errorf("a record undescribed: %s", got)
	}
}
