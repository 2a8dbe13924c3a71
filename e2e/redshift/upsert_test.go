package redshift_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// changes is a batch of op_field changes at offsets first..last-1 of
// partition 0: offsets 0-9 insert ids 0-9 ("a"), 10-19 update them ("b"),
// 20-24 delete ids 0-4, 25-29 insert ids 25-29 ("c"), 30-34 update ids
// 5-9 ("d").
func changes(first, last uint64) hostclient.Batch {
	b := hostclient.Batch{Attempt: 1, Topic: "orders", Schema: "json"}
	for o := first; o < last; o++ {
		var p string
		switch {
		case o < 10:
			p = fmt.Sprintf(`{"id":%d,"v":"a","_op":"c"}`, o)
		case o < 20:
			p = fmt.Sprintf(`{"id":%d,"v":"b","_op":"u"}`, o-10)
		case o < 25:
			p = fmt.Sprintf(`{"id":%d,"_op":"d"}`, o-20)
		case o < 30:
			p = fmt.Sprintf(`{"id":%d,"v":"c","_op":"c"}`, o)
		default:
			p = fmt.Sprintf(`{"id":%d,"v":"d","_op":"u"}`, o-25)
		}
		b.Records = append(b.Records, hostclient.Record{Offset: o, TimestampMs: int64(o), Payload: []byte(p)})
	}
	return b
}

// upsertRows reads key_id → payload of table from the backend.
func (w *world) upsertRows(table string) map[string]string {
	w.t.Helper()
	rs, err := w.pg.Query(w.ctx, "SELECT key_id, payload FROM "+pgx.Identifier{table}.Sanitize())
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]string{}
	for rs.Next() {
		var k, p string
		if err := rs.Scan(&k, &p); err != nil {
			w.t.Fatal(err)
		}
		if _, dup := out[k]; dup {
			w.t.Errorf("key %s has several rows", k)
		}
		out[k] = p
	}
	if err := rs.Err(); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// write_mode = "upsert" through the .so: the host process is killed (the
// runtime's kill -9) while a statement of the upsert load is held on the
// cluster, a new process gets the batch again, and the table ends as the
// changelog says, whether or not the killed load committed.
func TestUpsertKillMidLoadThenReplay(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	after := map[string]string{}
	for id := 0; id < 10; id++ {
		after[fmt.Sprint(id)] = fmt.Sprintf(`{"id":%d,"v":"a"}`, id)
	}
	final := map[string]string{}
	for id := 5; id < 10; id++ {
		final[fmt.Sprint(id)] = fmt.Sprintf(`{"id":%d,"v":"b"}`, id)
	}
	for id := 25; id < 30; id++ {
		final[fmt.Sprint(id)] = fmt.Sprintf(`{"id":%d,"v":"c"}`, id)
	}
	for i, cp := range []struct {
		name      string
		hold      string
		committed bool
	}{
		{"after COPY, before the DELETE of changed keys", `^DELETE FROM "cdck_\d" USING "staging_`, false},
		{"before the INSERT of last upserts", `^INSERT INTO "cdck_\d"`, false},
		{"before the offsets move", `^INSERT INTO "offsets_`, false},
		{"COMMIT sent, not acknowledged", `(?i)^commit`, true},
	} {
		t.Run(cp.name, func(t *testing.T) {
			t.Parallel()
			w := w.fork(t)
			table := fmt.Sprintf("cdck_%d", i)
			cfg := w.config(map[string]any{"target_table": table, "batch_size": 100, "s3_prefix": table,
				"write_mode": "upsert", "key_columns": "id", "payload_format": "text"})
			inst := w.open("cdc", cfg)
			consume(t, inst, changes(0, 10))
			b := changes(5, 30) // overlaps the applied batch
			h := w.emu.DelayOn(cp.hold, holdTime, 1)
			done := make(chan error, 1)
			go func() { done <- inst.Consume(b) }()
			deadline := time.Now().Add(20 * time.Second)
			for h.Hits() == 0 {
				select {
				case err := <-done:
					t.Fatalf("the batch finished (%v) before the crash point was reached", err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("the crash point was never reached")
				}
				time.Sleep(time.Millisecond)
			}
			w.host.Kill()
			var ee *hostclient.ExitError
			if err := <-done; !errors.As(err, &ee) {
				t.Fatalf("consume during the crash: %v, want the host's exit", err)
			}
			// The load is one query already on the server, which runs it
			// to the end without its client (docs/redshift.md, crash
			// points) or rolls it back: the table shows all of the batch
			// or none of it, never a part.
			time.Sleep(holdTime + 200*time.Millisecond)
			got := w.upsertRows(table)
			if !reflect.DeepEqual(got, after) && !reflect.DeepEqual(got, final) {
				t.Fatalf("after the crash %v, want the first batch's %v or the whole second batch's %v", got, after, final)
			}
			if cp.committed && !reflect.DeepEqual(got, final) {
				t.Fatalf("after a COMMIT that reached the cluster %v, want %v", got, final)
			}
			consume(t, startConnector(t).open("cdc", cfg), b)
			if got := w.upsertRows(table); !reflect.DeepEqual(got, final) {
				t.Fatalf("after the replay %v, want %v", got, final)
			}
			// Newer changes, then a replay of the older ones: they must not
			// bring back the rows they wrote.
			inst2 := startConnector(t).open("cdc", cfg)
			consume(t, inst2, changes(30, 35))
			consume(t, inst2, changes(0, 30))
			newest := map[string]string{}
			for k, v := range final {
				newest[k] = v
			}
			for id := 5; id < 10; id++ {
				newest[fmt.Sprint(id)] = fmt.Sprintf(`{"id":%d,"v":"d"}`, id)
			}
			if got := w.upsertRows(table); !reflect.DeepEqual(got, newest) {
				t.Fatalf("after newer changes and a replay of older ones %v, want %v", got, newest)
			}
		})
	}
}
