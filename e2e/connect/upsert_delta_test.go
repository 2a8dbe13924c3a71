package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
)

// TestDeltaUpsertDebeziumOnRealBroker: Debezium change events keyed by
// {"id": n} on a two-partition topic of the real broker — creates,
// updates, deletes each followed by its tombstone, some in the JSON
// converter's envelope, and one truncate (a record error, dead-lettered)
// — go through picomq-connect into a table with write_mode = "upsert";
// delta-rs reads each key's last state, and a second run from offset 0
// (every batch a replay) changes nothing.
func TestDeltaUpsertDebeziumOnRealBroker(t *testing.T) {
	kafka := services.RequireKafka(t)
	run := strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	topic, group := "cdc"+run+".orders", "cdc"+run+"-delta"
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka.KafkaBrokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.DeleteTopics(context.Background(), topic, topic+".dlq") })

	want := map[int64]map[string]any{}
	var recs []*kgo.Record
	event := func(id int64, op string, before, after map[string]any, envelope bool) {
		var v any = map[string]any{"op": op, "before": before, "after": after, "ts_ms": 1767225600000, "source": map[string]any{"table": "orders"}}
		if envelope {
			v = map[string]any{"schema": map[string]any{"type": "struct"}, "payload": v}
		}
		val, _ := json.Marshal(v)
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, `{"id":%d}`, id), Value: val})
	}
	row := func(id int64, name string) map[string]any {
		return map[string]any{"id": id, "name": name, "amount": id * 10}
	}
	for id := range int64(60) {
		event(id, "c", nil, row(id, "created"), id%5 == 0)
		want[id] = row(id, "created")
	}
	for id := int64(0); id < 60; id += 3 {
		event(id, "u", row(id, "created"), row(id, "updated"), id%2 == 0)
		want[id] = row(id, "updated")
	}
	for id := int64(0); id < 60; id += 7 {
		event(id, "d", row(id, "x"), nil, false)
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, `{"id":%d}`, id)}) // its tombstone
		delete(want, id)
	}
	recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(`{"id":58}`)}) // a tombstone alone deletes too
	delete(want, 58)
	event(14, "c", nil, row(14, "again"), false) // deleted, then created again
	want[14] = row(14, "again")
	event(100, "d", row(100, "never seen"), nil, false)
	recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(`{"id":5}`), Value: []byte(`{"op":"t","before":null,"after":null}`)})
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	table := "file://" + filepath.Join(t.TempDir(), "orders")
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"name","type":"string","nullable":true,"metadata":{}},{"name":"amount","type":"long","nullable":true,"metadata":{}}]}`
	defs := t.TempDir()
	def := func(group string) string {
		return fmt.Sprintf(`type = "sink"
key = "cdc_delta"
path = "libpicomq_connector_delta_sink"

[[topics]]
topics = [%q]
schema = "json"
batch_length = 25
poll_interval = "100ms"
consumer_group = %q
errors_tolerance = "all"

[plugin_config]
table_uri = %q
write_mode = "upsert"
key_columns = "id"
change_format = "debezium"
create_table = true
table_schema = %q
`, topic, group, table, schema)
	}
	readRows := func() map[int64]map[string]any {
		out := pyenv.Run(t, `
import sys, json
from deltalake import DeltaTable
print(json.dumps(DeltaTable(sys.argv[1]).to_pyarrow_table().to_pylist()))
`, table)
		var rows []map[string]any
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		got := map[int64]map[string]any{}
		for _, r := range rows {
			id := int64(r["id"].(float64))
			if _, dup := got[id]; dup {
				t.Errorf("id %d twice", id)
			}
			got[id] = map[string]any{"id": id, "name": r["name"], "amount": int64(r["amount"].(float64))}
		}
		return got
	}
	check := func(when string) {
		got := readRows()
		if !maps.EqualFunc(got, want, func(a, b map[string]any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
			ids := slices.Sorted(maps.Keys(got))
			t.Errorf("%s: table has %d keys %v, want %d", when, len(got), ids, len(want))
			for id, w := range want {
				if fmt.Sprint(got[id]) != fmt.Sprint(w) {
					t.Errorf("  id %d: %v, want %v", id, got[id], w)
				}
			}
		}
	}
	for i, g := range []string{group, group + "-replay"} {
		writeDef(t, filepath.Join(defs, "delta.toml"), def(g))
		rt := startConnect(t, kafka.KafkaBrokers, defs)
		waitTopicAtEnd(t, adm, g, topic, 90*time.Second, rt)
		if code := rt.stop(); code != 0 || rt.selfExits != 0 {
			t.Fatalf("picomq-connect exit code %d, %d exits by itself\n%s", code, rt.selfExits, rt.tail())
		}
		check([]string{"first run", "replay from offset 0 (a new group)"}[i])
	}
	// The truncate, dead-lettered by each run (a replay rejects again
	// what the first delivery rejected).
	dl := readDeadLetters(t, kafka.KafkaBrokers, topic, 2)
	if len(dl) != 2 {
		t.Fatalf("%d dead letters, want the truncate twice", len(dl))
	}
	for _, r := range dl {
		if string(r.Key) != `{"id":5}` || !strings.Contains(string(r.Value), `"op":"t"`) {
			t.Errorf("dead letter key %s value %s, want the truncate", r.Key, r.Value)
		}
	}
}
