package delta_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/delta/deltatest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

const eventsSchema = deltatest.EventsSchema

func creating(cfg map[string]any, uri string, kv ...any) map[string]any {
	return with(with(cfg, "table_uri", uri, "create_table", true, "table_schema", eventsSchema), kv...)
}

func created(t *testing.T, uri string) deltatest.TableFacts {
	t.Helper()
	return deltatest.Facts(t, uri)
}

func regionEventsBatch(topic string, first, n int) hostclient.Batch {
	return deltatest.RegionEvents(topic, first, n)
}

// timestamp_ntz is the one type that needs more than reader 1 / writer 2.
func TestCreatedTableWithTimestampNTZ(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "ntz"))
	schema := `{"type":"struct","fields":[{"name":"id","type":"long"},{"name":"at","type":"timestamp_ntz"}]}`
	inst := newHarness(t).open("ntz", map[string]any{"table_uri": uri, "create_table": true, "table_schema": schema})
	consume(t, inst, jsonBatch("ntz", 0, `{"id":1,"at":"2026-09-03T21:15:04"}`))
	f := created(t, uri)
	if f.Reader != 3 || f.Writer != 7 || fmt.Sprint(f.ReaderFeatures) != "[timestampNtz]" || fmt.Sprint(f.WriterFeatures) != "[timestampNtz]" {
		t.Fatalf("protocol %+v", f)
	}
	if rows := readRows(t, uri, "id"); len(rows) != 1 || rows[0]["at"] != "2026-09-03T21:15:04" {
		t.Fatalf("rows %v", rows)
	}
}

// A templated URI creates one table per topic, each with its own id.
func TestCreateTablePerTopic(t *testing.T) {
	dir := t.TempDir()
	inst := newHarness(t).open("ev", creating(map[string]any{}, fileURI(dir)+"/{topic_segment[-1]}"))
	consume(t, inst, events("events.a", 0, 3))
	consume(t, inst, events("events.b", 10, 2))
	a, b := fileURI(filepath.Join(dir, "a")), fileURI(filepath.Join(dir, "b"))
	wantIDs(t, a, "0,1,2")
	wantIDs(t, b, "10,11")
	if tableID(t, a) == tableID(t, b) {
		t.Fatal("two topics' tables share a table id")
	}
}

// Two sink instances in two host processes create the same table at the
// same time: one table, holding both batches exactly once. Several rounds,
// so that at least some of them race for version 0 in earnest.
// With the same definition on both sides the loser appends on top of the
// winner's table at once; with cfgB changing it, the loser's batch may fail
// once with RETRY (deliver).
func raceToCreate(t *testing.T, cfg map[string]any, uriOf func(round int) string, cfgB func(map[string]any) map[string]any) {
	t.Helper()
	const rounds = 6
	same := fmt.Sprint(cfgB(cfg)) == fmt.Sprint(cfg)
	lost, retried := 0, 0
	ha, hb := newHarness(t), newHarness(t)
	for round := range rounds {
		uri := uriOf(round)
		a := ha.open(fmt.Sprintf("a%d", round), creating(cfg, uri))
		b := hb.open(fmt.Sprintf("b%d", round), cfgB(creating(cfg, uri)))
		var wg sync.WaitGroup
		var errA, errB error
		var triesA, triesB int
		start := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-start; triesA, errA = deliver(a, events("events", 0, 5), !same) }()
		go func() { defer wg.Done(); <-start; triesB, errB = deliver(b, events("events", 100, 5), !same) }()
		close(start)
		wg.Wait()
		if errA != nil || errB != nil {
			t.Fatalf("round %d: %v / %v", round, errA, errB)
		}
		wantIDs(t, uri, span(0, 4)+","+span(100, 104))
		if f := created(t, uri); fmt.Sprint(f.Versions) != "[0 1]" {
			t.Fatalf("round %d: versions %v", round, f.Versions)
		}
		// Replays of both batches add nothing.
		consume(t, a, events("events", 0, 5))
		consume(t, b, events("events", 100, 5))
		wantIDs(t, uri, span(0, 4)+","+span(100, 104))
		lost += conflicts(t, a) + conflicts(t, b)
		retried += triesA + triesB - 2
		_ = a.Close()
		_ = b.Close()
	}
	t.Logf("%d rounds: %d races lost, %d batches delivered again", rounds, lost, retried)
}

// deliver consumes b. With retry, as the runtime would: a creator that
// lost the race to a table of another definition fails its batch with
// RETRY, saying so, and the batch is delivered again.
func deliver(inst *hostclient.Instance, b hostclient.Batch, retry bool) (attempts int, err error) {
	for b.Attempt = 1; ; b.Attempt++ {
		err := inst.Consume(b)
		if err == nil {
			return int(b.Attempt), nil
		}
		var se *hostclient.StatusError
		if !retry || b.Attempt == 3 || !errors.As(err, &se) || se.Code != hostclient.StatusRetry || !strings.Contains(se.Message, "was created by another writer") {
			return int(b.Attempt), err
		}
	}
}

func TestTwoSinksRaceToCreateATable(t *testing.T) {
	dir := t.TempDir()
	raceToCreate(t, map[string]any{}, func(r int) string { return fileURI(filepath.Join(dir, fmt.Sprint(r))) },
		func(c map[string]any) map[string]any { return c })
}

func TestS3TwoSinksRaceToCreateATable(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	raceToCreate(t, minio(t, svc), func(r int) string { return fmt.Sprintf("s3://%s/events%d", bucket, r) },
		func(c map[string]any) map[string]any { return c })
}

// Racing creators that disagree on the definition still end with one
// table holding both batches once: whichever table is created wins, and
// the other sink's batch is written to it.
func TestTwoSinksRaceToCreateWithDifferentDefinitions(t *testing.T) {
	dir := t.TempDir()
	raceToCreate(t, map[string]any{}, func(r int) string { return fileURI(filepath.Join(dir, fmt.Sprint(r))) },
		func(c map[string]any) map[string]any { return with(c, "partition_by", "region") })
}

// A table that exists is written as it is, whatever table_schema says;
// the difference is logged at info.
func TestExistingTableWinsOverTableSchema(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "events"))
	py(t, createEvents, uri) // id, body: no region
	inst := newHarness(t).open("ev", creating(map[string]any{}, uri, "partition_by", "region"))
	consume(t, inst, regionEventsBatch("events", 0, 3))
	wantIDs(t, uri, "0,1,2")
	if f := created(t, uri); len(f.Partitions) != 0 || len(f.Columns) != 2 {
		t.Fatalf("the existing table changed: %+v", f)
	}
	logged := false
	for _, l := range inst.Logs() {
		logged = logged || (l.Level.String() == "INFO" && strings.Contains(l.Message, "exists with another definition"))
	}
	if !logged {
		t.Fatal("no info line about the existing table's definition")
	}
}

// create_table's keys are checked at Open; off, a missing table fails as
// it always did.
func TestCreateTableConfig(t *testing.T) {
	h := newHarness(t)
	uri := fileURI(filepath.Join(t.TempDir(), "none"))
	wantStatus(t, h.openErr("v", map[string]any{"table_uri": uri}), hostclient.StatusBadConfig, "Failed to load Delta table "+uri)
	tmpl := h.open("tmpl", map[string]any{"table_uri": fileURI(t.TempDir()) + "/{topic}"})
	wantStatus(t, tmpl.Consume(events("orders", 0, 1)), hostclient.StatusRetry, "Failed to load Delta table")
	for _, tc := range []struct {
		cfg  map[string]any
		want []string
	}{
		{map[string]any{"table_uri": uri, "table_schema": eventsSchema}, []string{`"table_schema" is set but create_table is false`}},
		{map[string]any{"table_uri": uri, "create_table": true}, []string{`"table_schema" is required`}},
		{creating(map[string]any{}, uri, "partition_by", "day"), []string{`"partition_by"`, `"day" is not a top-level column`}},
		{creating(map[string]any{}, uri, "table_schema", `{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"long"}]}},{"name":"y","type":"long"}]}`, "partition_by", "s"),
			[]string{`"partition_by"`, `column "s" is a struct<x:long>`}},
		{creating(map[string]any{}, uri, "table_schema", "id long"), []string{`"table_schema"`, "not a Delta schema"}},
	} {
		wantStatus(t, h.openErr("v", tc.cfg), hostclient.StatusBadConfig, tc.want...)
	}
}

// With metadata_columns, the created schema gets the pico_* columns.
func TestCreatedTableHasMetadataColumns(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "events"))
	inst := newHarness(t).open("ev", creating(map[string]any{}, uri, "metadata_columns", true))
	consume(t, inst, events("events", 0, 2))
	f := created(t, uri)
	want := "[id long body string region string pico_topic string pico_partition long pico_offset long pico_timestamp long pico_key binary pico_headers map]"
	if fmt.Sprint(f.Columns) != want {
		t.Fatalf("columns %v\nwant    %s", f.Columns, want)
	}
	// The created columns are filled from the records, not left null.
	for i, r := range readRows(t, uri, "id") {
		if r["pico_topic"] != "events" || r["pico_offset"] != float64(i) || r["id"] != float64(i) {
			t.Errorf("row %d: %v, want id and pico_offset %d, pico_topic events", i, r, i)
		}
	}
}

// With schema_evolution = add_columns, a first batch with fields
// table_schema lacks creates the table with them: version 0 holds one
// metaData, with the added columns. Two such sinks racing both land.
func TestCreateTableWithAddedColumns(t *testing.T) {
	dir := t.TempDir()
	schema := `{"type":"struct","fields":[{"name":"id","type":"long"}]}`
	ha, hb := newHarness(t), newHarness(t)
	for round := range 3 {
		uri := fileURI(filepath.Join(dir, fmt.Sprint(round)))
		cfg := map[string]any{"table_uri": uri, "create_table": true, "table_schema": schema, "schema_evolution": "add_columns"}
		a, b := ha.open(fmt.Sprintf("a%d", round), cfg), hb.open(fmt.Sprintf("b%d", round), cfg)
		var wg sync.WaitGroup
		var errA, errB error
		wg.Add(2)
		go func() { defer wg.Done(); errA = a.Consume(jsonBatch("t", 0, `{"id":1,"body":"x"}`)) }()
		go func() { defer wg.Done(); errB = b.Consume(jsonBatch("t", 0, `{"id":2,"note":"y"}`)) }()
		wg.Wait()
		if errA != nil || errB != nil {
			t.Fatalf("round %d: %v / %v", round, errA, errB)
		}
		f := created(t, uri)
		if fmt.Sprint(f.Versions) != "[0 1]" || f.Columns[0] != "id long" || len(f.Columns) != 3 {
			t.Fatalf("round %d: %+v", round, f)
		}
		rows := readRows(t, uri, "id")
		if len(rows) != 2 || rows[0]["body"] != "x" || rows[1]["note"] != "y" {
			t.Fatalf("round %d: rows %v", round, rows)
		}
	}
}
