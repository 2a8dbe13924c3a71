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

// UpsertGroupedLoads: with write_mode = "upsert", batches of several
// partitions delivered at once share load transactions; each key ends with
// its last change, the group replayed at once changes nothing, and each
// batch of an overlapping group reports its own skipped changes.
func UpsertGroupedLoads(t *testing.T, d sinkdriver.Driver, e *Env) {
	const k, n = 6, 12
	table := e.Table("upsert_grouped")
	inst := e.Start(d).Open("upsert_grouped", e.Config(map[string]any{"target_table": table, "s3_prefix": "upsert_grouped",
		"write_mode": "upsert", "key_columns": "sku", "payload_format": "text"}))
	// Partition p's offset o changes key p-(o%4): four keys per partition,
	// each changed several times; offsets of the form 4j+3 delete.
	batch := func(p int, first uint64, count int) sinkdriver.Batch {
		b := sinkdriver.Batch{Attempt: 1, Topic: "orders", Partition: uint32(p), Schema: "json"}
		for o := first; o < first+uint64(count); o++ {
			op := "u"
			if o%4 == 3 {
				op = "d"
			}
			b.Records = append(b.Records, sinkdriver.Record{Offset: o, TimestampMs: 1767225600000,
				Payload: fmt.Appendf(nil, `{"sku":"%d-%d","o":%d,"_op":%q}`, p, o%4, o, op)})
		}
		return b
	}
	want := func(last uint64) map[string]string {
		w := map[string]string{}
		for p := range k {
			for o := uint64(0); o < last; o++ {
				key := fmt.Sprintf("%d-%d", p, o%4)
				if o%4 == 3 {
					delete(w, key)
				} else {
					w[key] = fmt.Sprintf(`{"sku":%q,"o":%d}`, key, o)
				}
			}
		}
		return w
	}
	batches := make([]sinkdriver.Batch, k)
	for p := range batches {
		batches[p] = batch(p, 0, n)
	}
	e.slowCopies(k)
	for i, err := range sinkdriver.ConsumeConcurrently(inst, batches) {
		if err != nil {
			t.Fatalf("partition %d: %v", i, err)
		}
	}
	upsertRows(t, e, table, want(n))
	m := sinkdriver.SinkMetrics(t, inst)
	if m["loads"] >= k || m["load_batches"] != k {
		t.Fatalf("%v loads for %v batches delivered at once, want fewer loads (metrics %v)", m["loads"], m["load_batches"], m)
	}
	// The whole group again: nothing changes, every change skipped.
	e.slowCopies(k)
	for i, err := range sinkdriver.ConsumeConcurrently(inst, batches) {
		if err != nil {
			t.Fatalf("replay of partition %d: %v", i, err)
		}
	}
	upsertRows(t, e, table, want(n))
	if sm := sinkdriver.Metrics(t, inst); sm["skipped"] != k*n {
		t.Errorf("after the replay skipped %v, want %d", sm["skipped"], k*n)
	}
	// Overlapping batches together: partition p's batch starts p changes
	// before the applied offset.
	mixed := make([]sinkdriver.Batch, k)
	overlap := 0
	for p := range mixed {
		mixed[p] = batch(p, uint64(n-p), n)
		overlap += p
	}
	e.slowCopies(k)
	for i, err := range sinkdriver.ConsumeConcurrently(inst, mixed) {
		if err != nil {
			t.Fatalf("overlapping batch of partition %d: %v", i, err)
		}
	}
	w := want(2 * n)
	// Partition p's changes go up to offset 2n-p-1.
	for p := range k {
		for o := uint64(2*n - p); o < 2*n; o++ {
			key := fmt.Sprintf("%d-%d", p, o%4)
			delete(w, key)
		}
		for o := uint64(0); o < uint64(2*n-p); o++ {
			key := fmt.Sprintf("%d-%d", p, o%4)
			if o%4 == 3 {
				delete(w, key)
			} else {
				w[key] = fmt.Sprintf(`{"sku":%q,"o":%d}`, key, o)
			}
		}
	}
	upsertRows(t, e, table, w)
	if sm := sinkdriver.Metrics(t, inst); sm["skipped"] != float64(k*n+overlap) {
		t.Errorf("after the overlapping group skipped %v, want %d", sm["skipped"], k*n+overlap)
	}
}
