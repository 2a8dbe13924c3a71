package deltatest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

// Test is one behaviour test of the suite.
type Test struct {
	Name string
	Run  func(t *testing.T, d sinkdriver.Driver, s *Store)
	// Backends are the backends the test runs on; nil: every one of
	// Backends. A test names fewer when what it checks is one store's
	// (its credentials, syncfs) or when the store plays no part in it.
	Backends []string
}

// Tests is the suite, in the order Run runs it.
var Tests = []Test{
	{Name: "QuickStart", Run: QuickStart},
	{Name: "ConcurrentWritersLoseNothing", Run: ConcurrentWritersLoseNothing},
	{Name: "CreateTableOnFirstBatch", Run: CreateTableOnFirstBatch},
	{Name: "TopicCannotLeaveTemplateDirectory", Run: TopicCannotLeaveTemplateDirectory},
	{Name: "MissingTableIsBadConfig", Run: MissingTableIsBadConfig},
	{Name: "MissingBucketIsBadConfig", Run: MissingBucketIsBadConfig, Backends: []string{S3, Azure, GCS}},
	{Name: "TopicsAndPartitionsAreTrackedSeparately", Run: TopicsAndPartitionsAreTrackedSeparately},
	{Name: "ReplayIsSkippedNotWritten", Run: ReplayIsSkippedNotWritten},
	{Name: "S3RefusedKeysAreBadConfig", Run: S3RefusedKeysAreBadConfig, Backends: []string{S3}},
	{Name: "AzureCredentialsAndContainer", Run: AzureCredentialsAndContainer, Backends: []string{Azure}},
	{Name: "AzureSASTokenAndABFSSURI", Run: AzureSASTokenAndABFSSURI, Backends: []string{Azure}},
	{Name: "GCSKeyIsChecked", Run: GCSKeyIsChecked, Backends: []string{GCS}},
	// syncfs is a local filesystem's.
	{Name: "FileSyncFilesystemSyncsTwicePerBatch", Run: FileSyncFilesystemSyncsTwicePerBatch, Backends: []string{File}},
	// The encoder's: the store plays no part.
	// compaction = true: the local store and one object store.
	{Name: "CompactionRewritesSmallFiles", Run: CompactionRewritesSmallFiles, Backends: []string{File, S3}},
	{Name: "CompactionRacesWritersAndCompactors", Run: CompactionRacesWritersAndCompactors, Backends: []string{File, S3}},
	{Name: "NanosecondTimestampsAreTruncatedCountedAndLoggedOnce", Run: NanosecondTimestampsAreTruncatedCountedAndLoggedOnce, Backends: []string{File}},
	// Group commits (group.go): the commit path is every store's; the
	// rest is the queue's, checked where a commit is cheap.
	{Name: "GroupCommitWritesPartitionsOnce", Run: GroupCommitWritesPartitionsOnce},
	{Name: "GroupReplayIsSkipped", Run: GroupReplayIsSkipped, Backends: []string{File}},
	{Name: "GroupMemberThatCannotBeWrittenFailsAlone", Run: GroupMemberThatCannotBeWrittenFailsAlone, Backends: []string{File}},
	{Name: "GroupOfTombstonesAndRecords", Run: GroupOfTombstonesAndRecords, Backends: []string{File}},
	{Name: "GroupOfTwoTopicsInOneTable", Run: GroupOfTwoTopicsInOneTable, Backends: []string{File}},
	{Name: "GroupsOfTwoWritersLoseNothing", Run: GroupsOfTwoWritersLoseNothing, Backends: []string{File, S3}},
	// write_mode = "upsert" (upsert.go, upsert_keys.go): the merge path is every store's
	// commit path; checked on the local store and one object store.
	{Name: "UpsertMatchesModel", Run: UpsertMatchesModel, Backends: []string{File, S3}},
	{Name: "UpsertTwoWritersAndCompaction", Run: UpsertTwoWritersAndCompaction, Backends: []string{File, S3}},
	{Name: "UpsertRefusals", Run: UpsertRefusals, Backends: []string{File}},
	{Name: "UpsertTimestampPartitionKey", Run: UpsertTimestampPartitionKey, Backends: []string{File}},
	{Name: "UpsertEmptyStringPartitionKey", Run: UpsertEmptyStringPartitionKey, Backends: []string{File}},
	{Name: "UpsertFirstCommitRacesCreate", Run: UpsertFirstCommitRacesCreate, Backends: []string{File}},
	{Name: "UpsertRewritesSparkFiles", Run: UpsertRewritesSparkFiles, Backends: []string{File}},
	// column_types (valueschema.go): the encoder's and the log's, not a store's.
	{Name: "ColumnTypesFromValueSchema", Run: ColumnTypesFromValueSchema, Backends: []string{File}},
	{Name: "ColumnTypesValuesIgnoresValueSchema", Run: ColumnTypesValuesIgnoresValueSchema, Backends: []string{File}},
	{Name: "ColumnTypesHintTheTableCannotHold", Run: ColumnTypesHintTheTableCannotHold, Backends: []string{File}},
	// Redrive (redrive.go): the txn's, not a store's.
	{Name: "RedriveIsWrittenOnce", Run: RedriveIsWrittenOnce, Backends: []string{File}},
}

// Run runs every test of the suite through d on each of its backends, each
// as a parallel subtest (Test/backend) with a store of its own.
func Run(t *testing.T, d sinkdriver.Driver) {
	for _, tc := range Tests {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			backends := tc.Backends
			if backends == nil {
				backends = Backends
			}
			for _, b := range backends {
				t.Run(b, func(t *testing.T) {
					t.Parallel()
					tc.Run(t, d, NewStore(t, b))
				})
			}
		})
	}
}

// Open opens an instance (named after its key) and closes it at the end of
// the test.
func Open(t *testing.T, rt sinkdriver.Runtime, key string, cfg map[string]any) sinkdriver.Instance {
	t.Helper()
	inst, err := rt.Open(sinkdriver.Definition{Key: key, Name: key, Config: cfg})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = inst.Close() })
	return inst
}

// JSONBatch builds a batch of JSON records with consecutive offsets.
func JSONBatch(topic string, first uint64, payloads ...string) sinkdriver.Batch {
	b := sinkdriver.Batch{Attempt: 1, Topic: topic, Schema: "json"}
	for i, p := range payloads {
		b.Records = append(b.Records, sinkdriver.Record{Offset: first + uint64(i), TimestampMs: 1767225600000 + int64(i), Payload: []byte(p)})
	}
	return b
}

// EventsSchema is table_schema for the events batches (id, body) plus a
// region to partition by.
const EventsSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},
	{"name":"body","type":"string","nullable":true,"metadata":{}},{"name":"region","type":"string","nullable":true,"metadata":{}}]}`

// RegionEvents is n records of EventsSchema from offset (and id) first, in
// regions r0 and r1.
func RegionEvents(topic string, first, n int) sinkdriver.Batch {
	var p []string
	for i := first; i < first+n; i++ {
		p = append(p, fmt.Sprintf(`{"id":%d,"body":"event %d","region":"r%d"}`, i, i, i%2))
	}
	return JSONBatch(topic, uint64(first), p...)
}

// Events is n records of the events table from offset (and id) first.
func Events(topic string, first, n int) sinkdriver.Batch {
	var p []string
	for i := first; i < first+n; i++ {
		p = append(p, fmt.Sprintf(`{"id":%d,"body":"event %d"}`, i, i))
	}
	return JSONBatch(topic, uint64(first), p...)
}

func consume(t *testing.T, inst sinkdriver.Instance, b sinkdriver.Batch) {
	t.Helper()
	if err := inst.Consume(b); err != nil {
		t.Fatalf("consume %s offsets %d..: %v", b.Topic, b.Records[0].Offset, err)
	}
}

// TopicsAndPartitionsAreTrackedSeparately: the same offsets of another
// topic are not a replay.
func TopicsAndPartitionsAreTrackedSeparately(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	inst := Open(t, d.Start(t, s.Secrets...), "ev", s.Config(uri))
	consume(t, inst, Events("a", 0, 3))
	b := Events("b", 0, 3) // same offsets, other topic: not a replay
	for i := range b.Records {
		b.Records[i].Payload = []byte(fmt.Sprintf(`{"id":%d}`, 100+i))
	}
	consume(t, inst, b)
	s.WantIDs(uri, "0,1,2,100,101,102")
}

// FileSyncFilesystemSyncsTwicePerBatch: with file_sync = "filesystem" a
// batch over three partitions makes two syncs (the syncfs before the
// commit, the log directory after it) instead of eight, and delta-rs reads
// every record back.
func FileSyncFilesystemSyncsTwicePerBatch(t *testing.T, d sinkdriver.Driver, _ *Store) {
	dir := t.TempDir()
	if !objstore.SyncfsCovers(dir) {
		t.Skip("syncfs does not cover this temporary directory's filesystem, or this kernel is older than 5.8")
	}
	uri := "file://" + filepath.Join(dir, "regions")
	inst := Open(t, d.Start(t), "syncfs", map[string]any{
		"table_uri": uri, "file_sync": "filesystem", "create_table": true, "partition_by": "region",
		"table_schema": `{"type":"struct","fields":[{"name":"id","type":"long"},{"name":"region","type":"string"}]}`,
	})
	batch := func(first int) sinkdriver.Batch {
		var p []string
		for i := first; i < first+30; i++ {
			p = append(p, fmt.Sprintf(`{"id":%d,"region":"r%d"}`, i, i%3))
		}
		return JSONBatch("t", uint64(first), p...)
	}
	consume(t, inst, batch(0)) // creates the table: its root did not exist before
	for first := 30; first < 120; first += 30 {
		before := sinkdriver.SinkMetrics(t, inst)["fsyncs"]
		consume(t, inst, batch(first))
		if got := sinkdriver.SinkMetrics(t, inst)["fsyncs"] - before; got != 2 {
			t.Errorf("batch at %d: %v syncs, want 2 (the syncfs and the log directory)", first, got)
		}
	}
	if ids := IDs(t, uri); len(ids) != 120 || ids[0] != 0 || ids[119] != 119 {
		t.Errorf("delta-rs reads %d ids (%v), want 0..119", len(ids), ids)
	}
}

// metrics returns inst's metrics() numbers: the SDK's at the top level and
// the sink's own as "sink.<name>".
func metrics(t *testing.T, inst sinkdriver.Instance) map[string]float64 {
	t.Helper()
	out := sinkdriver.Metrics(t, inst)
	for k, v := range sinkdriver.SinkMetrics(t, inst) {
		out["sink."+k] = v
	}
	return out
}

// ReplayIsSkippedNotWritten: a batch delivered again after it was
// committed (exactly_once) writes nothing; metrics() counts its records as
// skipped, not as records (written).
func ReplayIsSkippedNotWritten(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	inst := Open(t, d.Start(t, s.Secrets...), "replay", s.Config(uri))
	consume(t, inst, Events("a", 0, 2))
	replay := Events("a", 0, 2)
	replay.Attempt = 2 // the runtime did not learn of the first answer
	consume(t, inst, replay)
	s.WantIDs(uri, "0,1")
	m := metrics(t, inst)
	for k, want := range map[string]float64{"batches": 2, "records": 2, "skipped": 2, "sink.records_written": 2, "sink.records_skipped": 2} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	// Half a replay: two records skipped, two written.
	consume(t, inst, Events("a", 0, 4))
	s.WantIDs(uri, "0,1,2,3")
	if m := metrics(t, inst); m["records"] != 4 || m["skipped"] != 4 {
		t.Errorf("after a partial replay records = %v, skipped = %v; want 4 and 4", m["records"], m["skipped"])
	}
}

// NanosecondTimestampsAreTruncatedCountedAndLoggedOnce: a timestamp with
// nanoseconds is written cut to microseconds, counted in
// timestamps_truncated, and logged once per topic and column however many
// records carry one. Trailing zeros beyond the microsecond lose nothing and
// are not counted.
func NanosecondTimestampsAreTruncatedCountedAndLoggedOnce(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.URI("times")
	inst := Open(t, d.Start(t, s.Secrets...), "nanos", s.Config(uri, "create_table", true,
		"table_schema", `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"ts","type":"timestamp","nullable":true,"metadata":{}}]}`))
	consume(t, inst, JSONBatch("a", 0,
		`{"id":0,"ts":"2026-03-04T05:06:07.123456789Z"}`,
		`{"id":1,"ts":"2026-03-04T05:06:07.123456000Z"}`))
	if n := metrics(t, inst)["sink.timestamps_truncated"]; n != 1 {
		t.Errorf("timestamps_truncated = %v after one nanosecond timestamp, want 1", n)
	}
	consume(t, inst, JSONBatch("a", 2, `{"id":2,"ts":"2026-03-04T05:06:08.000000001Z"}`))
	if n := metrics(t, inst)["sink.timestamps_truncated"]; n != 2 {
		t.Errorf("timestamps_truncated = %v after two, want 2", n)
	}
	var warned []string
	for _, l := range inst.Logs() {
		if strings.Contains(l, "truncated to microseconds") {
			warned = append(warned, l)
		}
	}
	if len(warned) != 1 || !strings.HasPrefix(warned[0], "WARN") || !strings.Contains(warned[0], "column=ts") || !strings.Contains(warned[0], "topic=a") {
		t.Errorf("want one warning naming topic a and column ts, got %q", warned)
	}
	want := []string{"2026-03-04T05:06:07.123456+00:00", "2026-03-04T05:06:07.123456+00:00", "2026-03-04T05:06:08+00:00"}
	rows := s.ReadRows(uri, "id")
	if len(rows) != 3 {
		t.Fatalf("rows %v", rows)
	}
	for i, r := range rows {
		if r["ts"] != want[i] {
			t.Errorf("row %d: ts %v, want %s", i, r["ts"], want[i])
		}
	}
}
