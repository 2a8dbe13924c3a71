package connect_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// The Redshift half of the test, through the emulator: the target
// table's payload column is VARCHAR(60), so picomq-connect dead-letters
// (class size) the records whose payload is longer. The column is widened
// (a deep copy into a wider table: the emulator has no ALTER TABLE) and
// redrive runs twice:
// each record is in the table exactly once under its original id
// topic:partition:offset, and a record still too long for the wider column
// goes back to the dead-letter topic with pico_redrive_attempts 1, then 2.
func TestRedriveRedshiftTwiceAfterWideningAColumn(t *testing.T) {
	svc := services.RequireKafka(t)
	brokers := svc.KafkaBrokers
	run := strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	topic, group := "rr"+run+".orders", "rr"+run+"-rs"
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.DeleteTopics(context.Background(), topic, topic+".dlq") })

	db := svc.NewDatabase(t)
	emu := rsemu.NewTest(t, rsemu.Config{BackendDSN: db.DSN, S3Endpoint: svc.S3Endpoint,
		S3AccessKey: svc.S3AccessKey, S3SecretKey: svc.S3SecretKey, S3Region: svc.S3Region})
	conn, err := pgx.Connect(ctx, emu.DSN(db.Name))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, tbl := range []string{"rr_orders", "staging_rr_orders"} {
		exec(`CREATE TABLE "` + tbl + `" (id VARCHAR(512), pico_key VARCHAR(MAX), payload VARCHAR(60), created_at VARCHAR)`)
	}

	// 60 records: every 6th is 100 bytes long (fits once widened), id 31
	// 1,100 bytes (never fits the widened column).
	const n = 60
	var long, tooLong []int64
	var recs []*kgo.Record
	for id := range int64(n) {
		v := fmt.Sprintf(`{"id":%d}`, id)
		switch {
		case id == 31:
			v = fmt.Sprintf(`{"id":%d,"pad":%q}`, id, strings.Repeat("y", 1100))
			tooLong = append(tooLong, id)
		case id%6 == 1:
			v = fmt.Sprintf(`{"id":%d,"pad":%q}`, id, strings.Repeat("x", 90))
			long = append(long, id)
		}
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	defs := t.TempDir()
	writeDef(t, filepath.Join(defs, "rs.toml"), fmt.Sprintf(`type = "sink"
key = "rr_rs"
path = "libpicomq_connector_redshift_sink"

[[topics]]
topics = [%q]
schema = "json"
batch_length = 20
poll_interval = "100ms"
consumer_group = %q
errors_tolerance = "all"
`, topic, group)+redshiftPluginConfig(svc, emu.DSN(db.Name), svc.NewBucket(t), "rr_orders")+"include_metadata = false\n")
	rt := startConnect(t, brokers, defs)
	waitTopicAtEnd(t, adm, group, topic, 90*time.Second, rt)
	if code := rt.stop(); code != 0 {
		t.Fatalf("picomq-connect exit code %d\n%s", code, rt.tail())
	}
	// rows returns the payload ids of the target, failing on a record id
	// that is not the record's original topic:0:offset.
	rows := func() []int64 {
		t.Helper()
		q, err := conn.Query(ctx, `SELECT id, payload FROM rr_orders`, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		var ids []int64
		for q.Next() {
			var rid, payload string
			if err := q.Scan(&rid, &payload); err != nil {
				t.Fatal(err)
			}
			var id int64
			if _, err := fmt.Sscanf(payload, `{"id":%d`, &id); err != nil {
				t.Fatalf("payload %q", payload)
			}
			if want := fmt.Sprintf("%s:0:%d", topic, recs[id].Offset); rid != want {
				t.Errorf("id %d has record id %q, want its original %q", id, rid, want)
			}
			ids = append(ids, id)
		}
		if err := q.Err(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		return ids
	}
	var short []int64
	for id := range int64(n) {
		if !slices.Contains(long, id) && !slices.Contains(tooLong, id) {
			short = append(short, id)
		}
	}
	if got := rows(); !slices.Equal(got, short) {
		t.Fatalf("rows after the first run %v, want the %d short ones", head(got), len(short))
	}

	// The fix, as on Redshift when ALTER COLUMN cannot do it: a deep copy
	// into a table with the wider column (the staging table is empty: made
	// again).
	// (The emulator has no ALTER TABLE: the copy goes through a second
	// table both ways.)
	const wide = `(id VARCHAR(512), pico_key VARCHAR(MAX), payload VARCHAR(1000), created_at VARCHAR)`
	exec(`CREATE TABLE rr_orders_copy ` + wide)
	exec(`INSERT INTO rr_orders_copy SELECT * FROM rr_orders`)
	exec(`DROP TABLE rr_orders`)
	exec(`CREATE TABLE rr_orders ` + wide)
	exec(`INSERT INTO rr_orders SELECT * FROM rr_orders_copy`)
	exec(`DROP TABLE rr_orders_copy`)
	exec(`DROP TABLE staging_rr_orders`)
	exec(`CREATE TABLE staging_rr_orders ` + wide)
	want := slices.Sorted(slices.Values(append(slices.Clone(short), long...)))
	bad := len(long) + len(tooLong)
	for pass := 1; pass <= 2; pass++ {
		code, out := runRedrive(t, rt.bin, brokers, defs)
		if code != 0 {
			t.Fatalf("redrive %d: exit code %d\n%s", pass, code, out)
		}
		if got := rows(); !slices.Equal(got, want) {
			t.Fatalf("redrive %d: rows %v (%d), want each of the %d once\n%s", pass, head(got), len(got), len(want), out)
		}
		letters := readDeadLetters(t, brokers, topic, bad+pass)
		if len(letters) != bad+pass {
			t.Fatalf("redrive %d: %d dead letters, want %d", pass, len(letters), bad+pass)
		}
		var attempts []string
		for _, l := range letters {
			h := headers(l)
			if a, ok := h[metadata.RedriveAttempts]; ok {
				if h[metadata.DeadLetterOffset] != strconv.FormatInt(recs[31].Offset, 10) || h[metadata.DeadLetterClass] != "size" {
					t.Errorf("redrive %d: letter again of offset %s class %s, want id 31's, size", pass, h[metadata.DeadLetterOffset], h[metadata.DeadLetterClass])
				}
				attempts = append(attempts, a)
			}
		}
		slices.Sort(attempts)
		if wantA := []string{"1", "2"}[:pass]; !slices.Equal(attempts, wantA) {
			t.Errorf("redrive %d: pico_redrive_attempts %v, want %v", pass, attempts, wantA)
		}
	}
}
