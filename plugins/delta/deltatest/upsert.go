package deltatest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// write_mode = "upsert": a model of the table — the changelog replayed in
// memory — against what delta-rs and DuckDB read back (TableLog).

// UpsertSchema is the table_schema of the upsert tests: a wide composite
// key (k string, n long), a partition column region that is part of the
// key in the partitioned variant, and two value columns.
const UpsertSchema = `{"type":"struct","fields":[{"name":"k","type":"string","nullable":true,"metadata":{}},
	{"name":"n","type":"long","nullable":true,"metadata":{}},{"name":"region","type":"string","nullable":true,"metadata":{}},
	{"name":"v","type":"long","nullable":true,"metadata":{}},{"name":"s","type":"string","nullable":true,"metadata":{}}]}`

// UpsertKeys is upsertKeys, for e2e tests.
func UpsertKeys() int { return upsertKeys() }

// upsertKeys is how many distinct keys the model tests draw from:
// PICOMQ_UPSERT_KEYS (10000 for the full run), 400 by default.
func upsertKeys() int {
	if n, err := strconv.Atoi(os.Getenv("PICOMQ_UPSERT_KEYS")); err == nil && n > 0 {
		return n
	}
	return 400
}

// upsertVariant is one shape of the model test.
type upsertVariant struct {
	keys      string // key_columns
	partition string // partition_by
	format    string // change_format
}

// UpsertModel is the expected table: a row per live key.
type UpsertModel struct {
	rows map[string]map[string]any // by key text
	keys []string                  // key columns
}

func NewUpsertModel(keys string) *UpsertModel {
	m := &UpsertModel{rows: map[string]map[string]any{}}
	for _, k := range strings.Split(keys, ",") {
		m.keys = append(m.keys, strings.TrimSpace(k))
	}
	return m
}

func (m *UpsertModel) key(row map[string]any) string {
	var parts []string
	for _, k := range m.keys {
		parts = append(parts, fmt.Sprint(row[k]))
	}
	return strings.Join(parts, "\x00")
}

// rowText renders a row for comparison, every column in a fixed order,
// numbers as integers.
func rowText(row map[string]any) string {
	var b strings.Builder
	for _, c := range []string{"k", "n", "region", "v", "s"} {
		v := row[c]
		if f, ok := v.(float64); ok {
			v = int64(f)
		}
		fmt.Fprintf(&b, "%s=%v;", c, v)
	}
	return b.String()
}

func (m *UpsertModel) want() []string {
	var out []string
	for _, r := range m.rows {
		out = append(out, rowText(r))
	}
	slices.Sort(out)
	return out
}

// ChangeGen makes random changes over a key space and applies each to the
// model as the sink should.
type ChangeGen struct {
	rng    *rand.Rand
	v      upsertVariant
	keys   int
	prefix string // keeps the key spaces of two writers apart
}

// genKey is key i's row identity: a long string part (some keys wide), a
// long part and a region.
func (g *ChangeGen) keyOf(i int) map[string]any {
	k := fmt.Sprintf("%sk%d", g.prefix, i%97)
	if i%11 == 0 {
		k += strings.Repeat("w", 300) // a wide key
	}
	return map[string]any{"k": k, "n": int64(i), "region": []string{"eu", "us", "ap"}[i%3]}
}

// record is one change record and what it does to the model (nil apply:
// a record error, rejected).
type genRecord struct {
	payload, key []byte
	apply        func(*UpsertModel)
}

func (g *ChangeGen) next(m *UpsertModel) genRecord {
	i := g.rng.IntN(g.keys)
	key := g.keyOf(i)
	switch r := g.rng.IntN(100); {
	case r < 3: // a null key: a record error
		row := maps(key, "v", int64(1), "s", "null key")
		row["n"] = nil
		return genRecord{payload: g.upsertPayload(row, "c")}
	case r < 8: // a delete of a key never seen
		// (changeAgain may have upserted one of them since: a delete all the same.)
		key = g.keyOf(g.keys + 1 + g.rng.IntN(1000))
		return genRecord{payload: g.deletePayload(key), key: mustJSON(key), apply: func(m *UpsertModel) { delete(m.rows, m.key(key)) }}
	case r < 25: // a delete
		if g.v.format == "debezium" && r < 15 { // a tombstone: the record key names it
			return genRecord{payload: []byte{}, key: mustJSON(key), apply: func(m *UpsertModel) { delete(m.rows, m.key(key)) }}
		}
		return genRecord{payload: g.deletePayload(key), key: mustJSON(key), apply: func(m *UpsertModel) { delete(m.rows, m.key(key)) }}
	}
	// An insert or update (c, u, r alike: an update of a key never seen
	// inserts it).
	row := maps(key, "v", g.rng.Int64N(1<<40), "s", fmt.Sprintf("s%d", g.rng.IntN(1000)))
	op := []string{"c", "u", "r"}[g.rng.IntN(3)]
	return genRecord{payload: g.upsertPayload(row, op), key: mustJSON(key), apply: func(m *UpsertModel) { m.rows[m.key(row)] = row }}
}

func maps(base map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (g *ChangeGen) upsertPayload(row map[string]any, op string) []byte {
	if g.v.format == "debezium" {
		return mustJSON(map[string]any{"before": nil, "after": row, "op": op, "ts_ms": 1})
	}
	return mustJSON(maps(row, "_op", strings.ToUpper(op)))
}

func (g *ChangeGen) deletePayload(key map[string]any) []byte {
	if g.v.format == "debezium" {
		return mustJSON(map[string]any{"before": key, "after": nil, "op": "d"})
	}
	return mustJSON(maps(key, "_op", "D"))
}

// batch makes a batch of n changes at offset first of a topic partition,
// and the model changes it makes, in order.
func (g *ChangeGen) Batch(topic string, partition uint32, first uint64, n int, m *UpsertModel) (sinkdriver.Batch, []func(*UpsertModel)) {
	b := sinkdriver.Batch{Attempt: 1, Topic: topic, Partition: partition, Schema: "json", AcceptRejections: true}
	var applies []func(*UpsertModel)
	var last genRecord
	for i := range n {
		r := g.next(m)
		if i > 0 && g.rng.IntN(10) == 0 && last.apply != nil {
			r = last // the same key again within the batch
			if g.rng.IntN(2) == 0 {
				r = g.changeAgain(r.key, m)
			}
		}
		last = r
		b.Records = append(b.Records, sinkdriver.Record{Offset: first + uint64(i), TimestampMs: 1767225600000, Key: r.key, Payload: r.payload})
		if r.apply != nil {
			applies = append(applies, r.apply)
		}
	}
	return b, applies
}

// changeAgain is another change of the key (JSON) within one batch: an
// update with other values, or a delete.
func (g *ChangeGen) changeAgain(keyJSON []byte, m *UpsertModel) genRecord {
	var key map[string]any
	_ = json.Unmarshal(keyJSON, &key)
	key["n"] = int64(key["n"].(float64))
	if g.rng.IntN(3) == 0 {
		return genRecord{payload: g.deletePayload(key), key: keyJSON, apply: func(m *UpsertModel) { delete(m.rows, m.key(key)) }}
	}
	row := maps(key, "v", g.rng.Int64N(1<<40), "s", "again")
	return genRecord{payload: g.upsertPayload(row, "u"), key: keyJSON, apply: func(m *UpsertModel) { m.rows[m.key(row)] = row }}
}

// NewChangeGen is a generator of random changes over UpsertKeys() keys
// of the composite key (k, n) in change_format format, seeded.
func NewChangeGen(seed int64, format string) *ChangeGen {
	return &ChangeGen{rng: rand.New(rand.NewPCG(uint64(seed), 7)), v: upsertVariant{keys: "k, n", format: format}, keys: upsertKeys()}
}

// UpsertPluginConfig is the plugin_config keys of a ChangeGen's table
// (created by the first batch), to add to a store's.
func (g *ChangeGen) UpsertPluginConfig() []any {
	return []any{"write_mode", "upsert", "key_columns", g.v.keys, "change_format", g.v.format,
		"create_table", true, "table_schema", UpsertSchema}
}

// Model is an empty model of the generator's table.
func (g *ChangeGen) Model() *UpsertModel { return NewUpsertModel(g.v.keys) }

// upsertConfig is the plugin_config of the upsert tests' instances.
func upsertConfig(s *Store, uri string, v upsertVariant, kv ...any) map[string]any {
	cfg := []any{"write_mode", "upsert", "key_columns", v.keys, "change_format", v.format,
		"create_table", true, "table_schema", UpsertSchema}
	if v.partition != "" {
		cfg = append(cfg, "partition_by", v.partition)
	}
	return s.Config(uri, append(cfg, kv...)...)
}

// wantModel compares the table with the model through delta-rs and DuckDB.
func WantUpsertModel(t *testing.T, env []string, uri string, m *UpsertModel) CompactionFacts {
	t.Helper()
	f := ReadTableLog(t, env, uri, "k")
	want := m.want()
	for name, rows := range map[string][]map[string]any{"delta-rs": f.DeltaRS, "DuckDB": f.DuckDB} {
		var have []string
		for _, r := range rows {
			have = append(have, rowText(r))
		}
		slices.Sort(have)
		if !slices.Equal(have, want) {
			t.Errorf("%s reads %d rows, the model has %d; first differences:\n%s", name, len(have), len(want), firstDiff(have, want))
		}
	}
	return f
}

func firstDiff(have, want []string) string {
	var out []string
	hs, ws := map[string]bool{}, map[string]bool{}
	for _, h := range have {
		hs[h] = true
	}
	for _, w := range want {
		ws[w] = true
	}
	for _, h := range have {
		if !ws[h] && len(out) < 5 {
			out = append(out, "  extra:   "+h)
		}
	}
	for _, w := range want {
		if !hs[w] && len(out) < 10 {
			out = append(out, "  missing: "+w)
		}
	}
	return strings.Join(out, "\n")
}

var upsertVariants = map[string]upsertVariant{
	"composite_op_field": {keys: "k, n", format: "op_field"},
	"partition_key":      {keys: "region, n", partition: "region", format: "op_field"},
	"composite_debezium": {keys: "k, n", format: "debezium"},
}

// UpsertMatchesModel: random interleavings of inserts, updates and
// deletes over upsertKeys() keys in two topic partitions — replays of
// whole batches among them, deletes of keys never seen, updates before
// inserts, a key changed twice in a batch, null keys (rejected), wide
// keys, keys in a partition column — leave the table as the model says,
// through delta-rs and DuckDB, and every commit's removes name live files.
func UpsertMatchesModel(t *testing.T, d sinkdriver.Driver, s *Store) {
	names := mapKeys(upsertVariants)
	slices.Sort(names)
	for _, name := range names {
		v := upsertVariants[name]
		t.Run(name, func(t *testing.T) {
			uri := s.URI("upsert_" + name)
			seed := time.Now().UnixNano()
			t.Logf("seed %d", seed)
			g := &ChangeGen{rng: rand.New(rand.NewPCG(uint64(seed), 1)), v: v, keys: upsertKeys()}
			inst := Open(t, d.Start(t, s.Secrets...), "upsert", upsertConfig(s, uri, v))
			m := NewUpsertModel(v.keys)
			next := map[uint32]uint64{}
			var sent []sinkdriver.Batch
			batches := 12 + g.keys/50
			per := max(20, g.keys/10)
			for i := range batches {
				if i > 2 && g.rng.IntN(5) == 0 {
					// A replay: a batch delivered before, again.
					b := sent[g.rng.IntN(len(sent))]
					b.Attempt = 2
					consumeChanges(t, inst, b)
					continue
				}
				p := uint32(i % 2)
				b, applies := g.Batch("cdc", p, next[p], per, m)
				next[p] += uint64(len(b.Records))
				consumeChanges(t, inst, b)
				for _, a := range applies {
					a(m)
				}
				sent = append(sent, b)
			}
			f := WantUpsertModel(t, s.env, uri, m)
			merges := 0
			for _, ver := range f.Versions {
				if ver.Op == "MERGE" {
					merges++
				}
			}
			mt := metrics(t, inst)
			t.Logf("%d keys live, %d versions (%d MERGE); files read %v, rewritten %v, rows dropped %v, upserts %v, deletes %v",
				len(m.rows), len(f.Versions), merges, mt["sink.upsert_files_read"], mt["sink.upsert_files_rewritten"],
				mt["sink.upsert_rows_dropped"], mt["sink.upserts"], mt["sink.deletes"])
			if merges == 0 {
				t.Errorf("no MERGE commit")
			}
		})
	}
}

func mapKeys[K comparable, V any](m map[K]V) []K {
	var out []K
	for k := range m {
		out = append(out, k)
	}
	return out
}

// rejectedOnly reports whether err says only that records were rejected
// (the batch's other records landed): the drivers' answer to a batch that
// takes rejections. The tests' rejected records are their null keys.
func rejectedOnly(err error) bool {
	return err != nil && strings.Contains(err.Error(), "the plugin rejected")
}

// consumeChanges delivers b, whose records may be rejected.
func consumeChanges(t *testing.T, inst sinkdriver.Instance, b sinkdriver.Batch) {
	t.Helper()
	if err := inst.Consume(b); err != nil && !rejectedOnly(err) {
		t.Fatalf("consume %s[%d] offsets %d..: %v", b.Topic, b.Partition, b.Records[0].Offset, err)
	}
}

// consumeRetrying delivers b until it is answered OK, redelivering after
// RETRY as a runtime does; any other answer fails the test.
func consumeRetrying(t *testing.T, inst sinkdriver.Instance, b sinkdriver.Batch) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		b.Attempt = uint32(attempt)
		err := inst.Consume(b)
		if err == nil || rejectedOnly(err) {
			return
		}
		var se *hostclient.StatusError
		if !errors.As(err, &se) || se.Code != hostclient.StatusRetry || attempt == 50 {
			t.Errorf("consume %s[%d] offsets %d..: %v", b.Topic, b.Partition, b.Records[0].Offset, err)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// UpsertTwoWritersAndCompaction: two instances write changes of disjoint
// key sets from two topic partitions of one table at once, while a third
// compacts it (its compactions race the merges: aborted or landed); the
// table ends as the two models together say.
func UpsertTwoWritersAndCompaction(t *testing.T, d sinkdriver.Driver, s *Store) {
	v := upsertVariant{keys: "k, n", format: "op_field"}
	uri := s.URI("upsert_race")
	rt := d.Start(t, s.Secrets...)
	// Create the table first, so the writers race on merges only.
	first := Open(t, rt, "creator", upsertConfig(s, uri, v))
	consume(t, first, JSONBatch("setup", 0, `{"k":"setup","n":-1,"_op":"c"}`))
	_ = first.Close()
	// The compactor runs from the start; the writers go on until it has
	// landed compactions among their merges (at most a minute).
	comp := Open(t, rt, "compactor", upsertConfig(s, uri, v, "compaction", true, "compaction_idle", "0s", "compaction_min_files", 2))
	models := make([]*UpsertModel, 2)
	writers := make([]sinkdriver.Instance, 2)
	var wg sync.WaitGroup
	deadline := time.Now().Add(time.Minute)
	for w := range 2 {
		inst := Open(t, rt, fmt.Sprintf("writer%d", w), upsertConfig(s, uri, v))
		writers[w] = inst
		g := &ChangeGen{rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w))), v: v, keys: upsertKeys(),
			prefix: fmt.Sprintf("w%d", w)}
		m := NewUpsertModel(v.keys)
		models[w] = m
		wg.Add(1)
		go func() {
			defer wg.Done()
			var next uint64
			raced := func() bool { m := metrics(t, comp); return m["sink.compactions"]+m["sink.compaction_aborts"] >= 2 }
			for i := 0; i < 10+g.keys/100 || (!raced() && time.Now().Before(deadline)); i++ {
				b, applies := g.Batch("race", uint32(w), next, max(10, g.keys/20), m)
				next += uint64(len(b.Records))
				consumeRetrying(t, inst, b)
				for _, a := range applies {
					a(m)
				}
			}
		}()
	}
	wg.Wait()
	// A merge rewrites the files that hold its keys, so a compaction of
	// files a busy writer keeps rewriting is aborted again and again
	// (docs/delta.md); once the writers pause, it lands.
	waitForMetric(t, "compactions", 1, comp)
	mc := metrics(t, comp)
	_ = comp.Close()
	conflicts := 0.0
	for _, w := range writers {
		conflicts += metrics(t, w)["sink.commit_conflicts"]
	}
	t.Logf("compactions %v (aborted %v), writers' lost races %v", mc["sink.compactions"], mc["sink.compaction_aborts"], conflicts)
	m := NewUpsertModel(v.keys)
	m.rows[m.key(map[string]any{"k": "setup", "n": int64(-1)})] = map[string]any{"k": "setup", "n": int64(-1)}
	for _, w := range models {
		for k, r := range w.rows {
			m.rows[k] = r
		}
	}
	f := WantUpsertModel(t, s.env, uri, m)
	t.Logf("%d versions", len(f.Versions))
}

// UpsertRefusals: a key column the table lacks is BAD_CONFIG at open; a
// record that is no change (a null key) fails the batch FATAL when the
// host takes no rejections, and is rejected — again on a replay — when it
// does, its batch's other changes landing once.
func UpsertRefusals(t *testing.T, d sinkdriver.Driver, s *Store) {
	rt := d.Start(t, s.Secrets...)
	uri := s.URI("upsert_refusals")
	v := upsertVariant{keys: "k, n", format: "op_field"}
	_, err := rt.Open(sinkdriver.Definition{Key: "bad", Name: "bad", Config: upsertConfig(s, uri, upsertVariant{keys: "k, nope", format: "op_field"})})
	WantStatus(t, err, hostclient.StatusBadConfig, `key column "nope" is not a column of the table`)
	inst := Open(t, rt, "refusals", upsertConfig(s, uri, v))
	b := JSONBatch("cdc", 0, `{"k":"a","n":1,"v":1,"_op":"c"}`, `{"k":"a","n":null,"_op":"c"}`, `{"k":"b","n":2,"v":2,"_op":"c"}`)
	WantStatus(t, inst.Consume(b), hostclient.StatusFatal, `key column "n" is null`, "offset 1")
	b.AcceptRejections = true
	for attempt := uint32(1); attempt <= 2; attempt++ {
		b.Attempt = attempt
		if err := inst.Consume(b); !rejectedOnly(err) || !strings.Contains(err.Error(), "rejected 1 record") {
			t.Fatalf("attempt %d: %v, want one record rejected", attempt, err)
		}
	}
	m := NewUpsertModel(v.keys)
	for _, r := range []map[string]any{{"k": "a", "n": int64(1), "v": int64(1)}, {"k": "b", "n": int64(2), "v": int64(2)}} {
		m.rows[m.key(r)] = r
	}
	f := WantUpsertModel(t, s.env, uri, m)
	if n := len(f.Versions); n != 1 {
		t.Errorf("%d versions, want 1: the replay commits nothing", n)
	}
	// Deletes of keys never seen change no row, but their batch commits
	// its txn (a WRITE with no file): its replay is then skipped.
	del := JSONBatch("cdc", 3, `{"k":"zz","n":9,"_op":"d"}`, `{"k":"zz","n":10,"_op":"D"}`)
	consume(t, inst, del)
	f = WantUpsertModel(t, s.env, uri, m)
	if n := len(f.Versions); n != 2 || f.Versions[1].Op != "WRITE" || f.Versions[1].Txns != 1 || len(f.Versions[1].Adds)+len(f.Versions[1].Removes) != 0 {
		t.Errorf("versions %+v: want a WRITE with one txn and no file", f.Versions)
	}
	del.Attempt = 2
	consume(t, inst, del)
	if m := metrics(t, inst); m["sink.records_skipped"] < 2 {
		t.Errorf("records_skipped %v after the replay of the deletes", m["sink.records_skipped"])
	}
	// A key's last change whose row does not fit is rejected: the change
	// before it wins.
	b = JSONBatch("cdc", 5, `{"k":"c","n":3,"v":1,"_op":"c"}`, `{"k":"c","n":3,"v":"not a long","_op":"u"}`,
		`{"k":"d","n":4,"v":"no","_op":"c"}`)
	b.AcceptRejections = true
	if err := inst.Consume(b); !rejectedOnly(err) || !strings.Contains(err.Error(), "rejected 2 record") {
		t.Fatalf("%v, want two records rejected", err)
	}
	r := map[string]any{"k": "c", "n": int64(3), "v": int64(1)}
	m.rows[m.key(r)] = r
	WantUpsertModel(t, s.env, uri, m)
}
