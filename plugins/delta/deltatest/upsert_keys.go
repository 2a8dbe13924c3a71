package deltatest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// Upserts whose keys are partition columns, and the first commit of a
// table made in upsert mode: the cases where a change once failed to
// reach the row of its key.

// keyConfig is the plugin_config of an upsert instance of a table with
// the given schema (fields of a struct type, as JSON), partitioning and
// key columns.
func keyConfig(s *Store, uri, fields, partition, keys string) map[string]any {
	return s.Config(uri, "write_mode", "upsert", "key_columns", keys, "change_format", "op_field",
		"create_table", true, "table_schema", `{"type":"struct","fields":[`+fields+`]}`, "partition_by", partition)
}

// wantRows checks the table holds n rows, as delta-rs reads it, and that
// the first has v (when n is 1).
func wantRows(t *testing.T, s *Store, uri, sortBy string, n int, v float64) {
	t.Helper()
	rows := s.ReadRows(uri, sortBy)
	if len(rows) != n {
		t.Fatalf("delta-rs reads %d rows %v, want %d", len(rows), rows, n)
	}
	if n == 1 && rows[0]["v"] != v {
		t.Fatalf("delta-rs reads %v, want v = %v", rows, v)
	}
}

// UpsertTimestampPartitionKey: a timestamp (and timestamp_ntz) key column
// that is also the partition column: an update replaces the row of its
// key and a delete removes it.
func UpsertTimestampPartitionKey(t *testing.T, d sinkdriver.Driver, s *Store) {
	rt := d.Start(t, s.Secrets...)
	for _, typ := range []string{"timestamp", "timestamp_ntz"} {
		t.Run(typ, func(t *testing.T) {
			uri := s.URI("upsert_ts_" + typ)
			inst := Open(t, rt, "ts_"+typ, keyConfig(s, uri, field("ts", strconv.Quote(typ))+","+field("id", `"long"`)+","+field("v", `"long"`), "ts", "ts, id"))
			ts := `"2024-03-04T05:06:07.123456Z"`
			if typ == "timestamp_ntz" {
				ts = `"2024-03-04T05:06:07.123456"`
			}
			consume(t, inst, JSONBatch("cdc", 0, `{"ts":`+ts+`,"id":1,"v":1,"_op":"c"}`))
			wantRows(t, s, uri, "id", 1, 1)
			consume(t, inst, JSONBatch("cdc", 1, `{"ts":`+ts+`,"id":1,"v":2,"_op":"u"}`))
			wantRows(t, s, uri, "id", 1, 2)
			consume(t, inst, JSONBatch("cdc", 2, `{"ts":`+ts+`,"id":1,"_op":"d"}`))
			wantRows(t, s, uri, "id", 0, 0)
		})
	}
}

// UpsertEmptyStringPartitionKey: "" in a string key column that is a
// partition column is refused (a partition value "" is null in Delta, and
// no later change could reach the row): FATAL, or rejected when the host
// takes rejections, the batch's other changes landing.
func UpsertEmptyStringPartitionKey(t *testing.T, d sinkdriver.Driver, s *Store) {
	rt := d.Start(t, s.Secrets...)
	uri := s.URI("upsert_empty_key")
	inst := Open(t, rt, "empty", keyConfig(s, uri, field("k", `"string"`)+","+field("v", `"long"`), "k", "k"))
	b := JSONBatch("cdc", 0, `{"k":"a","v":1,"_op":"c"}`, `{"k":"","v":1,"_op":"c"}`)
	WantStatus(t, inst.Consume(b), hostclient.StatusFatal, `key column "k"`, "empty string", "offset 1")
	b.AcceptRejections = true
	if err := inst.Consume(b); !rejectedOnly(err) {
		t.Fatalf("%v, want one record rejected", err)
	}
	wantRows(t, s, uri, "k", 1, 1)
}

// UpsertFirstCommitRacesCreate: two instances opened before the table
// exists both upsert key a; the second's create finds the first's table
// and its change replaces the first's row instead of adding a second.
func UpsertFirstCommitRacesCreate(t *testing.T, d sinkdriver.Driver, s *Store) {
	rt := d.Start(t, s.Secrets...)
	uri := s.URI("upsert_create_race")
	cfg := keyConfig(s, uri, field("k", `"string"`)+","+field("v", `"long"`), "", "k")
	delete(cfg, "partition_by")
	a := Open(t, rt, "a", cfg)
	b := Open(t, rt, "b", cfg)
	consume(t, a, JSONBatch("a", 0, `{"k":"a","v":1,"_op":"c"}`))
	consumeRetrying(t, b, JSONBatch("b", 0, `{"k":"a","v":2,"_op":"u"}`))
	wantRows(t, s, uri, "k", 1, 2)
}

// UpsertRewritesSparkFiles: a Spark-written table (the conformance table
// data-reader-timestamp_ntz, whose files carry encodings this writer does
// not use): a delete rewrites the file of its key, and compaction then
// merges the files; delta-rs reads every other row throughout.
func UpsertRewritesSparkFiles(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.URI("spark_ntz")
	if err := os.CopyFS(strings.TrimPrefix(uri, "file://"), os.DirFS(filepath.Join(testenv.DeltaTables(t), "data-reader-timestamp_ntz"))); err != nil {
		t.Fatal(err)
	}
	rt := d.Start(t, s.Secrets...)
	inst := Open(t, rt, "spark", s.Config(uri, "write_mode", "upsert", "key_columns", "id", "change_format", "op_field"))
	consume(t, inst, JSONBatch("cdc", 0, `{"id":0,"_op":"d"}`))
	wantIDs := func(when string) {
		t.Helper()
		var ids []string
		for _, r := range s.ReadRows(uri, "id") {
			ids = append(ids, fmt.Sprint(r["id"]))
		}
		if got := strings.Join(ids, ","); got != "1,2,3,4,5,6,7,8" {
			t.Fatalf("%s: delta-rs reads ids %s, want 1..8", when, got)
		}
	}
	wantIDs("after the delete")
	_ = inst.Close()
	c := Open(t, rt, "compactor", compactionConfig(s, uri, "write_mode", "upsert", "key_columns", "id", "change_format", "op_field"))
	waitForMetric(t, "compactions", 1, c)
	_ = c.Close()
	wantIDs("after compaction")
}
