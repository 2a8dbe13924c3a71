package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	decoding "github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/decode/avro"
	protodec "github.com/picomq/heavy-sinks/connect/decode/proto"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/internal/testenv/workload"
)

// The pipelinebench workload's record in its Avro and Protobuf forms
// (tools/pipelinebench/testdata), so that decode()'s cost per record is
// measured on the record the end-to-end figures use.
const (
	workloadAvsc    = "../../tools/pipelinebench/testdata/workload.avsc"
	workloadBinpb   = "../../tools/pipelinebench/testdata/workload.binpb"
	workloadMessage = "picomq.bench.v1.Event"
)

// workloadFields reads the workload's JSON payloads as field maps, the
// two timestamps parsed (created_at RFC 3339, updated_at the sink's
// "2006-01-02 15:04:05.000" in UTC).
func workloadFields(tb testing.TB, n int) []map[string]any {
	data, _ := workload.Delta(1, n)
	out := make([]map[string]any, n)
	for i, r := range data[0] {
		var m map[string]any
		if err := json.Unmarshal(r.Payload, &m); err != nil {
			tb.Fatal(err)
		}
		for _, k := range []string{"created_at", "updated_at"} {
			t, err := time.Parse(time.RFC3339Nano, m[k].(string))
			if err != nil {
				t, err = time.Parse("2006-01-02 15:04:05.000", m[k].(string))
			}
			if err != nil {
				tb.Fatal(err)
			}
			m[k] = t
		}
		out[i] = m
	}
	return out
}

// workloadAvro returns the Avro codec and the records encoded with it.
func workloadAvro(tb testing.TB, n int) (decoding.Codec, []*kgo.Record) {
	text, err := os.ReadFile(workloadAvsc)
	if err != nil {
		tb.Fatal(err)
	}
	schema := hamba.MustParse(string(text))
	c, err := avro.Compile(string(text), nil, "")
	if err != nil {
		tb.Fatal(err)
	}
	recs := make([]*kgo.Record, n)
	for i, m := range workloadFields(tb, n) {
		for _, f := range schema.(*hamba.RecordSchema).Fields() {
			switch f.Type().Type() {
			case hamba.Long:
				if t, ok := m[f.Name()].(time.Time); ok {
					m[f.Name()] = t
				} else {
					m[f.Name()] = int64(m[f.Name()].(float64))
				}
			case hamba.Int:
				m[f.Name()] = int(m[f.Name()].(float64))
			}
		}
		b, err := hamba.Marshal(schema, m)
		if err != nil {
			tb.Fatal(err)
		}
		recs[i] = &kgo.Record{Topic: "a", Offset: int64(i), Timestamp: time.UnixMilli(1), Value: b}
	}
	return c, recs
}

// workloadProto returns the Protobuf codec and the records encoded with it
// (dynamicpb over the committed descriptor set).
func workloadProto(tb testing.TB, n int) (*protodec.Message, []*kgo.Record) {
	set, err := os.ReadFile(workloadBinpb)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := protodec.FromDescriptorSet(set, workloadMessage)
	if err != nil {
		tb.Fatal(err)
	}
	var fds descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(set, &fds); err != nil {
		tb.Fatal(err)
	}
	files, err := protodesc.NewFiles(&fds)
	if err != nil {
		tb.Fatal(err)
	}
	d, err := files.FindDescriptorByName(workloadMessage)
	if err != nil {
		tb.Fatal(err)
	}
	md := d.(protoreflect.MessageDescriptor)
	recs := make([]*kgo.Record, n)
	for i, m := range workloadFields(tb, n) {
		msg := dynamicpb.NewMessage(md)
		fields := md.Fields()
		for j := range fields.Len() {
			f := fields.Get(j)
			var v protoreflect.Value
			switch x := m[string(f.Name())].(type) {
			case time.Time:
				ts := dynamicpb.NewMessage(f.Message())
				ts.Set(f.Message().Fields().ByName("seconds"), protoreflect.ValueOfInt64(x.Unix()))
				ts.Set(f.Message().Fields().ByName("nanos"), protoreflect.ValueOfInt32(int32(x.Nanosecond())))
				v = protoreflect.ValueOfMessage(ts)
			case string:
				v = protoreflect.ValueOfString(x)
			case bool:
				v = protoreflect.ValueOfBool(x)
			case float64:
				switch f.Kind() {
				case protoreflect.Int64Kind:
					v = protoreflect.ValueOfInt64(int64(x))
				case protoreflect.Int32Kind:
					v = protoreflect.ValueOfInt32(int32(x))
				default:
					v = protoreflect.ValueOfFloat64(x)
				}
			}
			msg.Set(f, v)
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
		if err != nil {
			tb.Fatal(err)
		}
		recs[i] = &kgo.Record{Topic: "a", Offset: int64(i), Timestamp: time.UnixMilli(1), Value: b}
	}
	return c, recs
}

// BenchmarkDecodeWorkload is decode()'s cost per record of the
// pipelinebench workload's record with the real codecs, against the same
// records as JSON (checked, not rewritten): the runtime's decode cost the
// end-to-end "runtime CPU per record vs json" figures contain.
func BenchmarkDecodeWorkload(b *testing.B) {
	const n = 1000
	avroCodec, avroRecs := workloadAvro(b, n)
	protoCodec, protoRecs := workloadProto(b, n)
	data, _ := workload.Delta(1, n)
	jsonRecs := make([]*kgo.Record, n)
	for i, r := range data[0] {
		jsonRecs[i] = &kgo.Record{Topic: "a", Offset: int64(i), Timestamp: time.UnixMilli(1), Value: r.Payload}
	}
	for _, c := range []struct {
		name   string
		schema definition.Schema
		dec    decoding.Decoder
		recs   []*kgo.Record
	}{
		{"json", definition.SchemaJSON, nil, jsonRecs},
		{"avro", definition.SchemaAvro, decoding.Static{Codec: avroCodec}, avroRecs},
		{"proto", definition.SchemaProto, decoding.Static{Codec: protoCodec}, protoRecs},
	} {
		b.Run(c.name, func(b *testing.B) {
			var sc scratch
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, _, err := decode(context.Background(), c.schema, c.dec, c.recs, false, false, nil, &sc); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}
