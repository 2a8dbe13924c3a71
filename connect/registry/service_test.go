package registry_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/picomq/heavy-sinks/connect/registry"
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
)

// The real registry services.sh runs (Apicurio Registry, Confluent API):
// schemas registered there, records serialized by Confluent's own Python
// serializer, decoded here. The fake Compile keeps the format packages out:
// its JSON carries the schema text it was given and the payload bytes after
// the header, which must be exactly the Avro body fastavro writes.

const money = `{"type":"record","name":"Money","namespace":"shop","fields":[{"name":"units","type":"long"},{"name":"currency","type":"string"}]}`
const order = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"string"},{"name":"total","type":"shop.Money"}]}`

// serialize is Confluent's AvroSerializer, taking the subject's latest
// schema (with its references) from the registry, and fastavro's body of
// the same record under the expanded schema: it prints both as hex.
const serialize = `
import json, sys, fastavro
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import SerializationContext, MessageField
url, topic, money, order = sys.argv[1:5]
client = SchemaRegistryClient({"url": url})
ser = AvroSerializer(client, None, conf={"auto.register.schemas": False, "use.latest.version": True})
rec = {"id": "o-1", "total": {"units": 1234, "currency": "EUR"}}
if "note" in order: rec["note"] = "gift"
wire = ser(rec, SerializationContext(topic, MessageField.VALUE))
named = {}
fastavro.parse_schema(json.loads(money), named_schemas=named)
parsed = fastavro.parse_schema(json.loads(order), named_schemas=named)
import io
buf = io.BytesIO()
fastavro.schemaless_writer(buf, parsed, rec)
print(wire.hex())
print(buf.getvalue().hex())
`

func TestRealRegistryAvroWithReference(t *testing.T) {
	svc := services.RequireSchemaRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := registry.New(registry.Config{URLs: []string{svc.SchemaRegistryURL}})
	if err != nil {
		t.Fatal(err)
	}
	topic := fmt.Sprintf("regtest-%d", time.Now().UnixNano())
	common, err := cl.Registry().CreateSchema(ctx, topic+"-money", sr.Schema{Schema: money})
	if err != nil {
		t.Fatalf("registering shop.Money: %v", err)
	}
	top, err := cl.Registry().CreateSchema(ctx, topic+"-value", sr.Schema{Schema: order,
		References: []sr.SchemaReference{{Name: "shop.Money", Subject: common.Subject, Version: common.Version}}})
	if err != nil {
		t.Fatalf("registering shop.Order: %v", err)
	}

	lines := strings.Fields(pyenv.Run(t, serialize, svc.SchemaRegistryURL, topic, money, order))
	if len(lines) != 2 {
		t.Fatalf("python printed %q", lines)
	}
	wire, err := hex.DecodeString(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	c := &compiler{}
	d := registry.NewDecoder(cl, sr.TypeAvro, c.compile)
	got, err := d.AppendJSON(ctx, topic, nil, wire)
	if err != nil {
		t.Fatalf("decoding the Confluent serializer's record: %v", err)
	}
	c.mu.Lock()
	s := c.last
	c.mu.Unlock()
	if s.ID != top.ID || s.Type != sr.TypeAvro || !strings.Contains(s.Text, `"Order"`) ||
		len(s.References) != 1 || !strings.Contains(s.References["shop.Money"], `"Money"`) {
		t.Fatalf("compile got %+v, want schema id %d (shop.Order) with shop.Money resolved", s, top.ID)
	}
	body, _ := hex.DecodeString(lines[1])
	if want := fmt.Sprintf(`{"schema":%q,"payload":%q}`, s.Text, body); string(got) != want {
		t.Fatalf("decoded %s\nwant    %s", got, want)
	}

	// A new version mid-stream (a field added) is a new id: its records
	// decode with it, the first version's records still with theirs.
	const orderV2 = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"string"},{"name":"total","type":"shop.Money"},{"name":"note","type":"string","default":""}]}`
	v2, err := cl.Registry().CreateSchema(ctx, topic+"-value", sr.Schema{Schema: orderV2,
		References: []sr.SchemaReference{{Name: "shop.Money", Subject: common.Subject, Version: common.Version}}})
	if err != nil || v2.ID == top.ID {
		t.Fatalf("registering shop.Order v2: id %d (v1 %d), %v", v2.ID, top.ID, err)
	}
	lines2 := strings.Fields(pyenv.Run(t, serialize, svc.SchemaRegistryURL, topic, money, orderV2))
	wire2, _ := hex.DecodeString(lines2[0])
	got2, err := d.AppendJSON(ctx, topic, nil, wire2)
	body2, _ := hex.DecodeString(lines2[1])
	if want := fmt.Sprintf(`{"schema":%q,"payload":%q}`, orderV2Text(t, c), body2); err != nil || string(got2) != want {
		t.Fatalf("decoding a v2 record: %s, %v\nwant %s", got2, err, want)
	}
	if again, err := d.AppendJSON(ctx, topic, nil, wire); err != nil || string(again) != string(got) {
		t.Fatalf("a v1 record after v2: %s, %v", again, err)
	}
	if n := c.calls.Load(); n != 2 {
		t.Fatalf("%d compiles for two schema versions", n)
	}

	// The same id in a Protobuf block is the record's problem.
	pd := registry.NewDecoder(cl, sr.TypeProtobuf, c.compile)
	_, err = pd.AppendJSON(ctx, topic, nil, wire)
	wantRecordError(t, err, fmt.Sprintf("schema id %d is of type AVRO; this block decodes PROTOBUF", top.ID))
}

func TestRealRegistryProtobufWithImport(t *testing.T) {
	svc := services.RequireSchemaRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := registry.New(registry.Config{URLs: []string{svc.SchemaRegistryURL}})
	if err != nil {
		t.Fatal(err)
	}
	topic := fmt.Sprintf("regtest-%d", time.Now().UnixNano())
	const common = "syntax = \"proto3\";\npackage shop.v1;\n\nmessage Money {\n  int64 units = 1;\n  string currency = 2;\n}\n"
	const top = "syntax = \"proto3\";\npackage shop.v1;\n\nimport \"shop/v1/money.proto\";\n\nmessage Order {\n  string id = 1;\n  shop.v1.Money total = 2;\n}\n"
	m, err := cl.Registry().CreateSchema(ctx, topic+"-money", sr.Schema{Schema: common, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatalf("registering money.proto: %v", err)
	}
	o, err := cl.Registry().CreateSchema(ctx, topic+"-value", sr.Schema{Schema: top, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "shop/v1/money.proto", Subject: m.Subject, Version: m.Version}}})
	if err != nil {
		t.Fatalf("registering order.proto: %v", err)
	}
	c := &compiler{}
	d := registry.NewDecoder(cl, sr.TypeProtobuf, c.compile)
	// Header, message index [0] (one zero byte), then the message bytes:
	// the Decoder hands everything after the id to the codec.
	payload := append(wire(o.ID, "\x00"), 0x0a, 0x01, 'x')
	got, err := d.AppendJSON(ctx, topic, nil, payload)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	s := c.last
	c.mu.Unlock()
	if s.Type != sr.TypeProtobuf || !strings.Contains(s.Text, "message Order") || !strings.Contains(s.References["shop/v1/money.proto"], "message Money") {
		t.Fatalf("compile got %+v", s)
	}
	if want := fmt.Sprintf(`{"schema":%q,"payload":%q}`, s.Text, "\x00\x0a\x01x"); string(got) != want {
		t.Fatalf("decoded %s, want %s", got, want)
	}
}

func TestRealRegistryUnknownID(t *testing.T) {
	svc := services.RequireSchemaRegistry(t)
	cl, err := registry.New(registry.Config{URLs: []string{svc.SchemaRegistryURL}})
	if err != nil {
		t.Fatal(err)
	}
	d := registry.NewDecoder(cl, sr.TypeAvro, (&compiler{}).compile)
	clock := setClock(d)
	_, err = decodeOne(d, wire(2147483000, "x"))
	wantTransient(t, err, "schema id 2147483000 is not in the registry at "+svc.SchemaRegistryURL)
	clock.advance(registry.DefaultUnknownIDGrace)
	_, err = decodeOne(d, wire(2147483000, "x"))
	wantRecordError(t, err, "schema id 2147483000 is not in the registry at "+svc.SchemaRegistryURL)
}

// orderV2Text is the text the last compile was given, checked to be the
// second version's.
func orderV2Text(t *testing.T, c *compiler) string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !strings.Contains(c.last.Text, `"note"`) {
		t.Fatalf("last compiled schema %q is not v2", c.last.Text)
	}
	return c.last.Text
}
