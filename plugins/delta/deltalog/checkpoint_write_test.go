package deltalog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// clock is a fixed time for retention decisions.
var clock = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func clockNow() time.Time { return clock }

// richTable is a partitioned table with everything a checkpoint carries:
// txns (one expired by retention), live and removed domains, removes (one
// expired), a deletion vector, tags, row-tracking fields and a null
// partition value.
func richTable(t *testing.T, conf string) *deltalog.MemStore {
	t.Helper()
	s := deltalog.NewMemStore()
	hour := int64(3600 * 1000)
	now := clock.UnixMilli()
	putCommit(s, 0, `{"commitInfo":{"operation":"CREATE TABLE"}}`, protocolLine, metaDataLine(conf))
	putCommit(s, 1, addLine("p=a/1.parquet", "a", 1, `{"numRecords":1,"minValues":{"id":1},"maxValues":{"id":1},"nullCount":{"id":0}}`),
		addLine("p=b/2.parquet", "b", 2, ""), addLine("p=__HIVE_DEFAULT_PARTITION__/3.parquet", "", 3, ""),
		`{"txn":{"appId":"fresh","version":10,"lastUpdated":`+itoa64(now-hour)+`}}`,
		`{"txn":{"appId":"stale","version":3,"lastUpdated":`+itoa64(now-100*24*hour)+`}}`,
		`{"txn":{"appId":"no-timestamp","version":4}}`,
		`{"domainMetadata":{"domain":"keep","configuration":"{\"a\":\"b\"}","removed":false}}`,
		`{"domainMetadata":{"domain":"gone","configuration":"{}","removed":false}}`)
	putCommit(s, 2, removeLine("p=a/1.parquet", now-hour), removeLine("p=a/old.parquet", now-30*24*hour),
		`{"add":{"path":"p=a/1.parquet","partitionValues":{"p":"a"},"size":10,"modificationTime":5,"dataChange":false,`+
			`"stats":"{\"numRecords\":4}","tags":{"INSERTION_TIME":"1","empty":""},"baseRowId":7,"defaultRowCommitVersion":2,"clusteringProvider":"liquid",`+
			`"deletionVector":{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L","sizeInBytes":40,"cardinality":6,"maxRowIndex":9}}}`,
		`{"domainMetadata":{"domain":"gone","configuration":"","removed":true}}`,
		`{"txn":{"appId":"fresh","version":11,"lastUpdated":`+itoa64(now-hour)+`}}`)
	return s
}

func itoa64(v int64) string { b, _ := json.Marshal(v); return string(b) }

// dropCommitsBefore deletes the commits below v, so a load must use the
// checkpoint at v.
func dropCommitsBefore(s *deltalog.MemStore, v int64) {
	for i := int64(0); i < v; i++ {
		_ = s.Delete(ctx, deltalog.CommitPath(i))
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	s := richTable(t, `{"delta.setTransactionRetentionDuration":"interval 30 days"}`)
	opts := &deltalog.LoadOptions{Now: clockNow}
	st, err := deltalog.LoadState(ctx, s, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := deltalog.WriteCheckpoint(ctx, s, st, &deltalog.CheckpointOptions{Now: clockNow})
	if err != nil {
		t.Fatal(err)
	}
	// protocol, metaData, 2 txns, 1 domain, 3 adds, 1 unexpired remove
	if res.Version != 2 || res.Existed || !res.LastCheckpointWritten || res.Actions != 9 || res.Adds != 3 {
		t.Fatalf("result %+v", res)
	}
	dropCommitsBefore(s, 2)

	back, err := deltalog.LoadState(ctx, s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if back.CheckpointVersion != 2 || back.Version != 2 {
		t.Fatalf("loaded from checkpoint %d at %d", back.CheckpointVersion, back.Version)
	}
	if got, want := fileSummary(back), fileSummary(st); !reflect.DeepEqual(got, want) {
		t.Fatalf("files:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := tombSummary(back); len(got) != 1 || !strings.HasPrefix(got[0], "p=a/1.parquet ") {
		t.Fatalf("tombstones %v (the month-old one expired)", got)
	}
	wantTxns := map[string]int64{"fresh": 11, "no-timestamp": 4}
	for _, s := range []map[string]deltalog.Txn{back.Txns(), st.Txns()} {
		got := map[string]int64{}
		for id, tx := range s {
			got[id] = tx.Version
		}
		if !reflect.DeepEqual(got, wantTxns) {
			t.Fatalf("txns %v, want %v", got, wantTxns)
		}
	}
	if !reflect.DeepEqual(back.Domains(), st.Domains()) || len(back.Domains()) != 1 {
		t.Fatalf("domains %v", back.Domains())
	}
	if !sameDefinition(back, st) {
		t.Fatalf("protocol/metadata\n%+v\n%+v", back.Metadata, st.Metadata)
	}

	// The appender's loader reads the same checkpoint.
	snap, err := deltalog.Load(ctx, s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if snap.CheckpointVersion != 2 || snap.Version != 2 || len(snap.Txns) != 2 || snap.Txns["fresh"].Version != 11 ||
		snap.Metadata.SchemaString != st.Metadata.SchemaString || snap.Protocol.MinWriterVersion != st.Protocol.MinWriterVersion || len(snap.Domains) != 1 {
		t.Fatalf("snapshot %+v", snap)
	}

	// _last_checkpoint names it, with a valid checksum.
	raw, _ := s.Get(ctx, deltalog.LastCheckpointPath)
	var lc deltalog.LastCheckpoint
	if err := json.Unmarshal(raw, &lc); err != nil {
		t.Fatal(err)
	}
	sum, err := deltalog.LastCheckpointChecksum(raw)
	if err != nil || lc.Version != 2 || lc.Size != 9 || lc.NumOfAddFiles != 3 || lc.SizeInBytes != res.SizeInBytes || lc.Checksum != sum {
		t.Fatalf("_last_checkpoint %s (checksum %s, %v)", raw, sum, err)
	}

	// The same state always encodes to the same bytes.
	a, _, _, err := deltalog.EncodeCheckpoint(ctx, st, &deltalog.CheckpointOptions{Now: clockNow})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Get(ctx, deltalog.CheckpointPath(2))
	if !bytes.Equal(a, b) {
		t.Fatal("encoding is not deterministic")
	}
}

// A checkpoint that already exists (another writer's) is kept as it is.
func TestCheckpointExisting(t *testing.T) {
	s := richTable(t, "")
	st := loadState(t, s)
	s.Put(deltalog.CheckpointPath(2), []byte("theirs"))
	res, err := deltalog.WriteCheckpoint(ctx, s, st, &deltalog.CheckpointOptions{Now: clockNow})
	// protocol, metaData, 3 txns, 1 domain, 3 adds, 1 unexpired remove
	if err != nil || !res.Existed || res.SizeInBytes != 6 || res.Actions != 10 || res.Adds != 3 {
		t.Fatalf("%+v %v", res, err)
	}
	if data, _ := s.Get(ctx, deltalog.CheckpointPath(2)); string(data) != "theirs" {
		t.Fatal("existing checkpoint replaced")
	}
	// Racing writers: exactly one writes, the other finds it.
	s2 := richTable(t, "")
	st2 := loadState(t, s2)
	errs := make(chan error, 2)
	existed := make(chan bool, 2)
	for range 2 {
		go func() {
			r, err := deltalog.WriteCheckpoint(ctx, s2, st2, nil)
			errs <- err
			existed <- r != nil && r.Existed
		}()
	}
	n := 0
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if <-existed {
			n++
		}
	}
	if n > 1 {
		t.Fatalf("%d writers found the checkpoint existing", n)
	}
	dropCommitsBefore(s2, 2)
	if back := loadState(t, s2); back.CheckpointVersion != 2 || back.NumFiles() != 3 {
		t.Fatalf("racing checkpoints: %d files from %d", back.NumFiles(), back.CheckpointVersion)
	}
}

// putterStore adds an unconditional Put; refuse makes it behave like the
// local backend's O_EXCL Put.
type putterStore struct {
	*deltalog.MemStore
	refuse bool
	puts   int
}

func (p *putterStore) Put(c context.Context, path string, data []byte) error {
	p.puts++
	if _, err := p.MemStore.Get(c, path); err == nil && p.refuse {
		return deltalog.ErrAlreadyExists
	}
	p.MemStore.Put(path, data)
	return nil
}

func TestLastCheckpointNeverBackwards(t *testing.T) {
	for _, store := range []deltalog.Store{deltalog.NewMemStore(), &putterStore{MemStore: deltalog.NewMemStore()},
		&putterStore{MemStore: deltalog.NewMemStore(), refuse: true}} {
		version := func() int64 {
			raw, err := store.Get(ctx, deltalog.LastCheckpointPath)
			if err != nil {
				t.Fatal(err)
			}
			var lc deltalog.LastCheckpoint
			if err := json.Unmarshal(raw, &lc); err != nil {
				t.Fatal(err)
			}
			return lc.Version
		}
		for _, step := range []struct {
			v     int64
			wrote bool
			after int64
		}{{20, true, 20}, {10, false, 20}, {20, false, 20}, {30, true, 30}, {29, false, 30}} {
			wrote, err := deltalog.WriteLastCheckpoint(ctx, store, deltalog.LastCheckpoint{Version: step.v, Size: 3})
			if err != nil || wrote != step.wrote || version() != step.after {
				t.Fatalf("%T: write %d: wrote %v %v, now %d", store, step.v, wrote, err, version())
			}
		}
		// An unparsable hint is replaced.
		_ = store.Delete(ctx, deltalog.LastCheckpointPath)
		_ = store.PutIfAbsent(ctx, deltalog.LastCheckpointPath, []byte("{garbage"))
		if wrote, err := deltalog.WriteLastCheckpoint(ctx, store, deltalog.LastCheckpoint{Version: 5}); !wrote || err != nil || version() != 5 {
			t.Fatalf("%T: over garbage: %v %v", store, wrote, err)
		}
	}
}

func TestLastCheckpointChecksum(t *testing.T) {
	// PROTOCOL.md "JSON checksum" example.
	got, err := deltalog.LastCheckpointChecksum([]byte(`{"k0":"'v 0'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}`))
	if err != nil || got != "6a92d155a59bf2eecbd4b4ec7fd1f875" {
		t.Fatalf("checksum %s %v", got, err)
	}
}

func TestCheckpointSupported(t *testing.T) {
	for _, c := range []struct {
		p  deltalog.Protocol
		ok bool
	}{
		{deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, true},
		{rwFeatures([]string{"deletionVectors", "v2Checkpoint"}, "deletionVectors", "v2Checkpoint", "rowTracking", "domainMetadata"), true},
		{features("checkpointProtection", "inCommitTimestamp"), true},
		{features("someFutureFeature"), false},
		{rwFeatures([]string{"catalogManaged"}, "catalogManaged"), false},
		{deltalog.Protocol{MinReaderVersion: 4, MinWriterVersion: 7}, false},
	} {
		err := deltalog.CheckpointSupported(c.p)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, deltalog.ErrCheckpointNotSupported)) {
			t.Errorf("%+v: %v", c.p, err)
		}
	}
	s := deltalog.NewMemStore()
	putCommit(s, 0, `{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["someFutureFeature"]}}`, metaDataLine(""))
	if _, err := deltalog.WriteCheckpoint(ctx, s, loadState(t, s), nil); !errors.Is(err, deltalog.ErrCheckpointNotSupported) {
		t.Fatalf("unknown feature: %v", err)
	}
}

const typedSchema = `{"type":"struct","fields":[` +
	`{"name":"l","type":"long","nullable":true,"metadata":{}},{"name":"i","type":"integer","nullable":true,"metadata":{}},` +
	`{"name":"sh","type":"short","nullable":true,"metadata":{}},{"name":"by","type":"byte","nullable":true,"metadata":{}},` +
	`{"name":"d","type":"double","nullable":true,"metadata":{}},{"name":"f","type":"float","nullable":true,"metadata":{}},` +
	`{"name":"dt","type":"date","nullable":true,"metadata":{}},{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},` +
	`{"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}},{"name":"s","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"dec","type":"decimal(5,2)","nullable":true,"metadata":{}},{"name":"big","type":"decimal(20,3)","nullable":true,"metadata":{}},` +
	`{"name":"st","type":{"type":"struct","fields":[{"name":"n","type":"long","nullable":true,"metadata":{}},{"name":"b","type":"boolean","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},` +
	`{"name":"bin","type":"binary","nullable":true,"metadata":{}},` +
	`{"name":"arr","type":{"type":"array","elementType":"long","containsNull":true},"nullable":true,"metadata":{}},` +
	`{"name":"p","type":"string","nullable":true,"metadata":{}}]}`

// typedStats is stats JSON as the sink (and Spark) write it for typedSchema.
const typedStats = `{"numRecords":3,` +
	`"minValues":{"l":-5,"i":-2147483648,"sh":-3,"by":-4,"d":-1.5,"f":0.25,"dt":"1969-12-31","ts":"2024-02-29T23:59:59.999Z","ntz":"2024-01-02T03:04:05.123","s":"abc","dec":-123.45,"big":-12345678901234567.891,"st":{"n":1}},` +
	`"maxValues":{"l":9007199254740993,"i":7,"sh":3,"by":4,"d":1e+300,"f":2.5,"dt":"2024-02-29","ts":"2024-03-01T00:00:00.000Z","ntz":"2024-01-02T03:04:05.999","s":"xyz\u007f","dec":999.99,"big":12345678901234567.891,"st":{"n":2}},` +
	`"nullCount":{"l":0,"i":1,"sh":0,"by":0,"d":0,"f":0,"dt":0,"ts":1,"ntz":0,"s":2,"dec":0,"big":0,"st":{"n":0,"b":3},"bin":3,"arr":1}}`

func typedTable(t *testing.T, conf map[string]string, protocol string) *deltalog.MemStore {
	t.Helper()
	s := deltalog.NewMemStore()
	md, _ := json.Marshal(map[string]any{"metaData": map[string]any{"id": "typed", "format": map[string]any{"provider": "parquet", "options": map[string]string{}},
		"schemaString": typedSchema, "partitionColumns": []string{"p"}, "configuration": conf, "createdTime": 1}})
	putCommit(s, 0, protocol, string(md))
	add, _ := json.Marshal(map[string]any{"add": map[string]any{"path": "p=x/f.parquet", "partitionValues": map[string]any{"p": "x"},
		"size": 10, "modificationTime": 2, "dataChange": true, "stats": typedStats}})
	putCommit(s, 1, string(add), addLine("p=x/nostats.parquet", "x", 1, ""))
	return s
}

// With delta.checkpoint.writeStatsAsStruct the checkpoint carries typed
// stats_parsed (and no JSON stats when writeStatsAsJson is false); reading
// it back gives the same stats.
func TestCheckpointStatsAsStruct(t *testing.T) {
	for _, conf := range []map[string]string{
		{"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"},
		{"delta.checkpoint.writeStatsAsStruct": "true"},
		{},
	} {
		s := typedTable(t, conf, protocolLine)
		st := loadState(t, s)
		if _, err := deltalog.WriteCheckpoint(ctx, s, st, nil); err != nil {
			t.Fatal(err)
		}
		data, _ := s.Get(ctx, deltalog.CheckpointPath(1))
		pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		add := pf.Root().Column("add")
		hasJSON, hasStruct := add.Column("stats") != nil, add.Column("stats_parsed") != nil
		if hasJSON != (conf["delta.checkpoint.writeStatsAsJson"] != "false") || hasStruct != (conf["delta.checkpoint.writeStatsAsStruct"] == "true") {
			t.Fatalf("%v: stats column %v, stats_parsed %v", conf, hasJSON, hasStruct)
		}
		if hasStruct {
			sp := add.Column("stats_parsed")
			var names []string
			for _, c := range sp.Column("minValues").Columns() {
				names = append(names, c.Name())
			}
			// bin and arr have no bounds; st.b (boolean) none either.
			if strings.Join(names, ",") != "l,i,sh,by,d,f,dt,ts,ntz,s,dec,big,st" || sp.Column("nullCount").Column("arr") == nil {
				t.Fatalf("stats_parsed minValues fields %v", names)
			}
		}
		dropCommitsBefore(s, 1)
		back := loadState(t, s)
		a, ok := back.File("p=x/f.parquet")
		if !ok || normJSON(a.Stats) != normJSON(typedStats) {
			t.Fatalf("%v: stats back\n%s\nwant\n%s", conf, a.Stats, typedStats)
		}
		if b, _ := back.File("p=x/nostats.parquet"); b == nil || b.Stats != "" {
			t.Fatalf("file without stats: %+v", b)
		}
	}
}

// A v2Checkpoint table gets a UUID-named JSON V2 checkpoint: one
// checkpointMetadata action naming the version, the non-file actions, and
// its adds and removes in sidecars only.
func TestCheckpointV2Table(t *testing.T) {
	s := deltalog.NewMemStore()
	putCommit(s, 0, `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["v2Checkpoint"],"writerFeatures":["v2Checkpoint"]}}`,
		metaDataLine(`{"delta.checkpointPolicy":"v2"}`))
	putCommit(s, 1, addLine("p=a/1.parquet", "a", 1, ""), addLine("p=a/2.parquet", "a", 2, ""))
	putCommit(s, 2, removeLine("p=a/2.parquet", time.Now().UnixMilli()), `{"txn":{"appId":"app","version":7}}`)
	st := loadState(t, s)
	res, err := deltalog.WriteCheckpoint(ctx, s, st, nil)
	if err != nil || res.Actions != 8 || res.Adds != 1 { // 6 in the checkpoint, 1 add and 1 remove in sidecars
		t.Fatalf("%+v %v", res, err)
	}
	if !strings.HasPrefix(res.Path, "_delta_log/00000000000000000002.checkpoint.") || !strings.HasSuffix(res.Path, ".json") {
		t.Fatalf("checkpoint %s", res.Path)
	}
	data, _ := s.Get(ctx, res.Path)
	actions, err := deltalog.ParseActions(data)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, a := range actions {
		kinds = append(kinds, a.Kind())
		if m, ok := a.(*deltalog.CheckpointMetadata); ok && m.Version != 2 {
			t.Fatalf("checkpointMetadata %+v", m)
		}
	}
	if want := []string{"checkpointMetadata", "protocol", "metaData", "txn", "sidecar", "sidecar"}; !slices.Equal(kinds, want) {
		t.Fatalf("checkpoint actions %v, want %v", kinds, want)
	}
	dropCommitsBefore(s, 2)
	if snap := load(t, s); snap.CheckpointVersion != 2 {
		t.Fatalf("snapshot from checkpoint %d", snap.CheckpointVersion)
	}
	back := loadState(t, s)
	if back.NumFiles() != 1 || back.NumTombstones() != 1 {
		t.Fatalf("%d files, %d tombstones", back.NumFiles(), back.NumTombstones())
	}
	if v, _ := back.TxnVersion("app"); v != 7 {
		t.Fatalf("txn %d", v)
	}

	// delta.checkpointPolicy=classic (what DROP FEATURE sets first): a
	// classic checkpoint, which the protocol allows with the feature.
	putCommit(s, 3, metaDataLine(`{"delta.checkpointPolicy":"classic"}`))
	res, err = deltalog.WriteCheckpoint(ctx, s, loadState(t, s), nil)
	if err != nil || res.Path != deltalog.CheckpointPath(3) {
		t.Fatalf("%+v %v", res, err)
	}
}

// Every fixture table's state survives our checkpoint.
func TestCheckpointFixturesRoundTrip(t *testing.T) {
	for _, tw := range conformanceTables {
		if strings.HasPrefix(tw.name, "300k") {
			continue
		}
		t.Run(tw.name, func(t *testing.T) {
			st := loadState(t, newDirStore(tableDir(t, tw.name)))
			data, _, adds, err := deltalog.EncodeCheckpoint(ctx, st, nil)
			if err != nil {
				t.Fatal(err)
			}
			if adds != int64(st.NumFiles()) {
				t.Fatalf("%d adds for %d files", adds, st.NumFiles())
			}
			s := deltalog.NewMemStore()
			s.Put(deltalog.CheckpointPath(st.Version), data)
			back := loadState(t, s)
			if got, want := fileSummary(back), fileSummary(st); !reflect.DeepEqual(got, want) {
				t.Fatalf("files:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !sameDefinition(back, st) || !reflect.DeepEqual(back.Domains(), st.Domains()) {
				t.Fatalf("protocol, metadata or domains differ:\n%+v %+v %v\n%+v %+v %v", back.Protocol, back.Metadata, back.Domains(), st.Protocol, st.Metadata, st.Domains())
			}
		})
	}
}

// sameDefinition compares protocol and metadata by content: an empty map
// or list reads back from a checkpoint as nil.
func sameDefinition(a, b *deltalog.State) bool {
	norm := func(s *deltalog.State) (deltalog.Protocol, deltalog.Metadata) {
		p, m := s.Protocol, s.Metadata
		if len(p.ReaderFeatures) == 0 {
			p.ReaderFeatures = nil
		}
		if len(p.WriterFeatures) == 0 {
			p.WriterFeatures = nil
		}
		if len(m.Format.Options) == 0 {
			m.Format.Options = nil
		}
		if len(m.Configuration) == 0 {
			m.Configuration = nil
		}
		if len(m.PartitionColumns) == 0 {
			m.PartitionColumns = nil
		}
		return p, m
	}
	pa, ma := norm(a)
	pb, mb := norm(b)
	return reflect.DeepEqual(pa, pb) && reflect.DeepEqual(ma, mb)
}

// statStore is a MemStore with a Stat (as the local backend has), and
// records the prefixes it is asked to list.
type statStore struct {
	*deltalog.MemStore
	stats  int
	listed []string
}

func (s *statStore) Stat(c context.Context, path string) (deltalog.FileInfo, bool, error) {
	s.stats++
	files, err := s.MemStore.List(c, path, "")
	for _, f := range files {
		if f.Path == path {
			return f, true, err
		}
	}
	return deltalog.FileInfo{}, false, err
}

func (s *statStore) List(c context.Context, prefix, startAfter string) ([]deltalog.FileInfo, error) {
	s.listed = append(s.listed, prefix)
	return s.MemStore.List(c, prefix, startAfter)
}

// A store with Stat is asked with it whether the checkpoint and
// _last_checkpoint exist, not with a listing (on a local table that reads
// every entry of _delta_log, and the log grows with the versions).
func TestCheckpointStatsInsteadOfListing(t *testing.T) {
	s := &statStore{MemStore: richTable(t, "")}
	st := loadState(t, s.MemStore)
	res, err := deltalog.WriteCheckpoint(ctx, s, st, &deltalog.CheckpointOptions{Now: clockNow})
	if err != nil || res.Existed || !res.LastCheckpointWritten {
		t.Fatalf("%+v %v", res, err)
	}
	if s.stats != 2 || len(s.listed) != 0 {
		t.Errorf("%d stats, listed %q; want 2 stats (the checkpoint, _last_checkpoint) and no listing", s.stats, s.listed)
	}
	if back := loadState(t, s.MemStore); back.CheckpointVersion != 2 || back.NumFiles() != 3 {
		t.Fatalf("read back: %d files from checkpoint %d", back.NumFiles(), back.CheckpointVersion)
	}

	// Another writer's checkpoint is found with Stat, and left alone.
	s = &statStore{MemStore: richTable(t, "")}
	st = loadState(t, s.MemStore)
	s.Put(deltalog.CheckpointPath(2), []byte("theirs"))
	res, err = deltalog.WriteCheckpoint(ctx, s, st, &deltalog.CheckpointOptions{Now: clockNow})
	if err != nil || !res.Existed || res.SizeInBytes != 6 || res.Actions != 10 || res.Adds != 3 || len(s.listed) != 0 {
		t.Fatalf("%+v %v, listed %q", res, err, s.listed)
	}
	if data, _ := s.Get(ctx, deltalog.CheckpointPath(2)); string(data) != "theirs" {
		t.Fatal("existing checkpoint replaced")
	}
}

// V2CheckpointUpgrade moves a table to table features, keeping what its
// protocol supported, and adds v2Checkpoint and the policy: the table then
// gets V2 checkpoints.
func TestV2CheckpointUpgrade(t *testing.T) {
	for name, tc := range map[string]struct {
		protocol       string
		reader, writer []string
	}{
		"legacy": {`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`,
			[]string{"v2Checkpoint"}, []string{"appendOnly", "invariants", "v2Checkpoint"}},
		"features": {`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors","appendOnly"]}}`,
			[]string{"deletionVectors", "v2Checkpoint"}, []string{"deletionVectors", "appendOnly", "v2Checkpoint"}},
	} {
		t.Run(name, func(t *testing.T) {
			s := deltalog.NewMemStore()
			putCommit(s, 0, tc.protocol, metaDataLine(`{"delta.checkpointInterval":"5"}`))
			st := loadState(t, s)
			data, err := deltalog.EncodeActions(deltalog.V2CheckpointUpgrade(st))
			if err != nil {
				t.Fatal(err)
			}
			putCommit(s, 1, strings.TrimSuffix(string(data), "\n"))
			putCommit(s, 2, addLine("p=a/1.parquet", "a", 1, ""))
			st = loadState(t, s)
			p := st.Protocol
			if p.MinReaderVersion != 3 || p.MinWriterVersion != 7 || !slices.Equal(p.ReaderFeatures, tc.reader) || !slices.Equal(p.WriterFeatures, tc.writer) {
				t.Fatalf("protocol %+v", p)
			}
			if c := st.Metadata.Configuration; c["delta.checkpointPolicy"] != "v2" || c["delta.checkpointInterval"] != "5" {
				t.Fatalf("configuration %v", c)
			}
			res, err := deltalog.WriteCheckpoint(ctx, s, st, nil)
			if err != nil || !strings.HasSuffix(res.Path, ".json") {
				t.Fatalf("checkpoint %+v %v", res, err)
			}
		})
	}
}
