package redshifttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
)

// The variables that point the suite at a real cluster. DSN and bucket
// together switch it on; the rest complete it.
const (
	// RealDSNEnv is the connection string of a real Redshift database the
	// test account may create and drop tables in (its password is kept out
	// of logs like any other).
	RealDSNEnv = "PICOMQ_TEST_REDSHIFT_DSN"
	// RealBucketEnv is an S3 bucket for the staging files; each test writes
	// under a prefix of its own and deletes it afterwards.
	RealBucketEnv = "PICOMQ_TEST_REDSHIFT_S3_BUCKET"
	// RealRegionEnv is the bucket's region.
	RealRegionEnv = "PICOMQ_TEST_REDSHIFT_S3_REGION"
	// RealRoleEnv is the IAM role attached to the cluster that COPY uses
	// to read the bucket (aws_iam_role).
	RealRoleEnv = "PICOMQ_TEST_REDSHIFT_IAM_ROLE"
	// RealAccessKeyEnv and RealSecretKeyEnv are static keys for the uploads
	// and the test's own listing; unset, the default AWS chain is used.
	RealAccessKeyEnv = "PICOMQ_TEST_REDSHIFT_S3_ACCESS_KEY"
	RealSecretKeyEnv = "PICOMQ_TEST_REDSHIFT_S3_SECRET_KEY"
)

// ConnectorName is the name of every test connector.
const ConnectorName = "Orders to Redshift"

// Env is one test's Redshift: a fresh database behind a fresh emulator
// (Emu) and a fresh bucket, or a real cluster and a prefix of the real
// bucket of its own.
type Env struct {
	t   *testing.T
	Ctx context.Context
	// Emu is the emulator; nil against a real cluster (see NeedEmulator).
	Emu    *rsemu.Server
	Bucket string
	S3     *s3.Client
	// DB reads what landed: straight to the PostgreSQL backend under the
	// emulator (so reads are not in its statement log), the cluster
	// itself otherwise.
	DB *pgxpool.Pool

	dsn     string         // the sink's connection_string
	base    map[string]any // the destination's part of plugin_config
	prefix  string         // the root of every s3_prefix; "" with a fresh bucket
	suffix  string         // appended to table names on a real cluster
	secrets []string

	mu     sync.Mutex
	tables map[string]bool // real cluster: tables to drop at the end
}

// Real reports whether the suite runs against a real cluster.
func Real() bool { return os.Getenv(RealDSNEnv) != "" }

// NewEnv sets up the destination of one test. Without the services (and
// without a real cluster) the test fails; it never skips.
func NewEnv(t *testing.T) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	if Real() {
		return newRealEnv(t, ctx)
	}
	svc := services.Require(t)
	db := svc.NewDatabase(t)
	e := &Env{t: t, Ctx: ctx, Bucket: svc.NewBucket(t), S3: svc.S3Client()}
	pool, err := pgxpool.New(ctx, db.DSN)
	if err != nil {
		t.Fatalf("backend pool: %v", err)
	}
	t.Cleanup(pool.Close)
	e.DB = pool
	e.Emu = rsemu.NewTest(t, rsemu.Config{
		BackendDSN:  db.DSN,
		S3Endpoint:  svc.S3Endpoint,
		S3AccessKey: svc.S3AccessKey,
		S3SecretKey: svc.S3SecretKey,
		S3Region:    svc.S3Region,
	})
	e.dsn = e.Emu.DSN(db.Name)
	e.base = map[string]any{
		"aws_iam_role":          rsemu.DefaultRole,
		"aws_region":            svc.S3Region,
		"s3_endpoint":           svc.S3Endpoint,
		"aws_access_key_id":     svc.S3AccessKey,
		"aws_secret_access_key": svc.S3SecretKey,
	}
	e.secrets = []string{svc.S3SecretKey, svc.S3AccessKey, password(svc.PGDSN)}
	return e
}

func newRealEnv(t *testing.T, ctx context.Context) *Env {
	t.Helper()
	for _, k := range []string{RealBucketEnv, RealRegionEnv, RealRoleEnv} {
		if os.Getenv(k) == "" {
			t.Fatalf("%s is set but %s is not: a real cluster needs the bucket, its region and the IAM role as well (docs/redshift.md)", RealDSNEnv, k)
		}
	}
	dsn, region := os.Getenv(RealDSNEnv), os.Getenv(RealRegionEnv)
	e := &Env{t: t, Ctx: ctx, dsn: dsn, Bucket: os.Getenv(RealBucketEnv), tables: map[string]bool{}}
	id := randomHex(4)
	e.suffix = "_t" + id
	e.prefix = "picomq-test/" + id + "/"
	e.base = map[string]any{"aws_iam_role": os.Getenv(RealRoleEnv), "aws_region": region}
	opts := []func(*config.LoadOptions) error{config.WithRegion(region)}
	if ak, sk := os.Getenv(RealAccessKeyEnv), os.Getenv(RealSecretKeyEnv); ak != "" {
		e.base["aws_access_key_id"], e.base["aws_secret_access_key"] = ak, sk
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(ak, sk, "")))
		e.secrets = append(e.secrets, ak, sk)
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		t.Fatalf("AWS configuration: %v", err)
	}
	e.S3 = s3.NewFromConfig(cfg)
	e.secrets = append(e.secrets, password(dsn))
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to the cluster: %v", err)
	}
	e.DB = pool
	t.Cleanup(func() {
		defer pool.Close()
		if t.Skipped() { // NeedEmulator skips before anything is written
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		e.mu.Lock()
		defer e.mu.Unlock()
		for tbl := range e.tables {
			for _, name := range []string{tbl, "staging_" + tbl, "offsets_" + tbl} { // offsets_: write_mode = upsert
				if _, err := pool.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
					t.Errorf("drop %s: %v", name, err)
				}
			}
		}
		keys, err := services.Keys(ctx, e.S3, e.Bucket, e.prefix)
		if err != nil {
			t.Errorf("list %s: %v", e.prefix, err)
		}
		for _, k := range keys {
			if _, err := e.S3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(e.Bucket), Key: aws.String(k)}); err != nil {
				t.Errorf("delete %s: %v", k, err)
			}
		}
	})
	return e
}

// NeedEmulator skips the test on a real cluster, where what it needs (the
// emulator's fault injection or statement log) does not exist.
func (e *Env) NeedEmulator(why string) *rsemu.Server {
	e.t.Helper()
	if e.Emu == nil {
		e.t.Skipf("needs the Redshift emulator (%s); not available against a real cluster", why)
	}
	return e.Emu
}

// Table is the name of a test table: name itself under the emulator (each
// test has a fresh database), name with a run suffix on a real cluster,
// where it is dropped (with its staging twin) at the end of the test.
func (e *Env) Table(name string) string {
	if e.suffix == "" {
		return name
	}
	name += e.suffix
	if !strings.Contains(name, "{") {
		e.mu.Lock()
		e.tables[name] = true
		e.mu.Unlock()
	}
	return name
}

// Config is a working plugin_config for this destination with short retry
// delays: the quick start's, pointed at it. Overrides replace keys, or
// remove them with a nil value; an s3_prefix override stays under the
// test's own root.
func (e *Env) Config(overrides map[string]any) map[string]any {
	cfg := map[string]any{
		"connection_string": e.dsn,
		"target_table":      e.Table("orders_{topic_segment[-1]}"),
		"s3_bucket":         e.Bucket,
		"s3_prefix":         e.prefix + "redshift/orders",
		"retry_delay":       "10ms",
	}
	for k, v := range e.base {
		cfg[k] = v
	}
	for k, v := range overrides {
		switch {
		case v == nil:
			delete(cfg, k)
		case k == "s3_prefix" && e.prefix != "":
			// Under the test's root; a leading slash would make "//".
			cfg[k] = e.prefix + strings.TrimPrefix(fmt.Sprint(v), "/")
		default:
			cfg[k] = v
		}
	}
	return cfg
}

// DSN is the sink's connection_string for this destination.
func (e *Env) DSN() string { return e.dsn }

// Secrets are the destination's secrets: no log line may carry them.
func (e *Env) Secrets() []string { return e.secrets }

// Start starts a runtime of d whose log lines are checked for the
// destination's secrets.
func (e *Env) Start(d sinkdriver.Driver) *Runtime {
	return &Runtime{env: e, rt: d.Start(e.t, e.secrets...)}
}

// Runtime is one connector runtime of a test.
type Runtime struct {
	env *Env
	rt  sinkdriver.Runtime
}

// Open opens an instance and closes it at the end of the test.
func (r *Runtime) Open(key string, cfg map[string]any) sinkdriver.Instance {
	t := r.env.t
	t.Helper()
	inst, err := r.rt.Open(sinkdriver.Definition{Key: key, Name: ConnectorName, Config: cfg})
	if err != nil {
		t.Fatalf("open %s: %v", key, err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			if err := inst.Close(); err != nil {
				t.Errorf("close %s: %v", key, err)
			}
		}
	})
	return &closeOnce{Instance: inst, closed: &closed}
}

// OpenErr opens an instance that must fail and returns the plugin's status.
func (r *Runtime) OpenErr(key string, cfg map[string]any) *StatusError {
	r.env.t.Helper()
	return openErr(r.env.t, r.rt, key, cfg)
}

// openErr opens an instance of rt that must fail and returns the plugin's
// status.
func openErr(t *testing.T, rt sinkdriver.Runtime, key string, cfg map[string]any) *StatusError {
	t.Helper()
	inst, err := rt.Open(sinkdriver.Definition{Key: key, Name: ConnectorName, Config: cfg})
	if err == nil {
		_ = inst.Close()
		t.Fatalf("open %s succeeded, want an error", key)
	}
	return asStatus(t, err)
}

// closeOnce lets a test close an instance itself (a "crash") without the
// cleanup closing it again.
type closeOnce struct {
	sinkdriver.Instance
	closed *bool
}

func (c *closeOnce) Close() error {
	*c.closed = true
	return c.Instance.Close()
}

// Row is one row of a table: column name to value (string, int64, []byte or
// nil for NULL).
type Row map[string]any

// Rows reads every row of table, ordered by offset (the last part of id).
func (e *Env) Rows(table string) []Row {
	e.t.Helper()
	return ReadRows(e.t, e.Ctx, e.DB, table)
}

// ReadRows reads every row of table through db, ordered by offset (the
// last part of id). The e2e package reads its own worlds with it too.
func ReadRows(t testing.TB, ctx context.Context, db *pgxpool.Pool, table string) []Row {
	t.Helper()
	q := "SELECT * FROM " + pgx.Identifier{table}.Sanitize()
	rs, err := db.Query(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	out, err := pgx.CollectRows(rs, func(cr pgx.CollectableRow) (Row, error) {
		vals, err := cr.Values()
		if err != nil {
			return nil, err
		}
		r := Row{}
		for i, fd := range cr.FieldDescriptions() {
			r[fd.Name] = vals[i]
		}
		return r, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	sort.Slice(out, func(i, j int) bool { return OffsetOf(out[i]) < OffsetOf(out[j]) })
	return out
}

// OffsetOf is the offset in a row's id (topic:partition:offset).
func OffsetOf(r Row) uint64 {
	id, _ := r["id"].(string)
	n, _ := strconv.ParseUint(id[strings.LastIndexByte(id, ':')+1:], 10, 64)
	return n
}

// Count is the number of rows in table.
func (e *Env) Count(table string) int {
	e.t.Helper()
	return CountRows(e.t, e.Ctx, e.DB, table)
}

// CountRows is the number of rows in table, read through db.
func CountRows(t testing.TB, ctx context.Context, db *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// IDs returns the distinct ids of table and how many rows it has.
func (e *Env) IDs(table string) (map[string]bool, int) {
	e.t.Helper()
	rs, err := e.DB.Query(e.Ctx, "SELECT id FROM "+pgx.Identifier{table}.Sanitize())
	if err != nil {
		e.t.Fatal(err)
	}
	all, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	set := map[string]bool{}
	for _, id := range all {
		set[id] = true
	}
	return set, len(all)
}

// ExactlyOnce checks table holds exactly one row for each offset in
// [from, to] of topic and nothing else, and that its staging twin is empty.
func (e *Env) ExactlyOnce(table, topic string, from, to uint64) {
	e.t.Helper()
	CheckExactlyOnce(e.t, e.Ctx, e.DB, table, topic, from, to)
}

// CheckExactlyOnce is ExactlyOnce for a table read through db.
func CheckExactlyOnce(t testing.TB, ctx context.Context, db *pgxpool.Pool, table, topic string, from, to uint64) {
	t.Helper()
	rs, err := db.Query(ctx, "SELECT id FROM "+pgx.Identifier{table}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	for off := from; off <= to; off++ {
		id := fmt.Sprintf("%s:0:%d", topic, off)
		if seen[id] != 1 {
			t.Errorf("%s: %d rows for %s, want exactly one", table, seen[id], id)
		}
		delete(seen, id)
	}
	if len(seen) != 0 {
		t.Errorf("%s: unexpected ids %v", table, seen)
	}
	if n := CountRows(t, ctx, db, "staging_"+table); n != 0 {
		t.Errorf("staging_%s holds %d rows", table, n)
	}
}

// Objects lists the keys under prefix (below the test's own root).
func (e *Env) Objects(prefix string) []string {
	e.t.Helper()
	keys, err := services.Keys(e.Ctx, e.S3, e.Bucket, e.prefix+prefix)
	if err != nil {
		e.t.Fatalf("list %s: %v", prefix, err)
	}
	for i, k := range keys {
		keys[i] = strings.TrimPrefix(k, e.prefix)
	}
	return keys
}

// Exec runs sql as an operator would: through the emulator, or on the
// cluster.
func (e *Env) Exec(sql string) {
	e.t.Helper()
	if e.Emu == nil {
		if _, err := e.DB.Exec(e.Ctx, sql); err != nil {
			e.t.Fatalf("%s: %v", sql, err)
		}
		return
	}
	conn, err := pgx.Connect(e.Ctx, e.dsn)
	if err != nil {
		e.t.Fatalf("connect through the emulator: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(e.Ctx, sql); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

// Columns lists table's columns in order.
func (e *Env) Columns(table string) []string {
	e.t.Helper()
	rs, err := e.DB.Query(e.Ctx, `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
		pgx.Identifier{table}.Sanitize())
	if err != nil {
		e.t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		e.t.Fatalf("columns of %s: %v", table, err)
	}
	return cols
}

// FirstWords is the emulator's statement log reduced to each statement's
// first word, upper-cased, joined by spaces.
func FirstWords(emu *rsemu.Server) string {
	var out []string
	for _, s := range emu.Statements() {
		if f := strings.Fields(s); len(f) > 0 {
			out = append(out, strings.ToUpper(f[0]))
		}
	}
	return strings.Join(out, " ")
}

func password(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			return pw
		}
	}
	return ""
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
