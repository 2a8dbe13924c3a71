package deltatest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// The group commit tests: batches of several topic partitions delivered to
// one instance at once (sinkdriver.ConsumeConcurrently) and written to one table.
// How many commits a group takes depends on timing (what queued while the
// previous commit ran); what each batch's answer is, what the table holds
// and what each txn action says does not.

// partitionBatches is a batch per partition 0..parts-1 of topic with
// offsets first..first+n-1 and ids base+p*1000+offset.
func partitionBatches(topic string, base, parts, first, n int) []sinkdriver.Batch {
	var out []sinkdriver.Batch
	for p := range parts {
		var payloads []string
		for o := first; o < first+n; o++ {
			payloads = append(payloads, fmt.Sprintf(`{"id":%d,"body":"p%d o%d"}`, base+p*1000+o, p, o))
		}
		b := JSONBatch(topic, uint64(first), payloads...)
		b.Partition = uint32(p)
		out = append(out, b)
	}
	return out
}

// partitionIDs is what WantIDs expects of partitionBatches(_, base, parts,
// from, ...) up to offset to.
func partitionIDs(base, parts, from, to int) string {
	var s []string
	for p := range parts {
		s = append(s, Span(base+p*1000+from, base+p*1000+to))
	}
	return strings.Join(s, ",")
}

// wantOK fails unless every answer is OK.
func wantOK(t *testing.T, errs []error) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
}

// appID is the application transaction of a topic partition of the sink
// with key.
func appID(key, topic string, partition int) string {
	return fmt.Sprintf("picomq-delta-sink/%s/%s/%d", url.PathEscape(key), url.PathEscape(topic), partition)
}

// WantTxns checks, with delta-rs, the version the table records for each
// application transaction (-1: none).
func (s *Store) WantTxns(uri string, want map[string]int) {
	s.t.Helper()
	var apps []string
	for a := range want {
		apps = append(apps, a)
	}
	out := s.Py(`
dt = DeltaTable(uri, storage_options=opts)
dump({a: dt.transaction_version(a) for a in sys.argv[2:]})
`, append([]string{uri}, apps...)...)
	var got map[string]*int
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		s.t.Fatalf("%v: %s", err, out)
	}
	for a, v := range want {
		g := -1
		if got[a] != nil {
			g = *got[a]
		}
		if g != v {
			s.t.Errorf("delta-rs: txn %s at %d, want %d", a, g, v)
		}
	}
}

// LogTxns returns, for a file:// table, the txn actions of each version
// from 1 on as "appId@version", read from the log files themselves.
func LogTxns(t *testing.T, uri string) [][]string {
	t.Helper()
	dir := filepath.Join(strings.TrimPrefix(uri, "file://"), "_delta_log")
	var out [][]string
	for v := 1; ; v++ {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%020d.json", v)))
		if os.IsNotExist(err) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var txns []string
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var a struct {
				Txn *struct {
					AppID   string `json:"appId"`
					Version int64  `json:"version"`
				} `json:"txn"`
			}
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatalf("version %d: %v", v, err)
			}
			if a.Txn != nil {
				txns = append(txns, fmt.Sprintf("%s@%d", a.Txn.AppID, a.Txn.Version))
			}
		}
		sort.Strings(txns)
		out = append(out, txns)
	}
}

// GroupCommitWritesPartitionsOnce: batches of eight partitions delivered at
// once are written in fewer commits than batches (those that queued while a
// commit ran go in the next one together); every batch is answered OK,
// delta-rs reads every record once, and each partition's txn action holds
// its last offset, in exactly one version.
func GroupCommitWritesPartitionsOnce(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	inst := Open(t, d.Start(t, s.Secrets...), "group", s.Config(uri))
	const parts, per = 8, 20
	wantOK(t, sinkdriver.ConsumeConcurrently(inst, partitionBatches("t", 0, parts, 0, per)))
	s.WantIDs(uri, partitionIDs(0, parts, 0, per-1))
	m := metrics(t, inst)
	commits := int(m["sink.commits"])
	if m["sink.commit_batches"] != parts || commits >= parts || m["sink.grouped_commits"] < 1 {
		t.Errorf("commits %d, commit_batches %v, grouped_commits %v: want %d batches in fewer commits",
			commits, m["sink.commit_batches"], m["sink.grouped_commits"], parts)
	}
	if m["batches"] != parts || m["records"] != parts*per {
		t.Errorf("batches %v, records %v; want %d and %d", m["batches"], m["records"], parts, parts*per)
	}
	if n := len(s.History(uri)); n != 1+commits {
		t.Errorf("%d versions, want %d: one per commit after the table's first", n, 1+commits)
	}
	want := map[string]int{}
	for p := range parts {
		want[appID("group", "t", p)] = per - 1
	}
	s.WantTxns(uri, want)
	if s.Backend != File {
		return
	}
	seen := map[string]int{}
	for _, txns := range LogTxns(t, uri) {
		for _, x := range txns {
			seen[x]++
		}
	}
	for a, v := range want {
		if n := seen[fmt.Sprintf("%s@%d", a, v)]; n != 1 {
			t.Errorf("txn %s@%d in %d versions, want 1", a, v, n)
		}
	}
	if len(seen) != parts {
		t.Errorf("txn actions %v, want one per partition", seen)
	}
}

// GroupReplayIsSkipped: a group delivered again writes nothing and counts
// every record skipped; a group half replayed writes only the new halves.
func GroupReplayIsSkipped(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	inst := Open(t, d.Start(t, s.Secrets...), "replay", s.Config(uri))
	const parts, per = 6, 10
	wantOK(t, sinkdriver.ConsumeConcurrently(inst, partitionBatches("t", 0, parts, 0, per)))
	versions := len(s.History(uri))
	replay := partitionBatches("t", 0, parts, 0, per)
	for i := range replay {
		replay[i].Attempt = 2
	}
	wantOK(t, sinkdriver.ConsumeConcurrently(inst, replay))
	if n := len(s.History(uri)); n != versions {
		t.Errorf("%d versions after the replay, want %d: a replayed group writes nothing", n, versions)
	}
	m := metrics(t, inst)
	if m["records"] != parts*per || m["skipped"] != parts*per || m["sink.records_skipped"] != parts*per || m["sink.records_written"] != parts*per {
		t.Errorf("after the replay records %v, skipped %v, sink records_skipped %v, records_written %v; want %d each",
			m["records"], m["skipped"], m["sink.records_skipped"], m["sink.records_written"], parts*per)
	}
	// Offsets 5..14: five replayed, five new per partition.
	half := partitionBatches("t", 0, parts, per/2, per)
	for i := range half {
		half[i].Attempt = 2
	}
	wantOK(t, sinkdriver.ConsumeConcurrently(inst, half))
	s.WantIDs(uri, partitionIDs(0, parts, 0, per+per/2-1))
	m = metrics(t, inst)
	if m["records"] != parts*(per+per/2) || m["skipped"] != parts*(per+per/2) {
		t.Errorf("after the half replay records %v, skipped %v; want %d each", m["records"], m["skipped"], parts*(per+per/2))
	}
	want := map[string]int{}
	for p := range parts {
		want[appID("replay", "t", p)] = per + per/2 - 1
	}
	s.WantTxns(uri, want)
}

// GroupMemberThatCannotBeWrittenFailsAlone: a batch with a value that
// cannot fit its column (errors_tolerance none) fails FATAL, naming its
// record; the batches delivered with it land.
func GroupMemberThatCannotBeWrittenFailsAlone(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	inst := Open(t, d.Start(t, s.Secrets...), "fatal", s.Config(uri))
	const parts, per, bad = 6, 10, 3
	batches := partitionBatches("t", 0, parts, 0, per)
	batches[bad].Records[4].Payload = []byte(`{"id":"four"}`)
	errs := sinkdriver.ConsumeConcurrently(inst, batches)
	for i, err := range errs {
		if i == bad {
			WantStatus(t, err, hostclient.StatusFatal, "Invalid record value", "offset 4")
		} else if err != nil {
			t.Errorf("batch %d: %v", i, err)
		}
	}
	var ids []string
	want := map[string]int{}
	for p := range parts {
		if p != bad {
			ids = append(ids, Span(p*1000, p*1000+per-1))
			want[appID("fatal", "t", p)] = per - 1
		} else {
			want[appID("fatal", "t", p)] = -1
		}
	}
	s.WantIDs(uri, strings.Join(ids, ","))
	s.WantTxns(uri, want)
}

// GroupOfTombstonesAndRecords: with skip_empty_payloads, batches of only
// tombstones delivered with batches of records are answered OK and write
// nothing of their own; the records land once.
func GroupOfTombstonesAndRecords(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	inst := Open(t, d.Start(t, s.Secrets...), "tomb", s.Config(uri, "skip_empty_payloads", true))
	const parts, per = 8, 10
	batches := partitionBatches("t", 0, parts, 0, per)
	var ids []string
	for p := range batches {
		if p%2 == 1 {
			for i := range batches[p].Records {
				batches[p].Records[i].Payload = nil
			}
		} else {
			ids = append(ids, Span(p*1000, p*1000+per-1))
		}
	}
	wantOK(t, sinkdriver.ConsumeConcurrently(inst, batches))
	s.WantIDs(uri, strings.Join(ids, ","))
	if m := metrics(t, inst); m["sink.empty_payloads_skipped"] != parts/2*per || m["sink.records_written"] != parts/2*per {
		t.Errorf("empty_payloads_skipped %v, records_written %v; want %d each", m["sink.empty_payloads_skipped"], m["sink.records_written"], parts/2*per)
	}
	// Delivered again, nothing is written twice.
	for i := range batches {
		batches[i].Attempt = 2
	}
	wantOK(t, sinkdriver.ConsumeConcurrently(inst, batches))
	s.WantIDs(uri, strings.Join(ids, ","))
}

// GroupOfTwoTopicsInOneTable: two topics whose table_uri is the same table
// are written together; each topic partition keeps its own txn.
func GroupOfTwoTopicsInOneTable(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	inst := Open(t, d.Start(t, s.Secrets...), "topics", s.Config(uri))
	const parts, per = 4, 10
	a, b := partitionBatches("a", 0, parts, 0, per), partitionBatches("b", 100000, parts, 0, per)
	var batches []sinkdriver.Batch
	for i := range a {
		batches = append(batches, a[i], b[i])
	}
	wantOK(t, sinkdriver.ConsumeConcurrently(inst, batches))
	s.WantIDs(uri, partitionIDs(0, parts, 0, per-1)+","+partitionIDs(100000, parts, 0, per-1))
	want := map[string]int{}
	for p := range parts {
		want[appID("topics", "a", p)] = per - 1
		want[appID("topics", "b", p)] = per - 1
	}
	s.WantTxns(uri, want)
	if m := metrics(t, inst); m["sink.commit_batches"] != 2*parts || m["sink.commits"] >= 2*parts {
		t.Errorf("commits %v for %v batches: want fewer", m["sink.commits"], m["sink.commit_batches"])
	}
}

// GroupsOfTwoWritersLoseNothing: two sinks (two keys) write groups to one
// table at the same time: groups that lose a race are put again or
// re-based, and every record lands once.
func GroupsOfTwoWritersLoseNothing(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateEvents, "events")
	rt := d.Start(t, s.Secrets...)
	const writers, rounds, parts, per = 2, 3, 4, 5
	var wg sync.WaitGroup
	var ids []string
	for w := range writers {
		inst := Open(t, rt, fmt.Sprintf("w%d", w), s.Config(uri))
		base := w * 100000
		ids = append(ids, partitionIDs(base, parts, 0, rounds*per-1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				for i, err := range sinkdriver.ConsumeConcurrently(inst, partitionBatches(fmt.Sprintf("t%d", w), base, parts, r*per, per)) {
					if err != nil {
						t.Errorf("writer %d round %d batch %d: %v", w, r, i, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	s.WantIDs(uri, strings.Join(ids, ","))
}
