package redshifttest

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
)

// ReplayedBatchChangesNothing: the spec's replay table has one row, "Any":
// a replayed batch changes nothing, whatever the configuration. The replay
// comes from the same instance and from a new runtime's instance; an
// overlapping re-batch adds only its new records.
func ReplayedBatchChangesNothing(t *testing.T, d sinkdriver.Driver, e *Env) {
	rt := e.Start(d)
	for _, opts := range []map[string]any{
		{},
		{"payload_format": "text"},
		{"include_metadata": false},
		{"include_metadata": false, "include_key": false},
		{"archive": true},
	} {
		keys := make([]string, 0, len(opts))
		for k := range opts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		name := "replay"
		for _, k := range keys {
			name += fmt.Sprintf("_%s_%v", k, opts[k])
		}
		t.Run(name, func(t *testing.T) {
			table := e.Table(name)
			cfg := e.Config(map[string]any{"target_table": table, "batch_size": 7, "s3_prefix": name})
			for k, v := range opts {
				cfg[k] = v
			}
			inst := rt.Open(name, cfg)
			b := Batch("orders", 100, 30) // five chunks
			consume(t, inst, b)
			before := fmt.Sprint(e.Rows(table))
			consume(t, inst, b) // the runtime redelivers after a crash before the offset commit
			after := e.Rows(table)
			if fmt.Sprint(after) != before {
				t.Fatalf("the replay changed the table:\nbefore %s\nafter  %v", before, after)
			}
			if len(after) != 30 {
				t.Fatalf("%d rows", len(after))
			}
			if m := sinkdriver.SinkMetrics(t, inst); m["rows_inserted"] != 30 || m["rows_skipped_duplicates"] != 30 || m["rows_copied"] != 60 {
				t.Fatalf("metrics after one replay %v", m)
			}
			// The SDK's records are the records written, skipped those the
			// table already had.
			if m := sinkdriver.Metrics(t, inst); m["records"] != 30 || m["skipped"] != 30 {
				t.Errorf("records %v, skipped %v after one replay; want 30 and 30", m["records"], m["skipped"])
			}
			b.Attempt = 2
			consume(t, inst, b)
			if after := fmt.Sprint(e.Rows(table)); after != before {
				t.Fatalf("the second replay changed the table:\nbefore %s\nafter  %s", before, after)
			}
			if m := sinkdriver.SinkMetrics(t, inst); m["rows_inserted"] != 30 || m["rows_skipped_duplicates"] != 60 || m["rows_copied"] != 90 {
				t.Errorf("metrics after two replays %v", m)
			}
			// Another runtime (a restart) redelivers it too.
			other := e.Start(d).Open(name, cfg)
			consume(t, other, b)
			if after := fmt.Sprint(e.Rows(table)); after != before {
				t.Fatalf("the replay by a new runtime changed the table")
			}
			consume(t, other, Batch("orders", 120, 20)) // overlaps 120..129, adds 130..139
			e.ExactlyOnce(table, "orders", 100, 139)
			consume(t, other, Batch("orders", 120, 30)) // overlaps 120..139, adds 140..149
			if ids, n := e.IDs(table); n != 50 || len(ids) != 50 {
				t.Fatalf("%d rows, %d ids after an overlapping batch", n, len(ids))
			}
			// 100..129 again, then 120..139 and 120..149: 20 written.
			if m := sinkdriver.Metrics(t, other); m["records"] != 20 || m["skipped"] != 60 {
				t.Errorf("the new runtime's records %v, skipped %v; want 20 and 60", m["records"], m["skipped"])
			}
		})
	}
}

// RowsLeftInStagingAreMovedByTheNextLoad: rows a writer of the spec's
// design (COPY, INSERT, TRUNCATE as separate statements) left in staging
// when it crashed between its COPY and its INSERT are moved by the next
// load, with the same deduplication: the spec's replay note.
func RowsLeftInStagingAreMovedByTheNextLoad(t *testing.T, d sinkdriver.Driver, e *Env) {
	emu := e.NeedEmulator("the staged rows are written with PostgreSQL's bytea literals, and the test reads the statement log")
	rt := e.Start(d)
	t.Run("same topic", func(t *testing.T) {
		inst := rt.Open("leftover", e.Config(map[string]any{"target_table": "leftover"}))
		consume(t, inst, Batch("orders", 0, 3))
		e.Exec(`INSERT INTO "staging_leftover" (id, pico_offset, pico_timestamp, pico_topic, pico_partition, pico_key, payload, created_at) VALUES ` +
			`('orders:0:2', '2', '1', 'orders', 0, NULL, '\x00'::bytea, '2025-01-01T00:00:00.000Z'), ` + // already in the target
			`('orders:0:3', '3', '1', 'orders', 0, NULL, '\x03'::bytea, '2025-01-01T00:00:00.000Z'), ` +
			`('orders:0:3', '3', '1', 'orders', 0, NULL, '\x03'::bytea, '2025-01-01T00:00:00.000Z')`)
		consume(t, inst, Batch("orders", 4, 2))
		e.ExactlyOnce("leftover", "orders", 0, 5)
		rows := e.Rows("leftover")
		if p := rows[2]["payload"].([]byte); string(p) == "\x00" {
			t.Errorf("the staged duplicate of offset 2 replaced the loaded row")
		}
		if p := rows[3]["payload"].([]byte); string(p) != "\x03" {
			t.Errorf("offset 3 payload %q, want the staged row's", p)
		}
		if !strings.Contains(FirstWords(emu), "INSERT") {
			t.Fatal("no load ran")
		}
	})
	t.Run("other topic, duplicated in staging", func(t *testing.T) {
		inst := rt.Open("leftover_other", e.Config(map[string]any{"target_table": "leftover_other"}))
		e.Exec(`INSERT INTO "staging_leftover_other" (id, pico_offset, pico_timestamp, pico_topic, pico_partition, pico_key, payload, created_at) VALUES ` +
			`('old:0:1', '1', '1000', 'old', 0, NULL, '\x01'::bytea, '2025-01-01T00:00:00.000Z'), ` +
			`('old:0:1', '1', '1000', 'old', 0, NULL, '\x01'::bytea, '2025-01-01T00:00:00.000Z'), ` +
			`('old:0:2', '2', '1000', 'old', 0, NULL, '\x02'::bytea, '2025-01-01T00:00:00.000Z')`)
		consume(t, inst, Batch("new", 0, 3))
		ids, n := e.IDs("leftover_other")
		if n != 5 || !ids["old:0:1"] || !ids["old:0:2"] || !ids["new:0:2"] {
			t.Fatalf("%d rows: %v", n, ids)
		}
		if n := e.Count("staging_leftover_other"); n != 0 {
			t.Fatalf("staging holds %d rows", n)
		}
		if m := sinkdriver.SinkMetrics(t, inst); m["rows_inserted"] != 5 || m["rows_copied"] != 3 || m["rows_skipped_duplicates"] != 0 {
			t.Fatalf("metrics %v", m)
		}
	})
}
