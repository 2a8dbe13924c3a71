package redshift_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
)

// rig is one integration test's world: a fresh PostgreSQL database behind
// the Redshift emulator, a fresh MinIO bucket, and sinks opened in-process
// through the SDK's Go API (the same calls the C ABI makes).
//
// The services come from buildscripts/services.sh (make services); a test
// without them fails, it never skips.
type rig struct {
	t      *testing.T
	svc    services.Services
	db     services.Database
	emu    *rsemu.Server
	bucket string
	s3     *s3.Client
	pg     *pgx.Conn // straight to the backend: reads do not show in the statement log
	ctx    context.Context
}

func newRig(t *testing.T) *rig {
	t.Helper()
	svc := services.Require(t)
	db := svc.NewDatabase(t)
	emu := rsemu.NewTest(t, rsemu.Config{
		BackendDSN:  db.DSN,
		S3Endpoint:  svc.S3Endpoint,
		S3AccessKey: svc.S3AccessKey,
		S3SecretKey: svc.S3SecretKey,
		S3Region:    svc.S3Region,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	pg, err := pgx.Connect(ctx, db.DSN)
	if err != nil {
		t.Fatalf("connect to the backend: %v", err)
	}
	t.Cleanup(func() { pg.Close(context.Background()) })
	return &rig{t: t, svc: svc, db: db, emu: emu, bucket: svc.NewBucket(t), s3: svc.S3Client(), pg: pg, ctx: ctx}
}

// config is a working plugin_config for this rig with short retry delays;
// the overrides replace or (with a nil value) remove keys.
func (r *rig) config(overrides map[string]any) map[string]any {
	cfg := map[string]any{
		"connection_string":     r.emu.DSN(r.db.Name),
		"target_table":          "orders_{topic_segment[-1]}",
		"aws_iam_role":          rsemu.DefaultRole,
		"s3_bucket":             r.bucket,
		"s3_prefix":             "redshift/orders",
		"aws_region":            r.svc.S3Region,
		"s3_endpoint":           r.svc.S3Endpoint,
		"aws_access_key_id":     r.svc.S3AccessKey,
		"aws_secret_access_key": r.svc.S3SecretKey,
		"retry_delay":           "10ms",
	}
	for k, v := range overrides {
		if v == nil {
			delete(cfg, k)
		} else {
			cfg[k] = v
		}
	}
	return cfg
}

func definition(t testing.TB, key string, cfg map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"key": key, "name": "Orders to Redshift", "version": 0, "plugin_config": cfg})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// open opens a sink instance and closes it at the end of the test.
func (r *rig) open(key string, cfg map[string]any) (uint64, *sdktest.Logs) {
	r.t.Helper()
	logs := &sdktest.Logs{}
	h, err := sdk.Open(definition(r.t, key, cfg), logs.Log)
	if err != nil {
		r.t.Fatalf("open: %v\n%s", err, logs.String())
	}
	r.t.Cleanup(func() { _ = sdk.Close(h) })
	return h, logs
}

// batch is n JSON records of topic from offset first. Even offsets have a
// key, odd ones none.
func batch(topic string, first uint64, n int) *sdk.Batch {
	b := &sdk.Batch{Topic: topic, Schema: "json", Attempt: 1}
	for i := 0; i < n; i++ {
		off := first + uint64(i)
		rec := sdk.Record{Offset: off, Timestamp: 1732878480000 + int64(off), Payload: []byte(fmt.Sprintf(`{"n":%d}`, off))}
		if off%2 == 0 {
			rec.Key = []byte(fmt.Sprintf("key-%d", off))
		}
		b.Records = append(b.Records, rec)
	}
	return b
}

// count is the number of rows in table (read from the backend).
func (r *rig) count(table string) int {
	r.t.Helper()
	var n int
	if err := r.pg.QueryRow(r.ctx, "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
		r.t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// ids returns the distinct ids of table and how many rows it has.
func (r *rig) ids(table string) (map[string]bool, int) {
	r.t.Helper()
	rs, err := r.pg.Query(r.ctx, "SELECT id FROM "+pgx.Identifier{table}.Sanitize())
	if err != nil {
		r.t.Fatal(err)
	}
	all, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		r.t.Fatal(err)
	}
	set := map[string]bool{}
	for _, id := range all {
		set[id] = true
	}
	return set, len(all)
}

// statements returns the statement log reduced to each statement's first
// word (BEGIN, LOCK, COPY, ...), upper-cased, skipping the sink's reads.
func (r *rig) statements() []string {
	var out []string
	for _, s := range r.emu.Statements() {
		f := strings.Fields(s)
		if len(f) == 0 {
			continue
		}
		out = append(out, strings.ToUpper(f[0]))
	}
	return out
}

// metrics returns the sink's own counters of an instance.
func metrics(t *testing.T, h uint64) map[string]float64 {
	t.Helper()
	raw, err := sdk.Metrics(h)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Sink map[string]float64 `json:"sink"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return m.Sink
}

// mustConsume consumes b and fails the test on an error.
func mustConsume(t *testing.T, h uint64, b *sdk.Batch) {
	t.Helper()
	if err := sdk.Consume(h, b); err != nil {
		t.Fatalf("consume %s: %v", b, err)
	}
}

// rsemuRole is the IAM role attached to the emulated cluster.
const rsemuRole = rsemu.DefaultRole

// emuConn is a client connection through the emulator, for setting up
// tables the way an operator would.
func (r *rig) emuConn() *pgx.Conn {
	r.t.Helper()
	conn, err := pgx.Connect(r.ctx, r.emu.DSN(r.db.Name))
	if err != nil {
		r.t.Fatalf("connect through the emulator: %v", err)
	}
	r.t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func (r *rig) execEmu(conn *pgx.Conn, sql string) {
	r.t.Helper()
	if _, err := conn.Exec(r.ctx, sql); err != nil {
		r.t.Fatalf("%s: %v", sql, err)
	}
}
