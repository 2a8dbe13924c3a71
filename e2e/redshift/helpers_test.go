package redshift_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/redshifttest"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

const libName = "libpicomq_connector_redshift_sink.so"

// libPath is the sink library buildscripts/build.sh built (testenv.Library).
// A missing build fails the test; it never skips.
func libPath(t testing.TB) string {
	t.Helper()
	return testenv.Library(t, libName)
}

// connector is one C host process with the sink library loaded: what one
// connector runtime is. Killing it is a crash.
type connector struct {
	t    *testing.T
	host *hostclient.Host
	lib  *hostclient.Lib
}

func startConnector(t *testing.T, opts ...hostclient.Option) *connector {
	t.Helper()
	h := hosttest.StartTest(t, hosttest.BuildHost(t), opts...)
	lib, err := h.Load(libPath(t))
	if err != nil {
		t.Fatal(err)
	}
	// No plugin may log for an instance after its close returned, and no
	// log line may carry the services' secrets, which every test's
	// configuration holds.
	secrets := serviceSecrets()
	t.Cleanup(func() {
		for _, l := range h.Logs() {
			if l.Late {
				t.Errorf("log line after close: %s", l)
			}
			for _, s := range secrets {
				if strings.Contains(l.Message, s) {
					t.Errorf("log line carries a secret: %s", l)
				}
			}
		}
	})
	return &connector{t: t, host: h, lib: lib}
}

// serviceSecrets are the PostgreSQL password and the S3 keys of the
// services, when they are configured.
func serviceSecrets() []string {
	svc, err := services.Lookup()
	if err != nil {
		return nil
	}
	out := []string{svc.S3SecretKey, svc.S3AccessKey}
	if u, err := url.Parse(svc.PGDSN); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			out = append(out, pw)
		}
	}
	return out
}

func definition(key string, cfg map[string]any) string {
	b, err := json.Marshal(map[string]any{"key": key, "name": "Orders to Redshift", "version": 0, "plugin_config": cfg})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// open opens an instance and closes it at the end of the test (an instance
// of a killed host is gone with it).
func (r *connector) open(key string, cfg map[string]any) *hostclient.Instance {
	r.t.Helper()
	inst, err := r.lib.Open(definition(key, cfg))
	if err != nil {
		r.t.Fatalf("open %s: %v\nlogs:\n%s", key, err, logText(r.host.Logs()))
	}
	r.t.Cleanup(func() {
		if r.host.Err() == nil {
			if err := inst.Close(); err != nil {
				r.t.Errorf("close %s: %v", key, err)
			}
		}
	})
	return inst
}

// openErr opens an instance that must fail and returns the host's view of
// the failure.
func (r *connector) openErr(key string, cfg map[string]any) *hostclient.StatusError {
	r.t.Helper()
	inst, err := r.lib.Open(definition(key, cfg))
	if err == nil {
		_ = inst.Close()
		r.t.Fatalf("open %s succeeded, want an error", key)
	}
	var se *hostclient.StatusError
	if !errors.As(err, &se) {
		r.t.Fatalf("open %s: %v, want a status from the plugin", key, err)
	}
	return se
}

// world is one test's Redshift: a fresh database behind an emulator, a
// fresh bucket, a direct pool to the backend for reading what landed, and
// a connector.
type world struct {
	t      *testing.T
	svc    services.Services
	db     services.Database
	emu    *rsemu.Server
	bucket string
	s3     *s3.Client
	pg     *pgxpool.Pool // straight to the backend: reads are not in the emulator's statement log
	ctx    context.Context
	*connector
}

func newWorld(t *testing.T, opts ...hostclient.Option) *world {
	t.Helper()
	svc := services.Require(t)
	w := &world{t: t, svc: svc, db: svc.NewDatabase(t), bucket: svc.NewBucket(t), s3: svc.S3Client()}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	w.ctx = ctx
	pool, err := pgxpool.New(ctx, w.db.DSN)
	if err != nil {
		t.Fatalf("backend pool: %v", err)
	}
	t.Cleanup(pool.Close)
	w.pg = pool
	w.emu = w.newEmulator(t)
	w.connector = startConnector(t, opts...)
	return w
}

// newEmulator starts another emulator on the world's database and S3;
// opts change its configuration (TLS, for instance).
func (w *world) newEmulator(t *testing.T, opts ...func(*rsemu.Config)) *rsemu.Server {
	cfg := rsemu.Config{
		BackendDSN:  w.db.DSN,
		S3Endpoint:  w.svc.S3Endpoint,
		S3AccessKey: w.svc.S3AccessKey,
		S3SecretKey: w.svc.S3SecretKey,
		S3Region:    w.svc.S3Region,
	}
	for _, o := range opts {
		o(&cfg)
	}
	return rsemu.NewTest(t, cfg)
}

// fork is a world for a (parallel) subtest on the same database and bucket,
// with an emulator of its own (so its faults and statement log are its own)
// and a connector of its own.
func (w *world) fork(t *testing.T, opts ...hostclient.Option) *world {
	t.Helper()
	f := *w
	f.t = t
	f.emu = w.newEmulator(t)
	f.connector = startConnector(t, opts...)
	return &f
}

// config is a working plugin_config: the quick start's, pointed at this
// world, with short retry delays. Overrides replace keys, or remove them
// with a nil value.
func (w *world) config(overrides map[string]any) map[string]any {
	cfg := map[string]any{
		"connection_string":     w.emu.DSN(w.db.Name),
		"target_table":          "orders_{topic_segment[-1]}",
		"aws_iam_role":          rsemu.DefaultRole,
		"s3_bucket":             w.bucket,
		"s3_prefix":             "redshift/orders",
		"aws_region":            w.svc.S3Region,
		"s3_endpoint":           w.svc.S3Endpoint,
		"aws_access_key_id":     w.svc.S3AccessKey,
		"aws_secret_access_key": w.svc.S3SecretKey,
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

// batch is n JSON records of topic from offset first (the suite's).
var batch = redshifttest.Batch

func consume(t *testing.T, inst *hostclient.Instance, b hostclient.Batch) {
	t.Helper()
	if err := inst.Consume(b); err != nil {
		t.Fatalf("consume %s offsets %d..%d: %v", b.Topic, b.Records[0].Offset, b.Records[len(b.Records)-1].Offset, err)
	}
}

// wantStatus checks err is a status from the plugin with code and a
// message containing each of contains (the suite's).
var wantStatus = redshifttest.WantStatus

// row is one row of a table (the suite's Row).
type row = redshifttest.Row

// rows reads every row of table from the backend, ordered by offset.
func (w *world) rows(table string) []row {
	w.t.Helper()
	return redshifttest.ReadRows(w.t, w.ctx, w.pg, table)
}

var offsetOf = redshifttest.OffsetOf

// columns lists table's columns in order, as the backend has them.
func (w *world) columns(table string) []string {
	w.t.Helper()
	rs, err := w.pg.Query(w.ctx, `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
		pgx.Identifier{table}.Sanitize())
	if err != nil {
		w.t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		w.t.Fatalf("columns of %s: %v", table, err)
	}
	return cols
}

// tableDef is what pg_table_def shows for table through the emulator, as
// "column type" in column order.
func (w *world) tableDef(table string) []string {
	w.t.Helper()
	conn, err := pgx.Connect(w.ctx, w.emu.DSN(w.db.Name))
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rs, err := conn.Query(w.ctx, `SELECT "column", type FROM pg_table_def WHERE tablename = $1`, table)
	if err != nil {
		w.t.Fatal(err)
	}
	defs, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (string, error) {
		var c, typ string
		err := r.Scan(&c, &typ)
		return c + " " + typ, err
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return defs
}

// count is the number of rows in table, read from the backend.
func (w *world) count(table string) int {
	w.t.Helper()
	return redshifttest.CountRows(w.t, w.ctx, w.pg, table)
}

// exactlyOnce checks table holds exactly one row for each offset in
// [from, to] of topic and nothing else, and that its staging twin is empty.
func (w *world) exactlyOnce(table, topic string, from, to uint64) {
	w.t.Helper()
	redshifttest.CheckExactlyOnce(w.t, w.ctx, w.pg, table, topic, from, to)
}

// objects lists the keys under prefix in the world's bucket.
func (w *world) objects(prefix string) []string {
	w.t.Helper()
	keys, err := services.Keys(w.ctx, w.s3, w.bucket, prefix)
	if err != nil {
		w.t.Fatalf("list %s: %v", prefix, err)
	}
	return keys
}

// firstWords is the emulator's statement log reduced to each statement's
// first word, upper-cased, joined by spaces.
func firstWords(emu *rsemu.Server) string {
	var out []string
	for _, s := range emu.Statements() {
		if f := strings.Fields(s); len(f) > 0 {
			out = append(out, strings.ToUpper(f[0]))
		}
	}
	return strings.Join(out, " ")
}

func logText(lines []hostclient.LogLine) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s %s\n", l.Level, l.Message)
	}
	return b.String()
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// emuConn is a client connection through the emulator, for setting tables
// up the way an operator would.
func (w *world) emuConn() *pgx.Conn {
	w.t.Helper()
	conn, err := pgx.Connect(w.ctx, w.emu.DSN(w.db.Name))
	if err != nil {
		w.t.Fatalf("connect through the emulator: %v", err)
	}
	w.t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// exactlyOnceTopics checks table holds exactly one row per offset
// [0, n) of each topic and nothing else.
func (w *world) exactlyOnceTopics(table string, topics map[string]uint64) {
	w.t.Helper()
	redshifttest.CheckExactlyOnceTopics(w.t, w.rows(table), w.count("staging_"+table), topics)
}
