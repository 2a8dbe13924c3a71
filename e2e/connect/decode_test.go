package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// The small Avro record (testdata/decode/small.avsc) and its Delta table.
const smallTable = `[("id", pa.int64()), ("status", pa.string()), ("secret", pa.string()),
	("amount", pa.decimal128(20, 4)), ("ts", pa.timestamp("us", tz="UTC")), ("name", pa.string())]`

// smallRow is row id of small.avsc as fastavro's encoder takes it (JSON),
// and the canonical row delta-rs must read back from smallTable.
func smallRow(id int64) (encode map[string]any, canon map[string]any) {
	amount := fmt.Sprintf("-%d.%04d", id, 1000+id)
	ts := int64(1788469504123456) + id
	encode = map[string]any{"id": id, "status": "new", "secret": "s" + strconv.FormatInt(id, 10),
		"amount": amount, "ts": ts, "name": "n" + strconv.FormatInt(id, 10)}
	canon = map[string]any{"id": id, "status": "new", "secret": encode["secret"], "amount": "decimal:" + amount,
		"ts": "micros:" + strconv.FormatInt(ts, 10), "name": encode["name"]}
	return encode, canon
}

// avroSmall encodes small rows ids with fastavro, returning the records
// and the canonical rows.
func (r *decodeRig) avroSmall(ids []int64) ([]*kgo.Record, []map[string]any) {
	var enc, canon []map[string]any
	for _, id := range ids {
		e, c := smallRow(id)
		enc, canon = append(enc, e), append(canon, c)
	}
	js, _ := json.Marshal(enc)
	var values []string
	r.python(&values, "encode_avro.py", filepath.Join(r.py, "small.avsc"), string(js))
	return records(r.t, values), canon
}

// protoSmall encodes Order{id, name} messages with the Python protobuf
// runtime (the module gen_proto.py generated into dir).
func (r *decodeRig) protoSmall(dir string, ids []int64) []*kgo.Record {
	var rows []map[string]any
	for _, id := range ids {
		rows = append(rows, map[string]any{"id": id, "name": "n" + strconv.FormatInt(id, 10)})
	}
	js, _ := json.Marshal(rows)
	var values []string
	r.python(&values, "encode_proto.py", dir, string(js))
	return records(r.t, values)
}

func jsonRows(t *testing.T, rows []map[string]any) []string {
	t.Helper()
	var out []string
	for _, row := range rows {
		b, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// Avro and Protobuf payloads encoded by independent encoders (fastavro,
// the official Python protobuf runtime with protoc-generated classes),
// produced to the real Apache Kafka broker, decoded by the built
// picomq-connect and written by the real Delta and Redshift .so files,
// read back by delta-rs and SQL: every type lands exactly; bad payloads
// go to the dead-letter topic with their original bytes under
// errors_tolerance = "all" and stop the consumer naming the offset under
// "none"; transforms (unwrap_envelope, filter_records, add_fields,
// update_fields, delete_fields) on JSON and on decoded Avro land as
// documented and dropped records move the offset and are counted. One
// runtime runs every case (three definitions, ten blocks).
func TestDecodeAndTransformsOnRealBroker(t *testing.T) {
	r := newDecodeRig(t)
	protoDir := t.TempDir()
	tableURI := "file://" + filepath.Join(r.tables, "{topic_segment[-1]}")
	smallSchema := filepath.Join(r.py, "small.avsc")

	// 1. Avro, every type.
	avroTypes := r.topic("avrotypes")
	r.table("avrotypes", `[("id", pa.int64()), ("l", pa.int64()), ("i", pa.int32()), ("d", pa.float64()),
	("f", pa.float32()), ("b", pa.bool_()), ("s", pa.string()), ("raw", pa.binary()),
	("dec", pa.decimal128(20, 4)), ("ts_us", pa.timestamp("us", tz="UTC")), ("ts_ms", pa.timestamp("us", tz="UTC")),
	("day", pa.date32()), ("uid", pa.string()), ("color", pa.string()), ("opt", pa.string()),
	("addr", pa.struct([("city", pa.string()), ("zip", pa.int32())])), ("tags", pa.list_(pa.string())),
	("attrs", pa.map_(pa.string(), pa.int64()))]`)
	var avroGen struct{ Values, Expected []string }
	r.python(&avroGen, "gen_avro.py", filepath.Join(r.py, "types.avsc"))
	r.produce(avroTypes, records(t, avroGen.Values)...)

	// 2. Protobuf, every kind of field; gen_proto.py compiles types.proto
	// (protoc: the descriptor set the runtime reads, the Python classes).
	protoTypes := r.topic("prototypes")
	r.table("prototypes", `[("id", pa.int64()), ("i64", pa.int64()), ("u64", pa.int64()), ("s64", pa.int64()),
	("u32", pa.int64()), ("amount", pa.float64()), ("flag", pa.bool_()), ("name", pa.string()), ("blob", pa.binary()),
	("status", pa.string()), ("tags", pa.list_(pa.string())),
	("items", pa.list_(pa.struct([("sku", pa.string()), ("qty", pa.int32())]))),
	("main", pa.struct([("sku", pa.string()), ("qty", pa.int32())])), ("created_at", pa.timestamp("us", tz="UTC")),
	("maybe_count", pa.int64()), ("maybe_note", pa.string()), ("counts", pa.map_(pa.string(), pa.int64())),
	("opt", pa.string())]`)
	var protoGen struct {
		Values, Expected []string
		Bad              []int
	}
	r.python(&protoGen, "gen_proto.py", protoDir)
	protoRecs := records(t, protoGen.Values)
	r.produce(protoTypes, protoRecs...)
	descriptors := filepath.Join(protoDir, "types.binpb")
	protoKeys := fmt.Sprintf("schema = \"proto\"\nproto_descriptor_set_path = %q\nproto_message = \"e2e.decode.v1.Order\"", descriptors)

	// 4. Bad input under errors_tolerance = "all": a truncated Avro datum
	// (with a key and a header, which must reach the dead-letter topic) and
	// protobuf bytes that do not parse (an invalid wire type; a string
	// field cut short) among good records.
	avroBad := r.topic("avrobad")
	r.table("avrobad", smallTable)
	avroBadRecs, avroBadRows := r.avroSmall(idRange(0, 10))
	avroBadRecs[4].Value = avroBadRecs[4].Value[:len(avroBadRecs[4].Value)-3]
	avroBadRecs[4].Key = []byte("bad-key")
	avroBadRecs[4].Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte("t4")}}
	avroBadRows = slices.Delete(avroBadRows, 4, 5)
	r.produce(avroBad, avroBadRecs...)
	protoBad := r.topic("protobad")
	r.table("protobad", `[("id", pa.int64()), ("name", pa.string())]`)
	protoBadRecs := r.protoSmall(protoDir, idRange(0, 10))
	protoBadRecs[3].Value = []byte{0x0f, 0x01, 0x02}                             // field 1, wire type 7: no such type
	protoBadRecs[6].Value = protoBadRecs[6].Value[:len(protoBadRecs[6].Value)-1] // name's length past the end
	r.produce(protoBad, protoBadRecs...)

	// Bad input under "none": batches of 5, the bad record at offset 7.
	avroNone := r.topic("avronone")
	r.table("avronone", smallTable)
	avroNoneRecs, avroNoneRows := r.avroSmall(idRange(0, 15))
	avroNoneRecs[7].Value = avroNoneRecs[7].Value[:len(avroNoneRecs[7].Value)-3]
	r.produce(avroNone, avroNoneRecs...)
	protoNone := r.topic("protonone")
	r.table("protonone", `[("id", pa.int64()), ("name", pa.string())]`)
	protoNoneRecs := r.protoSmall(protoDir, idRange(0, 15))
	protoNoneRecs[7].Value = []byte{0x0f, 0x01, 0x02}
	r.produce(protoNone, protoNoneRecs...)

	// 5. Transforms on Debezium-style JSON envelopes: a create, an update,
	// a filtered status, a record without key nor header, and a delete
	// (after = null, dropped) last, so that the offset must move past a
	// dropped record.
	xJSON := r.topic("xjson")
	r.table("xjson", `[("id", pa.int64()), ("status", pa.string()), ("note", pa.string()), ("secret", pa.string()),
	("src_topic", pa.string()), ("k", pa.string()), ("trace", pa.string()), ("source", pa.string()),
	("src_offset", pa.int64())]`)
	hdr := func(v string) []kgo.RecordHeader { return []kgo.RecordHeader{{Key: "trace", Value: []byte(v)}} }
	r.produce(xJSON,
		&kgo.Record{Key: []byte("k1"), Headers: hdr("t-0"), Value: []byte(`{"before":null,"after":{"id":1,"status":"new","note":"first","secret":"s1"},"op":"c"}`)},
		&kgo.Record{Key: []byte("k1"), Headers: hdr("t-1"), Value: []byte(`{"before":{"id":1},"after":{"id":1,"status":"paid","note":"ü \"2\"","secret":"s1"},"op":"u"}`)},
		&kgo.Record{Key: []byte("k2"), Headers: hdr("t-2"), Value: []byte(`{"before":null,"after":{"id":2,"status":"test","note":"n","secret":"s"},"op":"c"}`)},
		&kgo.Record{Key: []byte("k3"), Value: []byte(`{"before":null,"after":{"id":3,"status":"new","note":null,"secret":"x"},"op":"c"}`)},
		&kgo.Record{Value: []byte(`{"op":"c","after":{"id":4,"status":"new","note":"no key"}}`)},
		&kgo.Record{Key: []byte("k1"), Headers: hdr("t-5"), Value: []byte(`{"before":{"id":1,"status":"paid"},"after":null,"op":"d"}`)},
	)
	// Transforms on decoded Avro: ids 2 and 4 have status "skip" (4 last).
	xAvro := r.topic("xavro")
	r.table("xavro", `[("id", pa.int64()), ("status", pa.string()), ("secret", pa.string()),
	("amount", pa.decimal128(20, 4)), ("ts", pa.timestamp("us", tz="UTC")), ("name", pa.string()),
	("customer", pa.string()), ("src_partition", pa.int64()), ("k", pa.string())]`)
	var xAvroEnc []map[string]any
	var xAvroWant []map[string]any
	for id := range int64(5) {
		e, c := smallRow(id)
		if id%2 == 0 && id > 0 {
			e["status"] = "skip"
		} else {
			// The record as transformed: name renamed to customer,
			// secret deleted, the partition and the key added.
			c["customer"], c["name"], c["secret"] = c["name"], nil, nil
			c["src_partition"], c["k"] = 0, "AP8=" // key_base64 of 00 ff
			xAvroWant = append(xAvroWant, c)
		}
		xAvroEnc = append(xAvroEnc, e)
	}
	js, _ := json.Marshal(xAvroEnc)
	var xAvroValues []string
	r.python(&xAvroValues, "encode_avro.py", smallSchema, string(js))
	xAvroRecs := records(t, xAvroValues)
	for _, rec := range xAvroRecs {
		rec.Key = []byte{0x00, 0xff}
	}
	r.produce(xAvro, xAvroRecs...)

	// 3. Redshift: small Avro records into the emulator.
	rsAvro := r.topic("rsavro")
	rsRecs, _ := r.avroSmall([]int64{1, 2, 3})
	r.produce(rsAvro, rsRecs...)
	db := r.kafka.NewDatabase(t)
	bucket := r.kafka.NewBucket(t)
	emu := rsemu.NewTest(t, rsemu.Config{BackendDSN: db.DSN, S3Endpoint: r.kafka.S3Endpoint,
		S3AccessKey: r.kafka.S3AccessKey, S3SecretKey: r.kafka.S3SecretKey, S3Region: r.kafka.S3Region})

	all := "errors_tolerance = \"all\"\nbatch_length = 50"
	r.writeDef("delta.toml", `type = "sink"
key = "dec_delta"
path = "libpicomq_connector_delta_sink"

`+r.block(avroTypes, r.group("avrotypes"), fmt.Sprintf("schema = \"avro\"\navro_schema_path = %q\n%s", filepath.Join(r.py, "types.avsc"), all))+
		r.block(protoTypes, r.group("prototypes"), protoKeys+"\n"+all)+
		r.block(avroBad, r.group("avrobad"), fmt.Sprintf("schema = \"avro\"\navro_schema_json = %q\n%s", readFile(t, smallSchema), all))+
		r.block(protoBad, r.group("protobad"), protoKeys+"\n"+all)+
		r.block(xJSON, r.group("xjson"), `schema = "json"
`+all+`

[[topics.transforms]]
type = "unwrap_envelope"
field = "after"

[[topics.transforms]]
type = "filter_records"
field = "status"
in = ["test"]
action = "drop"

[[topics.transforms]]
type = "add_fields"
fields = [
  { name = "src_topic", compute = "topic" },
  { name = "k", compute = "key" },
  { name = "trace", header = "trace" },
  { name = "source", value = "shop" },
  { name = "src_offset", compute = "offset" },
]

[[topics.transforms]]
type = "delete_fields"
paths = ["secret"]
`)+
		r.block(xAvro, r.group("xavro"), fmt.Sprintf("schema = \"avro\"\navro_schema_path = %q\n%s", smallSchema, all)+`

[[topics.transforms]]
type = "filter_records"
field = "status"
equals = "skip"
action = "drop"

[[topics.transforms]]
type = "add_fields"
fields = [{ name = "src_partition", compute = "partition" }, { name = "k", compute = "key_base64" }]

[[topics.transforms]]
type = "update_fields"
field = "name"
rename_to = "customer"

[[topics.transforms]]
type = "delete_fields"
paths = ["secret"]
`)+fmt.Sprintf(`
[plugin_config]
table_uri = %q
`, tableURI))
	r.writeDef("none.toml", `type = "sink"
key = "dec_none"
path = "libpicomq_connector_delta_sink"

`+r.block(avroNone, r.group("avronone"), fmt.Sprintf("schema = \"avro\"\navro_schema_path = %q\nbatch_length = 5", smallSchema))+
		r.block(protoNone, r.group("protonone"), protoKeys+"\nbatch_length = 5")+fmt.Sprintf(`
[plugin_config]
table_uri = %q
`, tableURI))
	r.writeDef("redshift.toml", `type = "sink"
key = "dec_redshift"
path = "libpicomq_connector_redshift_sink"

`+r.block(rsAvro, r.group("rsavro"), fmt.Sprintf("schema = \"avro\"\navro_schema_path = %q\nbatch_length = 50", smallSchema))+
		redshiftPluginConfig(r.kafka, emu.DSN(db.Name), bucket, "dec_orders")+"batch_size = 50\n")

	r.start()
	r.waitAtEnd(map[string]string{
		r.group("avrotypes"): avroTypes, r.group("prototypes"): protoTypes, r.group("avrobad"): avroBad,
		r.group("protobad"): protoBad, r.group("xjson"): xJSON, r.group("xavro"): xAvro, r.group("rsavro"): rsAvro,
	})

	t.Run("AvroEveryType", func(t *testing.T) {
		r := r.in(t)
		checkRows(t, "avrotypes", r.readDelta("avrotypes", "id"), avroGen.Expected)
	})

	t.Run("ProtoEveryKind", func(t *testing.T) {
		r := r.in(t)
		checkRows(t, "prototypes", r.readDelta("prototypes", "id"), protoGen.Expected)
		// The uint64 beyond a long is the sink's record error (class
		// value), its original bytes dead-lettered.
		dl := r.deadLetters(protoTypes, len(protoGen.Bad))
		if len(dl) != len(protoGen.Bad) {
			t.Fatalf("%d dead letters, want %d", len(dl), len(protoGen.Bad))
		}
		h := headers(dl[0])
		off := protoGen.Bad[0]
		if h[metadata.DeadLetterOffset] != strconv.Itoa(off) || h[metadata.DeadLetterClass] != "value" ||
			string(dl[0].Value) != string(protoRecs[off].Value) {
			t.Errorf("dead letter %x with headers %v, want offset %d class value and value %x", dl[0].Value, h, off, protoRecs[off].Value)
		}
	})

	t.Run("BadInputTolerated", func(t *testing.T) {
		r := r.in(t)
		checkRows(t, "avrobad", r.readDelta("avrobad", "id"), jsonRows(t, avroBadRows))
		if ids, want := rowIDs(t, r.readDelta("protobad", "id")), []int64{0, 1, 2, 4, 5, 7, 8, 9}; !slices.Equal(ids, want) {
			t.Errorf("protobad ids %v, want %v", ids, want)
		}
		for _, c := range []struct {
			topic, schema string
			recs          []*kgo.Record
			bad           []int
		}{{avroBad, "avro", avroBadRecs, []int{4}}, {protoBad, "proto", protoBadRecs, []int{3, 6}}} {
			dl := r.deadLetters(c.topic, len(c.bad))
			if len(dl) != len(c.bad) {
				t.Errorf("%s: %d dead letters, want %d", c.topic, len(dl), len(c.bad))
				continue
			}
			for i, rec := range dl {
				h, src := headers(rec), c.recs[c.bad[i]]
				want := fmt.Sprintf("record at offset %d cannot be decoded (schema = %q)", c.bad[i], c.schema)
				if h[metadata.DeadLetterOffset] != strconv.Itoa(c.bad[i]) || h[metadata.DeadLetterClass] != "encoding" ||
					h[metadata.DeadLetterTopic] != c.topic || !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(h[metadata.DeadLetterMessage]) {
					t.Errorf("%s dead letter %d: headers %v, want offset %d class encoding, message with %q", c.topic, i, h, c.bad[i], want)
				}
				if string(rec.Value) != string(src.Value) || string(rec.Key) != string(src.Key) {
					t.Errorf("%s offset %d: dead letter key/value %q/%x, want the original %q/%x", c.topic, c.bad[i], rec.Key, rec.Value, src.Key, src.Value)
				}
				if len(src.Headers) > 0 && h["trace"] != string(src.Headers[0].Value) {
					t.Errorf("%s offset %d: original header trace lost: %v", c.topic, c.bad[i], h)
				}
			}
		}
	})

	t.Run("BadInputStops", func(t *testing.T) {
		r := r.in(t)
		for _, c := range []struct{ suffix, topic, schema string }{{"avronone", avroNone, "avro"}, {"protonone", protoNone, "proto"}} {
			m := r.waitLog(regexp.MustCompile(`topic ` + regexp.QuoteMeta(c.topic) + ` partition 0 offset (\d+): invalid after 0 attempt\(s\): record at offset 7 cannot be decoded \(schema = \\?"` + c.schema + `\\?"\)`))
			stopped, _ := strconv.ParseInt(m[1], 10, 64)
			committed := max(r.committed(r.group(c.suffix), c.topic), 0)
			if committed != stopped || stopped > 7 {
				t.Errorf("%s: stopped at the batch of offset %d, committed %d: want the committed offset to be the stopped batch's first, at most 7", c.topic, stopped, committed)
			}
			t.Logf("%s: stopped on the batch at offset %d; committed %d", c.topic, stopped, committed)
			if ids := rowIDs(t, r.readDelta(c.suffix, "id")); !slices.Equal(ids, idRange(0, committed)) {
				t.Errorf("%s: table ids %v, want those before the committed offset %d", c.topic, ids, committed)
			}
		}
		checkRows(t, "avronone", r.readDelta("avronone", "id"), jsonRows(t, avroNoneRows[:max(r.committed(r.group("avronone"), avroNone), 0)]))
	})

	t.Run("TransformsJSON", func(t *testing.T) {
		r := r.in(t)
		checkRows(t, "xjson", r.readDelta("xjson", "src_offset"), []string{
			fmt.Sprintf(`{"id":1,"status":"new","note":"first","secret":null,"src_topic":%q,"k":"k1","trace":"t-0","source":"shop","src_offset":0}`, xJSON),
			fmt.Sprintf(`{"id":1,"status":"paid","note":"ü \"2\"","secret":null,"src_topic":%q,"k":"k1","trace":"t-1","source":"shop","src_offset":1}`, xJSON),
			fmt.Sprintf(`{"id":3,"status":"new","note":null,"secret":null,"src_topic":%q,"k":"k3","trace":null,"source":"shop","src_offset":3}`, xJSON),
			fmt.Sprintf(`{"id":4,"status":"new","note":"no key","secret":null,"src_topic":%q,"k":null,"trace":null,"source":"shop","src_offset":4}`, xJSON),
		})
		if n := r.metric("picomq_connect_records_filtered_total", `sink_key="dec_delta"`, `topic="`+xJSON+`"`); n != 2 {
			t.Errorf("picomq_connect_records_filtered_total of %s = %v, want 2 (the test status and the delete)", xJSON, n)
		}
	})

	t.Run("TransformsAvro", func(t *testing.T) {
		r := r.in(t)
		checkRows(t, "xavro", r.readDelta("xavro", "id"), jsonRows(t, xAvroWant))
		if n := r.metric("picomq_connect_records_filtered_total", `sink_key="dec_delta"`, `topic="`+xAvro+`"`); n != 2 {
			t.Errorf("picomq_connect_records_filtered_total of %s = %v, want 2", xAvro, n)
		}
	})

	t.Run("AvroIntoRedshift", func(t *testing.T) {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, db.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		q, err := conn.Query(ctx, `SELECT payload FROM dec_orders ORDER BY (payload::json->>'id')::bigint`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(q, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		// The JSON of docs/decode.md, exactly: schema field order, the
		// decimal as a string with its scale, the timestamp in RFC 3339
		// with microseconds, the nullable union unwrapped.
		want := []string{
			`{"id":1,"status":"new","secret":"s1","amount":"-1.1001","ts":"2026-09-03T21:05:04.123457Z","name":"n1"}`,
			`{"id":2,"status":"new","secret":"s2","amount":"-2.1002","ts":"2026-09-03T21:05:04.123458Z","name":"n2"}`,
			`{"id":3,"status":"new","secret":"s3","amount":"-3.1003","ts":"2026-09-03T21:05:04.123459Z","name":"n3"}`,
		}
		if !slices.Equal(got, want) {
			t.Errorf("redshift payloads\n%s\nwant\n%s", got, want)
		}
	})

	// dec_none stopped on its bad records; the runtime ran on with the
	// other sinks, never exiting by itself.
	code := r.rt.stop()
	if r.rt.selfExits != 0 {
		t.Errorf("picomq-connect exited by itself %d times\n%s", r.rt.selfExits, r.rt.tail())
	}
	t.Logf("picomq-connect exit code after SIGTERM: %d", code)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
