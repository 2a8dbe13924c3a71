package pipeline

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	decoding "github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/transform"
)

// describedCodec is a codec (numberCodec when nil) with a value schema.
type describedCodec struct {
	codec  decoding.Codec
	schema []byte
}

func (c describedCodec) AppendJSON(dst, payload []byte) ([]byte, error) {
	if c.codec == nil {
		return numberCodec{}.AppendJSON(dst, payload)
	}
	return c.codec.AppendJSON(dst, payload)
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
	var xf *transform.Chain
	run := func(dec decoding.Decoder) []byte {
		t.Helper()
		b, _, _, _, err := decode(context.Background(), definition.SchemaAvro, dec, recs, false, false, xf, &sc)
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
	// Transforms change the records' shape: no value schema.
	chain, _, err := transform.Compile([]transform.Spec{{Type: transform.DeleteFields, Paths: []string{"a"}}})
	if err != nil {
		t.Fatal(err)
	}
	xf = chain
	if got := run(decoding.Static{Codec: describedCodec{codec: objectCodec{}, schema: []byte(v1)}}); got != nil {
		t.Errorf("with transforms: %s", got)
	}
}

// objectCodec writes {"a": <the payload's length>}: transforms need objects.
type objectCodec struct{}

func (objectCodec) AppendJSON(dst, payload []byte) ([]byte, error) {
	return fmt.Appendf(dst, `{"a":%d}`, len(payload)), nil
}

// A Static codec's schema, asked once per batch, still describes the
// batch only when a record was decoded: not a batch of tombstones, nor one
// whose only records were dead-lettered; and a tolerated bad record does
// not take it away from the others'.
func TestBatchValueSchemaStaticOnce(t *testing.T) {
	const v1 = `{"type":"struct","fields":[{"name":"a","type":"long","nullable":false,"metadata":{}}]}`
	var sc scratch
	dec := decoding.Static{Codec: describedCodec{codec: failFirst{}, schema: []byte(v1)}}
	run := func(recs []*kgo.Record) []byte {
		t.Helper()
		b, _, _, _, err := decode(context.Background(), definition.SchemaAvro, dec, recs, true, false, nil, &sc)
		if err != nil {
			t.Fatal(err)
		}
		return b.ValueSchema
	}
	tombstones := binaryRecords(2)
	for _, r := range tombstones {
		r.Value = nil
	}
	if got := run(tombstones); got != nil {
		t.Errorf("tombstones only: %s", got)
	}
	bad := binaryRecords(1)
	bad[0].Value = []byte("x")
	if got := run(bad); got != nil {
		t.Errorf("the only record dead-lettered: %s", got)
	}
	mixed := append(bad, binaryRecords(2)...)
	if got := run(mixed); string(got) != v1 {
		t.Errorf("a bad record, then good ones: %s", got)
	}
}

// failFirst refuses the payload "x" (a record error); numberCodec else.
type failFirst struct{}

func (failFirst) AppendJSON(dst, payload []byte) ([]byte, error) {
	if string(payload) == "x" {
		return dst, decoding.Recordf("bad record")
	}
	return numberCodec{}.AppendJSON(dst, payload)
}
