package main

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/decode/avro"
	protodec "github.com/picomq/heavy-sinks/connect/decode/proto"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/transform"
	"github.com/picomq/heavy-sinks/internal/testenv/workload"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

// TestFormatsSameRecords: the Avro and protobuf payloads, decoded by the
// runtime's own codecs, are the workload's JSON records: every field, the
// same values (timestamps compared as instants, since the formats write
// them in RFC 3339 where the workload's updated_at is "2006-01-02 ...").
func TestFormatsSameRecords(t *testing.T) {
	data, _ := workload.Delta(3, 500)
	codecs := map[string]func() (decode.Codec, error){
		"avro":  func() (decode.Codec, error) { return avro.Compile(avroSchema, nil, "") },
		"proto": func() (decode.Codec, error) { return protodec.FromDescriptorSet(protoDescriptorSet, protoMessage) },
	}
	for format, compile := range codecs {
		codec, err := compile()
		if err != nil {
			t.Fatal(format, err)
		}
		encoded, err := encodeWorkload(data, format)
		if err != nil {
			t.Fatal(err)
		}
		for b := range data {
			for i, rec := range data[b] {
				got, err := codec.AppendJSON(nil, encoded[b][i].Payload)
				if err != nil {
					t.Fatalf("%s record %d: %v", format, rec.Offset, err)
				}
				if encoded[b][i].Offset != rec.Offset || encoded[b][i].TimestampMs != rec.TimestampMs {
					t.Fatalf("%s record %d: offset/timestamp changed", format, rec.Offset)
				}
				want, have := normalized(t, rec.Payload), normalized(t, got)
				if !reflect.DeepEqual(want, have) {
					t.Fatalf("%s record %d:\n decoded %s\n workload %s", format, rec.Offset, got, rec.Payload)
				}
			}
		}
	}
}

// normalized is a record's JSON as a map, its two timestamps as instants.
func normalized(t *testing.T, payload []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 20 {
		t.Fatalf("%d fields (%v) in %s", len(m), slices.Sorted(maps.Keys(m)), payload)
	}
	for _, k := range []string{"created_at", "updated_at"} {
		s, _ := m[k].(string)
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			ts, err = time.Parse("2006-01-02 15:04:05.000", s)
		}
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		m[k] = ts.UTC()
	}
	return m
}

// TestVariantDefinitions: each variant's definition is one the runtime
// takes, with the schema, its keys and (for +transforms) the three
// transforms.
func TestVariantDefinitions(t *testing.T) {
	vs, err := parseVariants("json,avro,proto,json+transforms,proto+transforms")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	for _, v := range vs {
		block, err := v.block(work)
		if err != nil {
			t.Fatal(err)
		}
		text := bench.SinkDefinitionSchema("bench_k", "lib", []string{"t"}, v.format, append([]string{"batch_length = 1000"}, block...),
			map[string]any{"table_uri": "file:///x"})
		def, err := definition.Parse("d.toml", []byte(text))
		if err != nil {
			t.Fatalf("%s: %v\n%s", v, err, text)
		}
		b := def.Topics[0]
		if string(b.Schema) != v.format || b.BatchLength != 1000 || (b.Transforms != nil) != v.transforms {
			t.Errorf("%s: parsed schema %q, batch_length %d, transforms %v from\n%s", v, b.Schema, b.BatchLength, b.Transforms, text)
		}
		if v.transforms {
			chainLandsInColumns(t, b.Transforms)
		}
		if v.format == "avro" && !strings.HasSuffix(b.AvroSchemaPath, "workload.avsc") ||
			v.format == "proto" && (!strings.HasSuffix(b.ProtoDescriptorSetPath, "workload.binpb") || b.ProtoMessage != protoMessage) {
			t.Errorf("%s: schema keys %+v", v, b)
		}
	}
}

// chainLandsInColumns: the chain's output has only fields the workload's
// table has columns for (the plugin skips none), referrer's value in note.
func chainLandsInColumns(t *testing.T, chain *transform.Chain) {
	t.Helper()
	var schema struct{ Fields []struct{ Name string } }
	if err := json.Unmarshal([]byte(workload.DeltaSchema), &schema); err != nil {
		t.Fatal(err)
	}
	columns := map[string]bool{}
	for _, f := range schema.Fields {
		columns[f.Name] = true
	}
	data, _ := workload.Delta(1, 1)
	in := data[0][0].Payload
	out, keep, err := chain.Apply(nil, in, &transform.Meta{Timestamp: time.Now()})
	if err != nil || !keep {
		t.Fatalf("chain: keep %v, %v", keep, err)
	}
	var before, after map[string]any
	if err := json.Unmarshal(in, &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &after); err != nil {
		t.Fatal(err)
	}
	for k := range after {
		if !columns[k] {
			t.Errorf("field %q has no column: %s", k, out)
		}
	}
	if _, ok := after["referrer"]; ok || after["note"] != before["referrer"] || len(after) != len(columns)-1 ||
		after["updated_at"] == before["updated_at"] {
		t.Errorf("chain output %s from %s", out, in)
	}
}

func TestParseVariantsRefuses(t *testing.T) {
	for _, list := range []string{"avro", "json,xml", "json,json", "json,avro+rename", ""} {
		if _, err := parseVariants(list); err == nil {
			t.Errorf("%q: no error", list)
		}
	}
}
