package redshifttest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
)

// UpsertAppliesTheLastChangePerKey: with write_mode = "upsert" the target
// holds one row per live key, the row of its last change (op_field
// changes: inserts, an update before any insert, a delete of a key never
// seen, a key changed several times within one batch and in several
// chunks), and a replay (the same batch, from a new runtime too) changes
// nothing, nor does an older batch after a newer one.
func UpsertAppliesTheLastChangePerKey(t *testing.T, d sinkdriver.Driver, e *Env) {
	table := e.Table("upsert")
	cfg := e.Config(map[string]any{"target_table": table, "batch_size": 4, "s3_prefix": "upsert",
		"write_mode": "upsert", "key_columns": "sku", "payload_format": "text"})
	inst := e.Start(d).Open("upsert", cfg)
	changes := func(first uint64, rows ...string) sinkdriver.Batch {
		b := sinkdriver.Batch{Attempt: 1, Topic: "orders", Schema: "json"}
		for i, r := range rows {
			b.Records = append(b.Records, sinkdriver.Record{Offset: first + uint64(i), TimestampMs: 1767225600000, Payload: []byte(r)})
		}
		return b
	}
	b1 := changes(0,
		`{"sku":"a","n":1,"_op":"c"}`,
		`{"sku":"b","n":1,"_op":"u"}`, // an update of a key never inserted
		`{"sku":"zz","_op":"d"}`,      // a delete of a key never seen
		`{"sku":"a","n":2,"_op":"u"}`,
		`{"sku":"c","n":1,"_op":"c"}`,
		`{"sku":"a","n":3,"_op":"u"}`, // a's third change, in the second chunk
		`{"sku":"c","_op":"d"}`,
		`{"sku":"d","n":1,"_op":"r"}`,
		`{"sku":"d","n":2,"_op":"U"}`,
	)
	consume(t, inst, b1)
	want := map[string]string{"a": `{"sku":"a","n":3}`, "b": `{"sku":"b","n":1}`, "d": `{"sku":"d","n":2}`}
	upsertRows(t, e, table, want)
	b2 := changes(9, `{"sku":"b","_op":"d"}`, `{"sku":"c","n":5,"_op":"c"}`)
	consume(t, inst, b2)
	delete(want, "b")
	want["c"] = `{"sku":"c","n":5}`
	upsertRows(t, e, table, want)
	consume(t, inst, b1) // older changes after newer ones
	consume(t, e.Start(d).Open("upsert", cfg), b2)
	upsertRows(t, e, table, want)
	if m := sinkdriver.SinkMetrics(t, inst); m["rows_skipped_duplicates"] != 9 {
		t.Errorf("rows_skipped_duplicates %v, want the replayed batch's 9", m["rows_skipped_duplicates"])
	}
}

// upsertRows checks table holds exactly want: key_sku → payload, equal as
// JSON.
func upsertRows(t *testing.T, e *Env, table string, want map[string]string) {
	t.Helper()
	got := map[string]any{}
	for _, r := range e.Rows(table) {
		k := fmt.Sprint(r["key_sku"])
		if _, dup := got[k]; dup {
			t.Fatalf("key %s has several rows", k)
		}
		var v any
		if err := json.Unmarshal([]byte(fmt.Sprint(r["payload"])), &v); err != nil {
			t.Fatalf("payload %v: %v", r["payload"], err)
		}
		got[k] = v
	}
	w := map[string]any{}
	for k, s := range want {
		var v any
		_ = json.Unmarshal([]byte(s), &v)
		w[k] = v
	}
	if !reflect.DeepEqual(got, w) {
		t.Fatalf("rows %v, want %v", got, w)
	}
}
