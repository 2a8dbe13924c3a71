package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// Debezium change events from a real Apache Kafka broker through
// picomq-connect into the Redshift sink with write_mode = "upsert": the
// table ends with one row per live key, holding its last "after"; a delete
// followed by Debezium's tombstone deletes once; an event whose key is null
// goes to the dead-letter topic alone (errors_tolerance = "all").
func TestRedshiftUpsertDebeziumOnRealBroker(t *testing.T) {
	kafka := services.RequireKafka(t)
	run := strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	topic, group := "cdc"+run+".public.orders", "cdc"+run+"-redshift"
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka.KafkaBrokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.DeleteTopics(context.Background(), topic, topic+".dlq") })

	// 40 keys created; even ones updated twice; every fifth deleted, with
	// Debezium's tombstone after the delete; every seventh created again
	// after that. Keyed by {"id": n}, so a key stays in one partition.
	var recs []*kgo.Record
	want := map[string]map[string]any{}
	ev := func(id int, op string, before, after map[string]any) {
		v, _ := json.Marshal(map[string]any{"before": before, "after": after, "op": op, "source": map[string]any{"table": "orders"}})
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, `{"id":%d}`, id), Value: v})
	}
	row := func(id int, status string) map[string]any { return map[string]any{"id": float64(id), "status": status} }
	for id := range 40 {
		ev(id, "c", nil, row(id, "new"))
		want[strconv.Itoa(id)] = row(id, "new")
	}
	for round, status := range []string{"paid", "shipped"} {
		for id := 0; id < 40; id += 2 {
			ev(id, "u", row(id, []string{"new", "paid"}[round]), row(id, status))
			want[strconv.Itoa(id)] = row(id, status)
		}
	}
	for id := 0; id < 40; id += 5 {
		ev(id, "d", row(id, "x"), nil)
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, `{"id":%d}`, id)}) // tombstone
		delete(want, strconv.Itoa(id))
	}
	for id := 0; id < 40; id += 7 {
		ev(id, "c", nil, row(id, "again"))
		want[strconv.Itoa(id)] = row(id, "again")
	}
	bad := &kgo.Record{Topic: topic, Key: []byte(`{"id":null}`), Value: []byte(`{"before":null,"after":{"id":null,"status":"?"},"op":"c"}`)}
	recs = append(recs, bad)
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	db := kafka.NewDatabase(t)
	bucket := kafka.NewBucket(t)
	emu := rsemu.NewTest(t, rsemu.Config{BackendDSN: db.DSN, S3Endpoint: kafka.S3Endpoint,
		S3AccessKey: kafka.S3AccessKey, S3SecretKey: kafka.S3SecretKey, S3Region: kafka.S3Region})
	defs := t.TempDir()
	writeDef(t, filepath.Join(defs, "redshift.toml"), fmt.Sprintf(`type = "sink"
key = "cdc_redshift"
path = "libpicomq_connector_redshift_sink"

[[topics]]
topics = [%q]
schema = "json"
batch_length = 25
poll_interval = "100ms"
consumer_group = %q
errors_tolerance = "all"
`, topic, group)+redshiftPluginConfig(kafka, emu.DSN(db.Name), bucket, "cdc_orders")+`batch_size = 25
write_mode = "upsert"
key_columns = "id"
change_format = "debezium"
`)
	rt := startConnect(t, kafka.KafkaBrokers, defs)
	waitTopicAtEnd(t, adm, group, topic, 90*time.Second, rt)
	if code := rt.stop(); code != 0 || rt.selfExits != 0 {
		t.Fatalf("picomq-connect exit code %d, %d exits by itself\n%s", code, rt.selfExits, rt.tail())
	}

	conn, err := pgx.Connect(ctx, db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT key_id, payload FROM cdc_orders`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for rows.Next() {
		var k, p string
		if err := rows.Scan(&k, &p); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(p), &m); err != nil {
			t.Fatalf("payload %q: %v", p, err)
		}
		if _, dup := got[k]; dup {
			t.Errorf("key %s has several rows", k)
		}
		got[k] = m
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("table %v\nwant  %v", got, want)
	}

	dl := readDeadLetters(t, kafka.KafkaBrokers, topic, 1)
	if len(dl) != 1 || string(dl[0].Value) != string(bad.Value) {
		t.Fatalf("dead letters %v, want the null-key event alone", dl)
	}
	h := map[string]string{}
	for _, kv := range dl[0].Headers {
		h[kv.Key] = string(kv.Value)
	}
	if h[metadata.DeadLetterClass] != "value" {
		t.Errorf("dead letter headers %v", h)
	}
}
