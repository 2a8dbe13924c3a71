package redshift_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/picomq/heavy-sinks/connect/audit"
	"github.com/picomq/heavy-sinks/connect/audit/source"
	"github.com/picomq/heavy-sinks/plugins/redshift"
	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
)

// write_mode = "upsert": the model tests replay a changelog in memory and
// compare it with what SQL reads back from the target through the
// backend (not the sink's view): one row per key alive, holding the row of
// its last change.

// upsertKeys is the key space of the model test: PICOMQ_UPSERT_KEYS (the
// issue asks for 10000) or a smaller default that keeps the run short.
func upsertKeys(t *testing.T) int {
	if v := os.Getenv("PICOMQ_UPSERT_KEYS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			t.Fatalf("PICOMQ_UPSERT_KEYS=%q: want a number of at least 10", v)
		}
		return n
	}
	return 600
}

// change is one changelog record of the model.
type change struct {
	op      string // c, u or d
	tenant  string
	id      int
	v       int
	payload []byte
}

func (c change) key() string { return c.tenant + "\x00" + strconv.Itoa(c.id) }

// tenantOf makes composite keys with wide strings: every fifth key's
// tenant is 1000 bytes long.
func tenantOf(id int) string {
	t := fmt.Sprintf("tenant-%d", id%3)
	if id%5 == 0 {
		t += "-" + strings.Repeat("w", 1000-len(t)-1)
	}
	return t
}

// parts is the number of partitions of the model's topic.
const parts = 4

// changelog makes n changes per partition over keys; key k lives in
// partition k%parts, as a Kafka producer partitions by key. A third of the
// picks come from 20 hot keys, so keys change several times within one
// batch; ops are random, so updates come before inserts and deletes hit
// keys never seen.
func changelog(rng *rand.Rand, keys, n int) [parts][]change {
	var log [parts][]change
	v := 0
	full := func() bool {
		for p := range log {
			if len(log[p]) < n {
				return false
			}
		}
		return true
	}
	for !full() {
		id := rng.IntN(keys)
		if rng.IntN(3) == 0 {
			id = rng.IntN(20)
		}
		p := id % parts
		if len(log[p]) >= n {
			continue
		}
		v++
		c := change{op: []string{"c", "u", "u", "d"}[rng.IntN(4)], tenant: tenantOf(id), id: id, v: v}
		c.payload = fmt.Appendf(nil, `{"tenant":%q,"id":%d,"v":%d,"_op":%q}`, c.tenant, c.id, c.v, c.op)
		log[p] = append(log[p], c)
	}
	return log
}

// model replays the first upto[p] changes of each partition.
func model(log [parts][]change, upto [parts]int) map[string]change {
	m := map[string]change{}
	for p := range log {
		for _, c := range log[p][:upto[p]] {
			if c.op == "d" {
				delete(m, c.key())
			} else {
				m[c.key()] = c
			}
		}
	}
	return m
}

func changeBatch(topic string, p int, log []change, first, last int) *sdk.Batch {
	b := &sdk.Batch{Topic: topic, Partition: uint32(p), Schema: "json", Attempt: 1}
	for i := first; i < last; i++ {
		b.Records = append(b.Records, sdk.Record{Offset: uint64(i), Timestamp: int64(i), Payload: log[i].payload})
	}
	return b
}

func upsertConfig(r *rig, table string, extra map[string]any) map[string]any {
	cfg := map[string]any{"target_table": table, "write_mode": "upsert", "key_columns": "tenant, id",
		"payload_format": "text", "batch_size": 100}
	for k, v := range extra {
		cfg[k] = v
	}
	return r.config(cfg)
}

// checkTable compares the target with the model: the same keys, each row
// the last change's record without its op member.
func (r *rig) checkTable(table string, want map[string]change) {
	r.t.Helper()
	rows, err := r.pg.Query(r.ctx, "SELECT key_tenant, key_id, payload FROM "+pgx.Identifier{table}.Sanitize())
	if err != nil {
		r.t.Fatal(err)
	}
	got := map[string]string{}
	n := 0
	for rows.Next() {
		var tenant, id, payload string
		if err := rows.Scan(&tenant, &id, &payload); err != nil {
			r.t.Fatal(err)
		}
		got[tenant+"\x00"+id] = payload
		n++
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	if n != len(got) {
		r.t.Errorf("%d rows for %d keys: a key has several rows", n, len(got))
	}
	bad := 0
	for k, c := range want {
		p, ok := got[k]
		if !ok {
			r.t.Errorf("key %.40q (change v%d %s) missing", k, c.v, c.op)
		} else {
			var gotRow, wantRow map[string]any
			if err := json.Unmarshal([]byte(p), &gotRow); err != nil {
				r.t.Fatalf("payload %q: %v", p, err)
			}
			_ = json.Unmarshal(c.payload, &wantRow)
			delete(wantRow, "_op")
			if !reflect.DeepEqual(gotRow, wantRow) {
				r.t.Errorf("key %.40q: row %.80s, want v%v", k, p, wantRow["v"])
			}
		}
		if bad++; r.t.Failed() && bad > 20 {
			r.t.FailNow()
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			r.t.Errorf("key %.40q present, deleted or never upserted in the changelog", k)
		}
	}
	if r.t.Failed() {
		r.t.FailNow()
	}
}

// checkOffsets says the offsets table holds the last offset applied per
// partition.
func (r *rig) checkOffsets(table, topic string, upto [parts]int) {
	r.t.Helper()
	rows, err := r.pg.Query(r.ctx, "SELECT topic, partition_id, applied_offset FROM "+pgx.Identifier{"offsets_" + table}.Sanitize())
	if err != nil {
		r.t.Fatal(err)
	}
	got := map[string]int64{}
	for rows.Next() {
		var tp string
		var p, off int64
		if err := rows.Scan(&tp, &p, &off); err != nil {
			r.t.Fatal(err)
		}
		got[fmt.Sprintf("%s/%d", tp, p)] = off
	}
	want := map[string]int64{}
	for p, n := range upto {
		if n > 0 {
			want[fmt.Sprintf("%s/%d", topic, p)] = int64(n - 1)
		}
	}
	if !reflect.DeepEqual(got, want) {
		r.t.Fatalf("offsets %v, want %v", got, want)
	}
}

// TestUpsertModel delivers a random changelog over upsertKeys keys in
// random batches: one partition at a time, both at once into one instance
// (group loads), both at once through two instances (two writers, one
// table), replays of earlier batches, and loads whose connection drops
// before the target's INSERT or after COMMIT, followed by the redelivery
// to a new instance. After each step the target equals the model.
func TestUpsertModel(t *testing.T) {
	r := newRig(t)
	// 10k keys take longer than the rig's bound on its reads.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	t.Cleanup(cancel)
	r.ctx = ctx
	seed := uint64(rand.Int64())
	if v := os.Getenv("PICOMQ_UPSERT_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (PICOMQ_UPSERT_SEED)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	keys := upsertKeys(t)
	perPartition := keys
	log := changelog(rng, keys, perPartition)
	const table, topic = "cdc", "orders"
	cfg := upsertConfig(r, table, nil)
	h1, _ := r.open("cdc_a", cfg)
	h2, _ := r.open("cdc_b", cfg)

	var upto [parts]int
	var done [parts][][2]int // committed batches per partition, for replays
	next := func(p int) (int, int) {
		first := upto[p]
		last := min(len(log[p]), first+1+rng.IntN(100))
		return first, last
	}
	consume := func(h uint64, p, first, last int) error {
		return sdk.Consume(h, changeBatch(topic, p, log[p], first, last))
	}
	commit := func(p, first, last int) {
		upto[p] = last
		done[p] = append(done[p], [2]int{first, last})
	}
	open := func() []int {
		var ps []int
		for p := range parts {
			if upto[p] < len(log[p]) {
				ps = append(ps, p)
			}
		}
		return ps
	}
	step := 0
	for len(open()) > 0 {
		step++
		p := open()[rng.IntN(len(open()))]
		switch mode := rng.IntN(10); {
		case mode < 3: // one batch
			first, last := next(p)
			if err := consume(h1, p, first, last); err != nil {
				t.Fatal(err)
			}
			commit(p, first, last)
		case mode < 5 && len(open()) == parts:
			// Every partition at once: into one instance (the batches
			// that wait for the first load go in one group load), or
			// partitions 0-1 and 2-3 through two instances (two writers
			// of one table).
			var wg sync.WaitGroup
			var errs [parts]error
			var span [parts][2]int
			for q := range parts {
				span[q][0], span[q][1] = next(q)
			}
			for q := range parts {
				h := h1
				if mode == 4 && q >= parts/2 {
					h = h2
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[q] = consume(h, q, span[q][0], span[q][1])
				}()
			}
			wg.Wait()
			for q := range parts {
				if errs[q] != nil {
					t.Fatal(errs[q])
				}
				commit(q, span[q][0], span[q][1])
			}
		case mode < 7 && len(done[p]) > 0: // a replay of an earlier batch, maybe overlapping the next
			b := done[p][rng.IntN(len(done[p]))]
			last := b[1]
			if rng.IntN(2) == 0 {
				last = min(len(log[p]), upto[p]+rng.IntN(50))
			}
			if err := consume(h2, p, b[0], last); err != nil {
				t.Fatal(err)
			}
			upto[p] = max(upto[p], last)
		case mode < 9: // the connection drops mid-load: kill, then redeliver
			first, last := next(p)
			hc, _ := r.open(fmt.Sprintf("cdc_crash_%d", step), upsertConfig(r, table, map[string]any{"max_retries": 1}))
			if rng.IntN(2) == 0 {
				r.emu.DropOn(`^INSERT INTO "cdc"`, 1)
			} else {
				r.emu.DropAfter(`^(?i)commit`, 1)
			}
			if err := consume(hc, p, first, last); err == nil || sdk.StatusOf(err) != sdk.StatusRetry ||
				!strings.Contains(err.Error(), "the replay skips the changes already applied") {
				t.Fatalf("load with a dropped connection: %v", err)
			}
			_ = sdk.Close(hc)
			if err := consume(h1, p, first, last); err != nil {
				t.Fatal(err)
			}
			commit(p, first, last)
		default:
			continue
		}
		if step%(7*max(1, keys/1000)) == 0 {
			r.checkTable(table, model(log, upto))
		}
	}
	r.checkTable(table, model(log, upto))
	r.checkOffsets(table, topic, upto)
	if n := r.count("staging_" + table); n != 0 {
		t.Errorf("staging holds %d rows", n)
	}
	// A replay of everything changes nothing.
	for p := range parts {
		if err := consume(h1, p, 0, len(log[p])); err != nil {
			t.Fatal(err)
		}
	}
	r.checkTable(table, model(log, upto))
	t.Logf("%d keys, %d changes, %d steps, %d rows alive, metrics %v", keys, parts*perPartition, step, len(model(log, upto)), metrics(t, h1))
}

// rows reads the target's key columns and payloads, keyed by the key
// columns joined with "|".
func (r *rig) rows(table string, keys ...string) map[string]string {
	r.t.Helper()
	q := "SELECT " + strings.Join(keys, " || '|' || ") + ", payload FROM " + pgx.Identifier{table}.Sanitize()
	rs, err := r.pg.Query(r.ctx, q)
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]string{}
	for rs.Next() {
		var k, p string
		if err := rs.Scan(&k, &p); err != nil {
			r.t.Fatal(err)
		}
		if _, dup := out[k]; dup {
			r.t.Errorf("key %q has several rows", k)
		}
		out[k] = p
	}
	if err := rs.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}

func records(topic string, first uint64, payloads ...string) *sdk.Batch {
	b := &sdk.Batch{Topic: topic, Schema: "json", Attempt: 1}
	for i, p := range payloads {
		b.Records = append(b.Records, sdk.Record{Offset: first + uint64(i), Payload: []byte(p)})
	}
	return b
}

// A record that is no change (a null key, a missing op) fails the batch
// FATAL, naming it, with nothing written; from a host that accepts
// rejections it is rejected alone and the others apply.
func TestUpsertRecordErrors(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("cdc_err", upsertConfig(r, "cdcerr", map[string]any{"key_columns": "id"}))
	b := records("orders", 0, `{"id":1,"v":"a","_op":"c"}`, `{"id":null,"v":"b","_op":"u"}`, `{"id":2,"v":"c"}`, `{"id":3,"v":"d","_op":"u"}`,
		`{"id":1.5,"_op":"u"}`, `{"id":"4 ","_op":"u"}`)
	err := sdk.Consume(h, b)
	if sdk.StatusOf(err) != sdk.StatusFatal || !strings.Contains(err.Error(), `offset 1 is not a change`) ||
		!strings.Contains(err.Error(), `key column "id" is null`) {
		t.Fatalf("%v", err)
	}
	if n := r.count("cdcerr"); n != 0 {
		t.Fatalf("%d rows after a FATAL batch", n)
	}
	b.AcceptRejections()
	mustConsume(t, h, b)
	rej := b.Rejections()
	if len(rej) != 4 || rej[0].Index != 1 || rej[1].Index != 2 || rej[2].Index != 4 || rej[3].Index != 5 {
		t.Fatalf("rejections %v", rej)
	}
	if !strings.Contains(rej[3].Err.Error(), "ends in a blank") {
		t.Fatalf("rejection %v", rej[3])
	}
	if !strings.Contains(rej[1].Err.Error(), `no "_op" field`) || !strings.Contains(rej[2].Err.Error(), "must be an integer") {
		t.Fatalf("rejections %v", rej)
	}
	got := r.rows("cdcerr", "key_id")
	want := map[string]string{"1": `{"id":1,"v":"a"}`, "3": `{"id":3,"v":"d"}`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}

// Debezium events: create, update before any insert, delete of a key never
// seen, a delete by before, a tombstone by the record key, the JSON
// converter's envelope, and one key changing several times in a batch.
func TestUpsertDebezium(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("cdc_dbz", upsertConfig(r, "dbz", map[string]any{"key_columns": "id", "change_format": "debezium"}))
	b := records("pg.public.orders", 10,
		`{"before":null,"after":{"id":1,"sku":"a"},"op":"c"}`,
		`{"before":{"id":2},"after":{"id":2,"sku":"b2"},"op":"u"}`, // update before insert
		`{"before":{"id":99},"after":null,"op":"d"}`,               // a key never seen
		`{"schema":{},"payload":{"before":null,"after":{"id":3,"sku":"c"},"op":"r"}}`,
		`{"before":null,"after":{"id":4,"sku":"d"},"op":"c"}`,
		`{"before":{"id":4},"after":{"id":4,"sku":"d2"},"op":"u"}`,
		`{"before":{"id":4},"after":null,"op":"d"}`,
		`{"before":null,"after":{"id":4,"sku":"d3"},"op":"c"}`, // deleted and created again in one batch
		`{"before":null,"after":{"id":5,"sku":"e"},"op":"c"}`,
		``, // tombstone of id 5 (record key below)
	)
	b.Records[9].Key = []byte(`{"id":5}`)
	mustConsume(t, h, b)
	want := map[string]string{"1": `{"id":1,"sku":"a"}`, "2": `{"id":2,"sku":"b2"}`, "3": `{"id":3,"sku":"c"}`, "4": `{"id":4,"sku":"d3"}`}
	if got := r.rows("dbz", "key_id"); !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	// The next batch deletes 1 by before; a replay of both changes nothing.
	b2 := records("pg.public.orders", 20, `{"before":{"id":1,"sku":"a"},"after":null,"op":"d"}`)
	mustConsume(t, h, b2)
	delete(want, "1")
	mustConsume(t, h, b)
	mustConsume(t, h, b2)
	if got := r.rows("dbz", "key_id"); !reflect.DeepEqual(got, want) {
		t.Fatalf("rows after replays %v, want %v", got, want)
	}
	if m := metrics(t, h); m["rows_skipped_duplicates"] != 11 {
		t.Errorf("rows_skipped_duplicates %v, want the 11 replayed changes", m["rows_skipped_duplicates"])
	}
}

// An existing target without the key columns, or a staging table made
// before write_mode = "upsert", is a schema mismatch naming the column.
func TestUpsertTableWithoutKeyColumns(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("append", r.config(map[string]any{"target_table": "plain", "payload_format": "text"}))
	mustConsume(t, h, batch("orders", 0, 3))
	_, err := sdk.Open(definition(t, "up", upsertConfig(r, "plain", map[string]any{"key_columns": "id"})), (&sdktest.Logs{}).Log)
	if err == nil || !strings.Contains(err.Error(), `Schema mismatch detected in table "plain": column key_id is missing (named by key_columns)`) {
		t.Fatalf("%v", err)
	}
	// With the key column added, the staging table made in append mode
	// lacks the change columns.
	if _, err := r.pg.Exec(r.ctx, `ALTER TABLE "plain" ADD COLUMN key_id VARCHAR(64)`); err != nil {
		t.Fatal(err)
	}
	_, err = sdk.Open(definition(t, "up", upsertConfig(r, "plain", map[string]any{"key_columns": "id"})), (&sdktest.Logs{}).Log)
	if err == nil || !strings.Contains(err.Error(), `Schema mismatch detected in table "staging_plain"`) ||
		!strings.Contains(err.Error(), "column pico_op is missing (a staging column of write_mode") {
		t.Fatalf("%v", err)
	}
}

func TestUpsertConfigErrors(t *testing.T) {
	r := newRig(t)
	for _, c := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"write_mode": "merge"}, `plugin_config key "write_mode": "merge" is not one of append, upsert`},
		{map[string]any{"write_mode": "upsert"}, `plugin_config key "key_columns" is required with write_mode = "upsert"`},
		{map[string]any{"key_columns": "id"}, `plugin_config key "key_columns" is for write_mode = "upsert" only`},
		{map[string]any{"write_mode": "upsert", "key_columns": "id, ID"}, `named "key_id" twice`},
		{map[string]any{"write_mode": "upsert", "key_columns": "order-id"}, `field "order-id" is not a plain identifier`},
		{map[string]any{"write_mode": "upsert", "key_columns": "id", "change_format": "avro"}, `plugin_config key "change_format": "avro": want op_field or debezium`},
		{map[string]any{"write_mode": "upsert", "key_columns": "id, _op"}, `plugin_config key "op_field": "_op" is also a key column`},
	} {
		_, err := sdk.Open(definition(t, "bad", r.config(c.cfg)), (&sdktest.Logs{}).Log)
		if err == nil || sdk.StatusOf(err) != sdk.StatusBadConfig || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want BAD_CONFIG %q", c.cfg, err, c.want)
		}
	}
}

// A redrive batch in upsert mode is refused FATAL with nothing written: its
// original offsets are at or below the applied offset, so applying would
// skip every change as a replay and answer OK for nothing, and a dead
// letter is older than the changes of its partition applied since.
func TestUpsertRefusesRedrive(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("cdc_redrive", upsertConfig(r, "cdcredrive", map[string]any{"key_columns": "id"}))
	mustConsume(t, h, records("orders", 0, `{"id":1,"v":"a","_op":"c"}`, `{"id":2,"v":"b","_op":"c"}`, `{"id":1,"v":"c","_op":"u"}`))
	b := records("orders", 1, `{"id":2,"v":"redriven","_op":"u"}`)
	b.Redrive = &sdk.Redrive{Topic: "orders.dlq", Partition: 0, Offsets: []uint64{7}}
	err := sdk.Consume(h, b)
	if sdk.StatusOf(err) != sdk.StatusFatal || !strings.Contains(err.Error(), `write_mode = "upsert" cannot redrive dead letters`) {
		t.Fatalf("redrive batch: %v, want FATAL", err)
	}
	want := map[string]string{"1": `{"id":1,"v":"c"}`, "2": `{"id":2,"v":"b"}`}
	if got := r.rows("cdcredrive", "key_id"); !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	if m := metrics(t, h); m["rows_skipped_duplicates"] != 0 {
		t.Errorf("rows_skipped_duplicates %v after a refused redrive", m["rows_skipped_duplicates"])
	}
}

// The audit of an upsert target rests on offsets_<table>: the table keeps
// only each key's last change, so after updates and deletes most offsets
// have no row, and the audit must still find every offset written.
func TestUpsertAuditClean(t *testing.T) {
	r := newRig(t)
	cfg := upsertConfig(r, "cdcaudit", map[string]any{"key_columns": "id"})
	h, _ := r.open("cdc_audit", cfg)
	mustConsume(t, h, records("orders", 0, `{"id":1,"v":"a","_op":"c"}`, `{"id":2,"v":"b","_op":"c"}`, `{"id":1,"v":"c","_op":"u"}`))
	mustConsume(t, h, records("orders", 3, `{"id":2,"_op":"d"}`, `{"id":3,"v":"d","_op":"c"}`, `{"id":3,"v":"e","_op":"u"}`))
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := redshift.NewAudit(r.ctx, raw, "cdc_audit", sdk.Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tp := audit.TP{Topic: "orders", Partition: 0}
	out, notes, err := (&source.Redshift{Cfg: a}).Scan(r.ctx, []audit.TP{tp})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "offsets_cdcaudit") {
		t.Errorf("notes %q: want one naming the offsets table", notes)
	}
	p, err := audit.Reconcile(r.ctx, tp, audit.Offsets{LogStart: 0, End: 6, Committed: 6}, out[tp], nil, noRecords{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Clean() || p.Written != 6 || p.Proof != audit.ProofTxn {
		t.Fatalf("audit of the upsert target: %+v", p)
	}
}

// noRecords is a broker that holds nothing: an offset the destination
// does not account for is then compacted, and counted so.
type noRecords struct{}

func (noRecords) Read(context.Context, audit.TP, int64, int64, func(audit.Record) error) error {
	return nil
}

// A number key with a huge exponent is refused by its exponent, before any
// arithmetic (1e999999 is a million digits: parsing it costs ~100 ms), and
// the message says why instead of "must be an integer".
func TestUpsertHugeNumberKey(t *testing.T) {
	r := newRig(t)
	h, _ := r.open("cdc_huge", upsertConfig(r, "cdchuge", map[string]any{"key_columns": "id"}))
	b := records("orders", 0, `{"id":1e999999,"_op":"u"}`, `{"id":1e1000001,"_op":"u"}`, `{"id":-1E-999999,"_op":"u"}`,
		`{"id":12e3,"v":"kept","_op":"u"}`)
	b.AcceptRejections()
	start := time.Now()
	mustConsume(t, h, b)
	took := time.Since(start)
	rej := b.Rejections()
	if len(rej) != 3 {
		t.Fatalf("rejections %v", rej)
	}
	for i, x := range rej {
		want := "an integer key has at most 65535 digits"
		if i == 2 {
			want = "a number key must be an integer"
		}
		if x.Reason != sdk.RejectValue || !strings.Contains(x.Err.Error(), want) {
			t.Errorf("rejection %d: %v %v, want %q", x.Index, x.Reason, x.Err, want)
		}
	}
	if got, want := r.rows("cdchuge", "key_id"), map[string]string{"12000": `{"id":12e3,"v":"kept"}`}; !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	t.Logf("batch with three huge exponents: %v", took)
}

// A staging or offsets table whose topic column is narrower than the
// sink's VARCHAR(256) would fail every load's COPY or offsets INSERT (as
// RETRY, for ever): the table check says so first, as a schema mismatch.
// The tables are made as an operator would, like the sink's but for that
// column.
func TestUpsertNarrowChangeColumns(t *testing.T) {
	r := newRig(t)
	r.open("cdc_ref", upsertConfig(r, "ref", map[string]any{"key_columns": "id"}))
	conn := r.emuConn()
	// like creates table as the sink's table of ref, with column narrowed
	// to VARCHAR(8).
	like := func(ref, table, column string) {
		rows, err := conn.Query(r.ctx, `SELECT "column", type FROM pg_table_def WHERE tablename = $1`, ref)
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for rows.Next() {
			var name, typ string
			if err := rows.Scan(&name, &typ); err != nil {
				t.Fatal(err)
			}
			if name == column {
				typ = "VARCHAR(8)"
			}
			cols = append(cols, name+" "+typ)
		}
		if err := rows.Err(); err != nil || len(cols) == 0 {
			t.Fatalf("columns of %s: %v %v", ref, cols, err)
		}
		r.execEmu(conn, "CREATE TABLE "+pgx.Identifier{table}.Sanitize()+" ("+strings.Join(cols, ", ")+")")
	}
	like("staging_ref", "staging_narrow1", "pico_change_topic")
	like("offsets_ref", "offsets_narrow2", "topic")
	for _, c := range []struct{ table, want string }{
		{"narrow1", `Schema mismatch detected in table "staging_narrow1": column pico_change_topic is character varying(8), expected VARCHAR(256) or wider`},
		{"narrow2", `Schema mismatch detected in table "offsets_narrow2": column topic is character varying(8), expected VARCHAR(256) or wider`},
	} {
		_, err := sdk.Open(definition(t, "up", upsertConfig(r, c.table, map[string]any{"key_columns": "id"})), (&sdktest.Logs{}).Log)
		if err == nil || sdk.StatusOf(err) != sdk.StatusBadConfig || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v, want BAD_CONFIG %q", c.table, err, c.want)
		}
	}
}
