package connect_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// regOrderAvro is the Avro schema of the registry test's main records: every
// kind of value the sinks take from Avro.
const regOrderAvro = `{"type":"record","name":"Order","namespace":"e2e.reg","fields":[
 {"name":"id","type":"long"},
 {"name":"big","type":"long"},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":3}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"ratio","type":"double"},
 {"name":"address","type":{"type":"record","name":"Address","fields":[{"name":"street","type":"string"},{"name":"zip","type":"int"}]}},
 {"name":"attrs","type":{"type":"map","values":"long"}},
 {"name":"tags","type":{"type":"array","items":"string"}}]}`

const regOrderTable = `[("id", pa.int64()), ("big", pa.int64()), ("amount", pa.decimal128(12, 3)),
 ("ts", pa.timestamp("us", tz="UTC")), ("day", pa.date32()), ("note", pa.string()), ("ratio", pa.float64()),
 ("address", pa.struct([("street", pa.string()), ("zip", pa.int32())])),
 ("attrs", pa.map_(pa.string(), pa.int64())), ("tags", pa.list_(pa.string()))]`

// regOrderRows are the records, as the serializer is given them (decimal,
// timestamp and date as their text), which is also the form read_delta.py
// prints them in: the table must hold exactly these.
var regOrderRows = []string{
	`{"id":1,"big":9223372036854775807,"amount":"-12.340","ts":"2026-09-03T21:15:04.123456Z","day":"2026-09-03","note":"gift é😀","ratio":0.1,"address":{"street":"1 Main St","zip":12345},"attrs":{"a":1,"b":-9223372036854775808},"tags":["x","y"]}`,
	`{"id":2,"big":-9223372036854775808,"amount":"999999999.999","ts":"1969-12-31T23:59:59.999999Z","day":"1900-01-01","note":null,"ratio":-1e-300,"address":{"street":"","zip":-1},"attrs":{},"tags":[]}`,
	`{"id":3,"big":0,"amount":"0.005","ts":"2000-02-29T00:00:00.000001Z","day":"2000-02-29","note":"","ratio":1.7976931348623157e308,"address":{"street":"Ü","zip":0},"attrs":{"k":0},"tags":[""]}`,
}

// regTotalAvro references e2e.reg.Money, registered under a subject of its
// own.
const (
	regMoneyAvro = `{"type":"record","name":"Money","namespace":"e2e.reg","fields":[{"name":"units","type":"long"},{"name":"currency","type":"string"}]}`
	regTotalAvro = `{"type":"record","name":"Total","namespace":"e2e.reg","fields":[{"name":"id","type":"long"},{"name":"total","type":"e2e.reg.Money"}]}`
)

const (
	regEventV1 = `{"type":"record","name":"Event","namespace":"e2e.reg","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`
	// regEventV2 adds a field with a default: BACKWARD compatible.
	regEventV2 = `{"type":"record","name":"Event","namespace":"e2e.reg","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"score","type":"long","default":7}]}`
	// regEventNoDefault adds it without one: not BACKWARD compatible.
	regEventNoDefault = `{"type":"record","name":"Event","namespace":"e2e.reg","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"score","type":"long"}]}`
)

// Records serialized by Confluent's own Python serializers against the
// real Schema Registry (Apicurio 2.4.2, Confluent API), produced to the
// real Kafka broker, decoded by picomq-connect (one process for every case,
// to keep the time down) and written by the real Delta .so, read back by
// delta-rs (the Redshift .so, read with SQL, where said):
//
//   - Avro with every kind of value (decimal, timestamp-micros, date, a
//     nullable union, a nested record, a map, an array): exact; and a
//     schema referencing another subject's type;
//   - Avro schema evolution mid-stream: v2 (a field with a default, the
//     subject BACKWARD) registered after v1's records landed; add_columns
//     adds the column, v1 rows null in it; a second block with the reader
//     schema v2 reads v1 records with the default;
//   - Protobuf with an imported file (a reference in the registry), a
//     nested message, and records of the file's second message (message
//     indexes [1]);
//   - FlatBuffers with a static .bfbs (no registry);
//   - the same Avro, Protobuf and FlatBuffers topics into Redshift (the
//     emulator over PostgreSQL), the JSON the plugin got read with SQL;
//   - bad input (wrong magic byte, unknown schema id, a truncated body)
//     under errors_tolerance "all" (dead letters, original bytes, class
//     encoding) and "none" (the consumer stops naming the offset, nothing
//     committed);
//   - a registry outage (a proxy answering 503, then closing connections,
//     then stalling past schema_registry_timeout): the batch waits, no
//     dead letter, offset held, decode_retry logged; once the proxy
//     forwards, it lands once.
func TestSchemaRegistryOnRealBroker(t *testing.T) {
	r := newRegRig(t)
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	avroBlock := `schema = "avro"
schema_registry_url = %q
errors_tolerance = %q`

	// 1. Avro, every type.
	avroTopic := r.topic("avro")
	avroTable := r.table("avro", regOrderTable)
	avroGroup := r.sink("avro", avroTopic, avroTable, fmt.Sprintf(avroBlock, r.registry, "none"), "")
	good := r.serialize("avro", r.registry, avroTopic, regOrderAvro, "["+strings.Join(regOrderRows, ",")+"]")
	r.produce(avroTopic, good...)

	// An Avro schema referencing a type of another subject, registered
	// by hand; the serializer takes the subject's latest version.
	refTopic := r.topic("avroref")
	refTable := r.table("avroref", `[("id", pa.int64()), ("total", pa.struct([("units", pa.int64()), ("currency", pa.string())]))]`)
	refGroup := r.sink("avroref", refTopic, refTable, fmt.Sprintf(avroBlock, r.registry, "none"), "")
	money, err := r.registryClient().CreateSchema(ctx, refTopic+"-money", sr.Schema{Schema: regMoneyAvro})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.registryClient().CreateSchema(ctx, refTopic+"-value", sr.Schema{Schema: regTotalAvro,
		References: []sr.SchemaReference{{Name: "e2e.reg.Money", Subject: money.Subject, Version: money.Version}}}); err != nil {
		t.Fatal(err)
	}
	r.produce(refTopic, r.serialize("avro", r.registry, refTopic, "-",
		`[{"id":1,"total":{"units":1234,"currency":"EUR"}},{"id":2,"total":{"units":-9223372036854775808,"currency":""}}]`)...)

	// 2. Evolution: one topic, two sinks: add_columns, and a reader schema.
	evoTopic := r.topic("evo")
	evoTable := r.table("evo", `[("id", pa.int64()), ("name", pa.string())]`)
	evoGroup := r.sink("evo", evoTopic, evoTable, fmt.Sprintf(avroBlock, r.registry, "none"), `schema_evolution = "add_columns"`)
	readerTable := r.table("reader", `[("id", pa.int64()), ("name", pa.string()), ("score", pa.int64())]`)
	readerGroup := r.sink("reader", evoTopic, readerTable,
		fmt.Sprintf(avroBlock, r.registry, "none")+fmt.Sprintf("\navro_schema_json = %q", regEventV2), "")
	r.produce(evoTopic, r.serialize("avro", r.registry, evoTopic, regEventV1,
		`[{"id":1,"name":"v1-a"},{"id":2,"name":"v1-b"},{"id":3,"name":"v1-c"}]`)...)
	for _, res := range r.registryClient().SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatBackward}, evoTopic+"-value") {
		if res.Err != nil {
			t.Fatalf("setting BACKWARD on %s-value: %v", evoTopic, res.Err)
		}
	}
	if _, err := r.registryClient().CreateSchema(ctx, evoTopic+"-value", sr.Schema{Schema: regEventNoDefault}); err == nil {
		t.Fatalf("the registry took a version that is not BACKWARD compatible: the subject's rule is off")
	}

	// 3. Protobuf: Orders (message index [0]) and Refunds ([1]).
	protoTopic := r.topic("proto")
	protoTable := r.table("proto", `[("id", pa.int64()),
 ("total", pa.struct([("currency", pa.string()), ("units", pa.int64())])),
 ("line", pa.struct([("sku", pa.string()), ("count", pa.int32())])),
 ("tags", pa.list_(pa.string())), ("created_at", pa.timestamp("us", tz="UTC")), ("reason", pa.string()),
 ("amount", pa.struct([("currency", pa.string()), ("units", pa.int64())]))]`)
	protoGroup := r.sink("proto", protoTopic, protoTable, fmt.Sprintf(`schema = "proto"
schema_registry_url = %q`, r.registry), "")
	protoPayloads := r.serialize("proto", r.registry, protoTopic, `[
 {"kind":"order","id":1,"total":{"currency":"EUR","units":9223372036854775807},"line":{"sku":"sku-1","count":3},"tags":["a","b"],"created_at":"2026-09-03T21:15:04.123456Z"},
 {"kind":"order","id":2},
 {"kind":"refund","id":3,"reason":"late","amount":{"currency":"USD","units":-5}},
 {"kind":"refund","id":4}]`)
	if idx := protoPayloads[2][5:7]; string(idx) != "\x02\x02" { // count 1, index 1 (zigzag)
		t.Fatalf("a Refund's message indexes are % x, want [1] (02 02)", idx)
	}
	// The serializer registered the import as a reference of its own
	// subject, which Apicurio keeps: the decoder must resolve it.
	orderID := int(binary.BigEndian.Uint32(protoPayloads[0][1:5]))
	if s, err := r.registryClient().SchemaByID(ctx, orderID); err != nil || len(s.References) != 1 || s.References[0].Name != "shop/e2e/money.proto" {
		t.Fatalf("schema id %d in the registry: references %+v, %v; want shop/e2e/money.proto", orderID, s.References, err)
	}
	r.produce(protoTopic, protoPayloads...)

	// 4. FlatBuffers: flatc's buffer and one of Python's flatbuffers.
	fbsTopic := r.topic("fbs")
	fbsTable := r.table("fbs", `[("id", pa.int64()), ("customer", pa.string()), ("amount", pa.float64()),
 ("quantity", pa.int32()), ("currency", pa.string()), ("status", pa.string()), ("created_at_us", pa.int64()),
 ("tags", pa.list_(pa.string())), ("shipped", pa.bool_()), ("discount", pa.float32()),
 ("address", pa.struct([("street", pa.string()), ("city", pa.string()), ("country", pa.string())])),
 ("sku", pa.string())]`)
	fbsDir := filepath.Join(root, "connect", "decode", "flatbuf", "testdata")
	fbsGroup := r.sink("fbs", fbsTopic, fbsTable, fmt.Sprintf(`schema = "flatbuffer"
flatbuffer_schema_path = %q`, filepath.Join(fbsDir, "order.bfbs")), "")
	flatc, err := os.ReadFile(filepath.Join(fbsDir, "order.bin"))
	if err != nil {
		t.Fatal(err)
	}
	r.produce(fbsTopic, append([][]byte{flatc}, r.serialize("fbs", "-", "-")...)...)

	// The same three topics into Redshift: the payload column holds the
	// JSON the runtime decoded, compared whole (every key, absent or null).
	rsDB, rsGroups := r.redshiftSink(map[string]string{
		avroTopic:  fmt.Sprintf(avroBlock, r.registry, "none"),
		protoTopic: fmt.Sprintf("schema = \"proto\"\nschema_registry_url = %q", r.registry),
		fbsTopic:   fmt.Sprintf("schema = \"flatbuffer\"\nflatbuffer_schema_path = %q", filepath.Join(fbsDir, "order.bfbs")),
	})

	// 5. Bad input. The header of a schema id no registry holds, the
	// magic byte changed, and a body cut after its first 3 bytes.
	unknown := binary.BigEndian.AppendUint32([]byte{0}, 999999)
	badMagic := append([]byte{1}, good[0][1:]...)
	badID := append(unknown, good[0][5:]...)
	truncated := good[2][:5+3]
	goodID := binary.BigEndian.Uint32(good[0][1:5])
	badTopic := r.topic("bad")
	badTable := r.table("bad", regOrderTable)
	badGroup := r.sink("bad", badTopic, badTable, fmt.Sprintf(avroBlock, r.registry, "all"), "")
	badValues := [][]byte{good[0], badMagic, good[1], badID, truncated, good[2]}
	r.produce(badTopic, badValues...)
	// offset → what the dead letter's message must say
	badWhy := map[int64]string{
		1: "payload starts with byte 0x01, not the Confluent wire format's magic byte 0",
		3: "schema id 999999 is not in the registry at " + r.registry,
		4: fmt.Sprintf("schema id %d: ", goodID),
	}
	type stopCase struct{ name, topic, table, group, why string }
	var stops []stopCase
	for _, c := range []struct {
		name string
		bad  []byte
		why  string
	}{{"magic", badMagic, badWhy[1]}, {"unknown", badID, badWhy[3]}, {"truncated", truncated, badWhy[4]}} {
		s := stopCase{name: "none-" + c.name, topic: r.topic("none-" + c.name), why: c.why}
		s.table = r.table(s.name, regOrderTable)
		s.group = r.sink(s.name, s.topic, s.table, fmt.Sprintf(avroBlock, r.registry, "none"), "")
		r.produce(s.topic, good[0], c.bad, good[1])
		stops = append(stops, s)
	}

	// 6. Outage: the block's registry is a proxy, unavailable at first.
	proxy := newSwitchProxy(t, r.registry)
	outTopic := r.topic("outage")
	outTable := r.table("outage", regOrderTable)
	outGroup := r.sink("outage", outTopic, outTable, fmt.Sprintf(avroBlock, proxy.url, "all")+`
schema_registry_timeout = "1s"`, "")
	r.produce(outTopic, good...)

	r.start()

	// The outage first, while the other sinks work.
	retry := regexp.MustCompile(`event=decode_retry topic=` + regexp.QuoteMeta(outTopic) + ` `)
	r.waitLog(retry, 2)
	proxy.mode.Store(proxyDrop)
	r.waitLog(regexp.MustCompile(retry.String()+`.*EOF`), 1)
	proxy.mode.Store(proxyStall)
	r.waitLog(regexp.MustCompile(retry.String()+`.*(Timeout|deadline)`), 1)
	if got := r.committed(outGroup, outTopic); got != -1 {
		t.Errorf("outage: committed offset %d while the registry was down, want none", got)
	}
	if n := r.endOffset(outTopic + ".dlq"); n != 0 {
		t.Errorf("outage: %d dead letters while the registry was down, want none", n)
	}
	if rows := r.read(outTable)[outTable]; len(rows) != 0 {
		t.Errorf("outage: %d rows landed while the registry was down", len(rows))
	}
	hits := proxy.hits.Load()
	proxy.mode.Store(proxyForward)

	// Evolution: v1 landed; now v2, registered by its producer.
	r.waitAtEnd(evoGroup, evoTopic)
	r.waitAtEnd(readerGroup, evoTopic)
	r.produce(evoTopic, r.serialize("avro", r.registry, evoTopic, regEventV2,
		`[{"id":4,"name":"v2-d","score":-9223372036854775808},{"id":5,"name":"v2-e","score":42}]`)...)

	for group, topic := range map[string]string{avroGroup: avroTopic, refGroup: refTopic, evoGroup: evoTopic, readerGroup: evoTopic,
		protoGroup: protoTopic, fbsGroup: fbsTopic, badGroup: badTopic, outGroup: outTopic} {
		r.waitAtEnd(group, topic)
	}
	for topic, group := range rsGroups {
		r.waitAtEnd(group, topic)
	}
	for _, s := range stops {
		r.waitLog(regexp.MustCompile(`event=consumer_failed.*`+regexp.QuoteMeta(s.group)+`.*record at offset 1 cannot be decoded \(schema = \\"avro\\"\): `+regexp.QuoteMeta(strings.ReplaceAll(s.why, `"`, `\"`))), 1)
	}
	code := r.rt.stop()
	if code != 1 || r.rt.selfExits != 0 { // 1: the "none" sinks stopped on a failure
		t.Errorf("picomq-connect exit code %d (want 1: three sinks failed), %d exits by itself\n%s", code, r.rt.selfExits, r.rt.tail())
	}
	if proxy.hits.Load() == hits {
		t.Errorf("outage: no request through the proxy once it forwarded")
	}

	uris := []string{avroTable, refTable, evoTable, readerTable, protoTable, fbsTable, badTable, outTable}
	for _, s := range stops {
		uris = append(uris, s.table)
	}
	tables := r.read(uris...)

	regCheckRows(t, "avro", tables[avroTable], regOrderRows...)
	regCheckRows(t, "avro with a reference", tables[refTable],
		`{"id":1,"total":{"units":1234,"currency":"EUR"}}`, `{"id":2,"total":{"units":-9223372036854775808,"currency":""}}`)
	regCheckRows(t, "outage", tables[outTable], regOrderRows...)
	regCheckRows(t, "evolution (add_columns)", tables[evoTable],
		`{"id":1,"name":"v1-a","score":null}`, `{"id":2,"name":"v1-b","score":null}`, `{"id":3,"name":"v1-c","score":null}`,
		`{"id":4,"name":"v2-d","score":-9223372036854775808}`, `{"id":5,"name":"v2-e","score":42}`)
	regCheckRows(t, "evolution (reader schema v2)", tables[readerTable],
		`{"id":1,"name":"v1-a","score":7}`, `{"id":2,"name":"v1-b","score":7}`, `{"id":3,"name":"v1-c","score":7}`,
		`{"id":4,"name":"v2-d","score":-9223372036854775808}`, `{"id":5,"name":"v2-e","score":42}`)
	regCheckRows(t, "protobuf", tables[protoTable],
		`{"id":1,"total":{"currency":"EUR","units":9223372036854775807},"line":{"sku":"sku-1","count":3},"tags":["a","b"],"created_at":"2026-09-03T21:15:04.123456Z","reason":null,"amount":null}`,
		`{"id":2,"total":null,"line":null,"tags":[],"created_at":null,"reason":null,"amount":null}`,
		`{"id":3,"total":null,"line":null,"tags":null,"created_at":null,"reason":"late","amount":{"currency":"USD","units":-5}}`,
		`{"id":4,"total":null,"line":null,"tags":null,"created_at":null,"reason":"","amount":null}`)
	// The float column holds float32(0.15), which Python prints widened.
	regCheckRows(t, "flatbuffers", tables[fbsTable],
		`{"id":-2,"customer":"Grace Hopper","amount":-0.5,"quantity":0,"currency":null,"status":"Pending","created_at_us":0,"tags":[],"shipped":true,"discount":0.0,"address":null,"sku":null}`,
		`{"id":1234567890123,"customer":"Ada Lovelace","amount":1234.56,"quantity":3,"currency":"EUR","status":"Shipped","created_at_us":1788470104123456,"tags":["priority","gift"],"shipped":true,"discount":0.15000000596046448,"address":{"street":"12 Analytical Row","city":"London","country":"GB"},"sku":"SKU-000123-XL"}`)
	regCheckRows(t, "redshift avro", r.redshiftPayloads(rsDB, "reg_avro"), regOrderRows...)
	regCheckRows(t, "redshift protobuf", r.redshiftPayloads(rsDB, "reg_proto"),
		`{"id":1,"total":{"currency":"EUR","units":9223372036854775807},"line":{"sku":"sku-1","count":3},"tags":["a","b"],"created_at":"2026-09-03T21:15:04.123456Z"}`,
		`{"id":2,"total":null,"line":null,"tags":[],"created_at":null}`,
		`{"id":3,"reason":"late","amount":{"currency":"USD","units":-5}}`,
		`{"id":4,"reason":"","amount":null}`)
	// Absent strings and tables of a FlatBuffer have no key.
	regCheckRows(t, "redshift flatbuffers", r.redshiftPayloads(rsDB, "reg_fbs"),
		`{"id":-2,"customer":"Grace Hopper","amount":-0.5,"quantity":0,"status":"Pending","created_at_us":0,"tags":[],"shipped":true,"discount":0}`,
		`{"id":1234567890123,"customer":"Ada Lovelace","amount":1234.56,"quantity":3,"currency":"EUR","status":"Shipped","created_at_us":1788470104123456,"tags":["priority","gift"],"shipped":true,"discount":0.15,"address":{"street":"12 Analytical Row","city":"London","country":"GB"},"sku":"SKU-000123-XL"}`)
	regCheckRows(t, "bad input, errors_tolerance all", tables[badTable], regOrderRows...)
	for _, s := range stops {
		regCheckRows(t, s.name, tables[s.table])
		if got := r.committed(s.group, s.topic); got != -1 {
			t.Errorf("%s: committed offset %d, want none (the batch stopped)", s.name, got)
		}
	}

	// The dead letters: exactly the three bad records, original bytes.
	dead := r.deadLetters(badTopic, len(badWhy))
	if len(dead) != len(badWhy) {
		t.Fatalf("%d dead letters of %s, want %d", len(dead), badTopic, len(badWhy))
	}
	for _, d := range dead {
		h := map[string]string{}
		for _, kv := range d.Headers {
			h[kv.Key] = string(kv.Value)
		}
		var off int64 = -1
		fmt.Sscan(h[metadata.DeadLetterOffset], &off)
		why, ok := badWhy[off]
		switch {
		case !ok:
			t.Errorf("dead letter of offset %q, which is not a bad record", h[metadata.DeadLetterOffset])
		case string(d.Value) != string(badValues[off]):
			t.Errorf("offset %d: dead letter % x, want the original % x", off, d.Value, badValues[off])
		case h[metadata.DeadLetterClass] != "encoding":
			t.Errorf("offset %d: class %q, want encoding", off, h[metadata.DeadLetterClass])
		case !strings.Contains(h[metadata.DeadLetterMessage], why):
			t.Errorf("offset %d: message %q does not say %q", off, h[metadata.DeadLetterMessage], why)
		case h[metadata.DeadLetterTopic] != badTopic || h[metadata.DeadLetterPartition] != "0":
			t.Errorf("offset %d: headers %v", off, h)
		}
		delete(badWhy, off)
	}
	if n := r.endOffset(outTopic + ".dlq"); n != 0 {
		t.Errorf("outage: %d dead letters, want none", n)
	}
}

// registryClient is a franz-go client of the real registry, for settings
// the serializers do not make.
func (r *regRig) registryClient() *sr.Client {
	r.t.Helper()
	cl, err := sr.NewClient(sr.URLs(r.registry))
	if err != nil {
		r.t.Fatal(err)
	}
	return cl
}
