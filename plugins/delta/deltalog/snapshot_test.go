package deltalog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

var ctx = context.Background()

const protocolLine = `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`

func metaDataLine(conf string) string {
	if conf == "" {
		conf = "{}"
	}
	return `{"metaData":{"id":"t1","format":{"provider":"parquet","options":{}},` +
		`"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},{\"name\":\"p\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}",` +
		`"partitionColumns":["p"],"configuration":` + conf + `,"createdTime":1}}`
}

// putCommit writes one commit file made of the given lines.
func putCommit(store *deltalog.MemStore, v int64, lines ...string) {
	store.Put(deltalog.CommitPath(v), []byte(strings.Join(lines, "\n")+"\n"))
}

func newTable(t *testing.T) *deltalog.MemStore {
	t.Helper()
	s := deltalog.NewMemStore()
	putCommit(s, 0, `{"commitInfo":{"timestamp":1,"operation":"CREATE TABLE"}}`, protocolLine, metaDataLine(""))
	return s
}

func load(t *testing.T, s deltalog.Store) *deltalog.Snapshot {
	t.Helper()
	snap, err := deltalog.Load(ctx, s, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return snap
}

func TestLoadErrors(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		_, err := deltalog.Load(ctx, deltalog.NewMemStore(), nil)
		if !errors.Is(err, deltalog.ErrNoTable) {
			t.Errorf("err = %v, want ErrNoTable", err)
		}
	})
	t.Run("gap", func(t *testing.T) {
		s := newTable(t)
		putCommit(s, 1, `{"txn":{"appId":"a","version":1}}`)
		putCommit(s, 3, `{"txn":{"appId":"a","version":3}}`)
		_, err := deltalog.Load(ctx, s, nil)
		var gap *deltalog.LogGapError
		if !errors.As(err, &gap) || gap.Missing != 2 || gap.Latest != 3 {
			t.Errorf("err = %v, want gap at 2", err)
		}
	})
	t.Run("no protocol", func(t *testing.T) {
		s := deltalog.NewMemStore()
		putCommit(s, 0, metaDataLine(""))
		if _, err := deltalog.Load(ctx, s, nil); !errors.Is(err, deltalog.ErrCorruptLog) {
			t.Errorf("err = %v, want ErrCorruptLog", err)
		}
	})
	t.Run("bad line", func(t *testing.T) {
		s := newTable(t)
		putCommit(s, 1, `{"txn":`)
		if _, err := deltalog.Load(ctx, s, nil); !errors.Is(err, deltalog.ErrCorruptLog) {
			t.Errorf("err = %v, want ErrCorruptLog", err)
		}
	})
	t.Run("cleaned up without checkpoint", func(t *testing.T) {
		s := newTable(t)
		putCommit(s, 1, `{"txn":{"appId":"a","version":1}}`)
		_ = s.Delete(ctx, deltalog.CommitPath(0))
		var gap *deltalog.LogGapError
		if _, err := deltalog.Load(ctx, s, nil); !errors.As(err, &gap) || gap.Missing != 0 {
			t.Errorf("err = %v, want gap at 0", err)
		}
	})
	t.Run("storage failure", func(t *testing.T) {
		s := &failingStore{Store: newTable(t), failGet: deltalog.CommitPath(0)}
		if _, err := deltalog.Load(ctx, s, nil); !deltalog.IsTransient(err) {
			t.Errorf("err = %v, want a transient error passed through", err)
		}
	})
}

// failingStore fails Get for one path with a transient error.
type failingStore struct {
	deltalog.Store
	failGet string
}

func (f *failingStore) Get(ctx context.Context, path string) ([]byte, error) {
	if path == f.failGet {
		return nil, fmt.Errorf("get %s: %w", path, deltalog.ErrTransient)
	}
	return f.Store.Get(ctx, path)
}

func TestLoadIgnoresNonCommitFiles(t *testing.T) {
	s := newTable(t)
	putCommit(s, 1, `{"txn":{"appId":"a","version":1}}`)
	for _, p := range []string{
		"_delta_log/00000000000000000001.crc",
		"_delta_log/.00000000000000000001.json.crc",
		"_delta_log/00000000000000000000.00000000000000000001.compacted.json",
		"_delta_log/00000000000000000002.json.tmp",
		"_delta_log/0000000000000000002.json",
		"_delta_log/_commits/00000000000000000002.json",
		"_delta_log/_staged_commits/00000000000000000002.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json",
		"_delta_log/00000000000000000001.checkpoint.notauuid.parquet",
		"_delta_log/00000000000000000001.checkpoint.0000000001.parquet",
		"_delta_log/_sidecars/x.parquet",
	} {
		s.Put(p, []byte("garbage"))
	}
	snap := load(t, s)
	if snap.Version != 1 || snap.CheckpointVersion != -1 {
		t.Errorf("version %d checkpoint %d", snap.Version, snap.CheckpointVersion)
	}
}

func TestLastCheckpointHint(t *testing.T) {
	base := tableStore(t, "with_checkpoint_no_last_checkpoint") // checkpoint at 2, commits 0..3
	for _, hint := range []string{
		``,                       // none
		`{"version":2,"size":4}`, // correct
		`{"version":0}`,          // stale: a newer checkpoint exists
		`{"version":99}`,         // from the future: nothing at or after it
		`{"version":1}`,          // names a checkpoint that does not exist
		`not json`,               // unreadable
		`{"size":3}`,             // no version
	} {
		t.Run(hint, func(t *testing.T) {
			s := deltalog.NewMemStore()
			files, _ := base.List(ctx, "", "")
			for _, f := range files {
				data, _ := base.Get(ctx, f.Path)
				s.Put(f.Path, data)
			}
			if hint != "" {
				s.Put(deltalog.LastCheckpointPath, []byte(hint))
			}
			snap := load(t, s)
			if snap.Version != 3 || snap.CheckpointVersion != 2 {
				t.Errorf("version %d checkpoint %d, want 3 and 2", snap.Version, snap.CheckpointVersion)
			}
		})
	}
}

func TestCheckpointSelection(t *testing.T) {
	t.Run("incomplete multi-part is ignored", func(t *testing.T) {
		s := tableStore(t, "v1-multi-part-struct-stats-only")
		_ = s.Delete(ctx, "_delta_log/00000000000000000005.checkpoint.0000000002.0000000003.parquet")
		snap := load(t, s)
		if snap.Version != 5 || snap.CheckpointVersion != -1 {
			t.Errorf("version %d checkpoint %d, want 5 from full replay", snap.Version, snap.CheckpointVersion)
		}
	})
	t.Run("commits before the checkpoint may be gone", func(t *testing.T) {
		s := tableStore(t, "v1-single-part-struct-stats-only")
		for v := range int64(5) {
			_ = s.Delete(ctx, deltalog.CommitPath(v))
		}
		snap := load(t, s)
		if snap.Version != 5 || snap.CheckpointVersion != 5 {
			t.Errorf("version %d checkpoint %d", snap.Version, snap.CheckpointVersion)
		}
	})
	t.Run("newest complete checkpoint wins", func(t *testing.T) {
		s := tableStore(t, "v2-checkpoints-json-with-sidecars") // checkpoints at 1..6
		_ = s.Delete(ctx, deltalog.LastCheckpointPath)
		snap := load(t, s)
		if snap.CheckpointVersion != 6 {
			t.Errorf("checkpoint %d, want 6", snap.CheckpointVersion)
		}
	})
}

func TestDomainMetadataReconciliation(t *testing.T) {
	s := newTable(t)
	putCommit(s, 1,
		`{"domainMetadata":{"domain":"a","configuration":"1","removed":false}}`,
		`{"domainMetadata":{"domain":"b","configuration":"1","removed":false}}`)
	putCommit(s, 2,
		`{"domainMetadata":{"domain":"a","configuration":"2","removed":false}}`,
		`{"domainMetadata":{"domain":"b","configuration":"1","removed":true}}`,
		`{"domainMetadata":{"domain":"c","configuration":"x","removed":true}}`)
	snap := load(t, s)
	if got := slices.Sorted(maps.Keys(snap.Domains)); !slices.Equal(got, []string{"a"}) || snap.Domains["a"].Configuration != "2" {
		t.Errorf("domains = %v", snap.Domains)
	}
}

func TestReconciliationLatestWins(t *testing.T) {
	s := newTable(t)
	putCommit(s, 1, `{"txn":{"appId":"a","version":5}}`, `{"txn":{"appId":"b","version":1}}`)
	// Versions may go down: the latest action wins, not the highest version.
	putCommit(s, 2, `{"txn":{"appId":"a","version":2}}`,
		`{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["appendOnly"]}}`)
	putCommit(s, 3, metaDataLine(`{"delta.appendOnly":"true"}`))
	snap := load(t, s)
	if v, _ := snap.TxnVersion("a"); v != 2 {
		t.Errorf("txn a = %d, want 2", v)
	}
	if _, ok := snap.TxnVersion("zzz"); ok {
		t.Error("unknown app has a version")
	}
	if snap.Protocol.MinWriterVersion != 7 || snap.Metadata.Configuration["delta.appendOnly"] != "true" {
		t.Errorf("protocol %+v metadata %+v", snap.Protocol, snap.Metadata.Configuration)
	}
}

const ictProtocol = `{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["inCommitTimestamp"]}}`
const ictConf = `{"delta.enableInCommitTimestamps":"true"}`

func TestInCommitTimestamp(t *testing.T) {
	s := deltalog.NewMemStore()
	putCommit(s, 0, `{"commitInfo":{"timestamp":5,"inCommitTimestamp":1000}}`, ictProtocol, metaDataLine(ictConf))
	putCommit(s, 1, `{"commitInfo":{"timestamp":6,"inCommitTimestamp":2000}}`, `{"txn":{"appId":"a","version":1}}`)
	snap := load(t, s)
	if !snap.InCommitTimestampEnabled() || snap.InCommitTimestamp != 2000 {
		t.Fatalf("ICT enabled %v value %d", snap.InCommitTimestampEnabled(), snap.InCommitTimestamp)
	}
	// A checkpoint at the latest version drops commitInfo: the ICT still
	// comes from the commit file.
	cpUUID := "3a0d65cd-4056-49b8-937b-95f9e3ee90e5"
	s.Put("_delta_log/00000000000000000001.checkpoint."+cpUUID+".json", []byte(strings.Join([]string{
		`{"checkpointMetadata":{"version":1}}`, ictProtocol, metaDataLine(ictConf), `{"txn":{"appId":"a","version":1}}`,
	}, "\n")))
	s.Put(deltalog.LastCheckpointPath, []byte(`{"version":1}`))
	snap = load(t, s)
	if snap.CheckpointVersion != 1 || snap.InCommitTimestamp != 2000 {
		t.Errorf("from checkpoint: checkpoint %d ICT %d", snap.CheckpointVersion, snap.InCommitTimestamp)
	}
	if v, ok := snap.TxnVersion("a"); !ok || v != 1 {
		t.Errorf("txn from JSON checkpoint: %d %v", v, ok)
	}
}

func TestUpdateAndApply(t *testing.T) {
	s := newTable(t)
	snap := load(t, s)
	putCommit(s, 1, `{"commitInfo":{"timestamp":2}}`, `{"txn":{"appId":"a","version":1}}`, `{"add":{"path":"x","partitionValues":{"p":null},"size":1,"modificationTime":1,"dataChange":true}}`)
	putCommit(s, 2, `{"txn":{"appId":"a","version":2}}`, `{"domainMetadata":{"domain":"d","configuration":"c","removed":false}}`)
	next, err := snap.Update(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if next.Version != 2 || snap.Version != 0 {
		t.Errorf("versions: updated %d, original %d", next.Version, snap.Version)
	}
	if v, _ := next.TxnVersion("a"); v != 2 || len(next.Domains) != 1 {
		t.Errorf("after update: txn %d domains %v", v, next.Domains)
	}
	if _, ok := snap.TxnVersion("a"); ok || len(snap.Domains) != 0 {
		t.Error("Update modified the original snapshot")
	}
	same, err := next.Update(ctx, s)
	if err != nil || same != next {
		t.Errorf("Update with no new commits: %v, %v", same, err)
	}
	if _, err := next.Apply(5, nil); err == nil {
		t.Error("Apply accepted a non-consecutive version")
	}
	// Commits cleaned up behind a newer checkpoint: Update reloads.
	full := tableStore(t, "v1-single-part-struct-stats-only")
	old := load(t, full)
	for v := range int64(6) {
		_ = full.Delete(ctx, deltalog.CommitPath(v))
	}
	putCommit(full, 6, `{"txn":{"appId":"z","version":9}}`)
	stale := *old
	stale.Version = 3 // pretend we were behind the checkpoint
	got, err := (&stale).Update(ctx, full)
	if err != nil || got.Version != 6 {
		t.Fatalf("Update across cleanup: %v, %v", got, err)
	}
}

// A Parquet checkpoint written here (with parquet-go, Spark's column layout)
// covers what the fixtures lack: domainMetadata, txn.lastUpdated, map
// values, several row groups, and the ranged-read path that skips the add
// columns.
type cpProtocol struct {
	MinReaderVersion int32    `parquet:"minReaderVersion"`
	MinWriterVersion int32    `parquet:"minWriterVersion"`
	ReaderFeatures   []string `parquet:"readerFeatures,list,optional"`
	WriterFeatures   []string `parquet:"writerFeatures,list,optional"`
}

type cpFormat struct {
	Provider string            `parquet:"provider"`
	Options  map[string]string `parquet:"options,optional"`
}

type cpMetaData struct {
	ID               string             `parquet:"id"`
	Name             *string            `parquet:"name,optional"`
	Format           cpFormat           `parquet:"format"`
	SchemaString     string             `parquet:"schemaString"`
	PartitionColumns []string           `parquet:"partitionColumns,list"`
	CreatedTime      *int64             `parquet:"createdTime,optional"`
	Configuration    map[string]*string `parquet:"configuration,optional"`
}

type cpTxn struct {
	AppID       string `parquet:"appId"`
	Version     int64  `parquet:"version"`
	LastUpdated *int64 `parquet:"lastUpdated,optional"`
}

type cpDomain struct {
	Domain        string `parquet:"domain"`
	Configuration string `parquet:"configuration"`
	Removed       bool   `parquet:"removed"`
}

type cpAdd struct {
	Path             string            `parquet:"path"`
	PartitionValues  map[string]string `parquet:"partitionValues"`
	Size             int64             `parquet:"size"`
	ModificationTime int64             `parquet:"modificationTime"`
	DataChange       bool              `parquet:"dataChange"`
	Stats            string            `parquet:"stats,optional"`
}

type cpRow struct {
	Txn            *cpTxn      `parquet:"txn,optional"`
	Add            *cpAdd      `parquet:"add,optional"`
	MetaData       *cpMetaData `parquet:"metaData,optional"`
	Protocol       *cpProtocol `parquet:"protocol,optional"`
	DomainMetadata *cpDomain   `parquet:"domainMetadata,optional"`
}

func writeCheckpoint(t *testing.T, rows []cpRow, rowGroupRows int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[cpRow](&buf, parquet.PageBufferSize(64<<10))
	for i := 0; i < len(rows); i += rowGroupRows {
		if _, err := w.Write(rows[i:min(i+rowGroupRows, len(rows))]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type rangeCountingStore struct {
	*deltalog.MemStore
	mu          sync.Mutex
	ranges      int
	rangedBytes int64
	gets        []string
}

func (r *rangeCountingStore) GetRange(ctx context.Context, path string, off, n int64) ([]byte, error) {
	r.mu.Lock()
	r.ranges++
	r.rangedBytes += n
	r.mu.Unlock()
	return r.MemStore.GetRange(ctx, path, off, n)
}

func (r *rangeCountingStore) Get(ctx context.Context, path string) ([]byte, error) {
	r.mu.Lock()
	r.gets = append(r.gets, path)
	r.mu.Unlock()
	return r.MemStore.Get(ctx, path)
}

func TestSyntheticParquetCheckpoint(t *testing.T) {
	str := func(s string) *string { return &s }
	i64 := func(v int64) *int64 { return &v }
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"p","type":"string","nullable":true,"metadata":{}}]}`
	var rows []cpRow
	// Action rows are spread over several row groups among many add rows.
	for i := range 30000 {
		rows = append(rows, cpRow{Add: &cpAdd{Path: fmt.Sprintf("p=%d/part-%05d-%s.parquet", i%7, i, strings.Repeat("x", 40)),
			PartitionValues: map[string]string{"p": fmt.Sprint(i % 7)}, Size: int64(i), ModificationTime: int64(i), DataChange: true,
			Stats: fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d},"maxValues":{"id":%d},"nullCount":{"id":0}}`, i, i, i*3)}})
		switch i {
		case 10:
			rows = append(rows, cpRow{Protocol: &cpProtocol{MinReaderVersion: 3, MinWriterVersion: 7,
				ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors", "domainMetadata", "appendOnly"}}})
		case 12000:
			rows = append(rows, cpRow{MetaData: &cpMetaData{ID: "synthetic", Name: str("n"), Format: cpFormat{Provider: "parquet"},
				SchemaString: schema, PartitionColumns: []string{"p"}, CreatedTime: i64(7),
				Configuration: map[string]*string{"delta.appendOnly": str("true"), "nullValue": nil}}})
		case 15000:
			rows = append(rows, cpRow{Txn: &cpTxn{AppID: "app-1", Version: 41, LastUpdated: i64(1000)}},
				cpRow{Txn: &cpTxn{AppID: "app-2", Version: 7}})
		case 29999:
			rows = append(rows, cpRow{DomainMetadata: &cpDomain{Domain: "delta.clustering", Configuration: `{"clusteringColumns":[["id"]]}`}},
				cpRow{DomainMetadata: &cpDomain{Domain: "user.thing", Configuration: "c"}})
		}
	}
	data := writeCheckpoint(t, rows, 8000)
	base := deltalog.NewMemStore()
	base.Put("_delta_log/00000000000000000010.checkpoint.parquet", data)
	base.Put(deltalog.LastCheckpointPath, []byte(`{"version":10}`))
	putCommit(base, 10, `{"commitInfo":{}}`)
	putCommit(base, 11, `{"txn":{"appId":"app-2","version":8}}`)

	check := func(t *testing.T, snap *deltalog.Snapshot) {
		t.Helper()
		if snap.Version != 11 || snap.CheckpointVersion != 10 {
			t.Errorf("version %d checkpoint %d", snap.Version, snap.CheckpointVersion)
		}
		p := snap.Protocol
		if p.MinReaderVersion != 3 || !slices.Equal(p.WriterFeatures, []string{"deletionVectors", "domainMetadata", "appendOnly"}) ||
			!slices.Equal(p.ReaderFeatures, []string{"deletionVectors"}) {
			t.Errorf("protocol %+v", p)
		}
		m := snap.Metadata
		if m.ID != "synthetic" || m.Name != "n" || *m.CreatedTime != 7 || m.Format.Provider != "parquet" ||
			!slices.Equal(m.PartitionColumns, []string{"p"}) || m.Configuration["delta.appendOnly"] != "true" {
			t.Errorf("metadata %+v", m)
		}
		if v, ok := m.Configuration["nullValue"]; !ok || v != "" {
			t.Errorf("null map value: %q %v", v, ok)
		}
		if a1, a2 := snap.Txns["app-1"], snap.Txns["app-2"]; a1.Version != 41 || a1.LastUpdated == nil || *a1.LastUpdated != 1000 ||
			a2.Version != 8 || a2.LastUpdated != nil {
			t.Errorf("txns %+v", snap.Txns)
		}
		if len(snap.Domains) != 2 || snap.Domains["user.thing"].Configuration != "c" {
			t.Errorf("domains %+v", snap.Domains)
		}
		// Clustering columns are indexed for stats even when beyond the limit.
		sc, err := deltalog.NewStatsCollector(snap)
		if err != nil || sc.Column("id") == nil {
			t.Errorf("stats collector: %v", err)
		}
	}
	t.Run("whole file", func(t *testing.T) { check(t, load(t, base)) })
	t.Run("ranged", func(t *testing.T) {
		defer deltalog.SetWholeFileLimit(0)()
		rs := &rangeCountingStore{MemStore: base}
		check(t, load(t, rs))
		if slices.Contains(rs.gets, "_delta_log/00000000000000000010.checkpoint.parquet") {
			t.Error("checkpoint fetched whole despite ranged reads")
		}
		if rs.ranges == 0 || rs.rangedBytes > int64(len(data))/4 {
			t.Errorf("ranged reads: %d requests, %d of %d bytes", rs.ranges, rs.rangedBytes, len(data))
		}
		t.Logf("ranged checkpoint read: %d requests, %d of %d bytes", rs.ranges, rs.rangedBytes, len(data))
	})
}

func TestMemStore(t *testing.T) {
	s := deltalog.NewMemStore()
	if err := s.PutIfAbsent(ctx, "a/1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "a/1", []byte("y")); !errors.Is(err, deltalog.ErrAlreadyExists) {
		t.Errorf("second put: %v", err)
	}
	if d, _ := s.Get(ctx, "a/1"); string(d) != "x" {
		t.Errorf("content %q", d)
	}
	if _, err := s.Get(ctx, "a/2"); !errors.Is(err, deltalog.ErrNotFound) {
		t.Errorf("missing get: %v", err)
	}
	s.Put("a/2", nil)
	s.Put("b/1", nil)
	files, _ := s.List(ctx, "a/", "a/1")
	if len(files) != 1 || files[0].Path != "a/2" {
		t.Errorf("list = %v", files)
	}
	if err := s.Delete(ctx, "nope"); err != nil {
		t.Errorf("delete missing: %v", err)
	}
	if deltalog.IsTransient(errors.New("x")) || !deltalog.IsTransient(fmt.Errorf("w: %w", deltalog.ErrTransient)) ||
		!deltalog.IsTransient(transientErr{}) || deltalog.IsTransient(nil) {
		t.Error("IsTransient misclassifies")
	}
}

type transientErr struct{}

func (transientErr) Error() string   { return "slow down" }
func (transientErr) Transient() bool { return true }
