package rsemu_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
)

// Environment variables that point the behaviour tests at a real Redshift
// instead of the emulator. Tests that need the emulator's hooks (faults,
// statement log) skip themselves in that mode; everything else runs
// unchanged against both.
const (
	envRedshiftDSN    = "PICOMQ_TEST_REDSHIFT_DSN"      // libpq URL of a real cluster or workgroup
	envRedshiftRole   = "PICOMQ_TEST_REDSHIFT_IAM_ROLE" // role attached to it
	envRedshiftBucket = "PICOMQ_TEST_REDSHIFT_BUCKET"   // bucket the role can read, in the cluster's region
	envRedshiftRegion = "PICOMQ_TEST_REDSHIFT_REGION"
)

// env is what a test talks to: the emulator in front of a fresh database
// (default), or a real Redshift.
type env struct {
	t      testing.TB
	emu    *rsemu.Server // nil against a real Redshift
	dsn    string
	s3     *s3.Client
	bucket string
	role   string
	ctx    context.Context
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with the emulator's Config changed by tweak (unused
// against a real Redshift).
func newEnvWith(t testing.TB, tweak func(*rsemu.Config)) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	if dsn := os.Getenv(envRedshiftDSN); dsn != "" {
		return realEnv(t, ctx, dsn)
	}
	svc := services.Require(t)
	db := svc.NewDatabase(t)
	cfg := rsemu.Config{
		BackendDSN:  db.DSN,
		S3Endpoint:  svc.S3Endpoint,
		S3AccessKey: svc.S3AccessKey,
		S3SecretKey: svc.S3SecretKey,
		S3Region:    svc.S3Region,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	emu := rsemu.NewTest(t, cfg)
	return &env{
		t:      t,
		emu:    emu,
		dsn:    emu.DSN(db.Name),
		s3:     svc.S3Client(),
		bucket: svc.NewBucket(t),
		role:   rsemu.DefaultRole,
		ctx:    ctx,
	}
}

func realEnv(t testing.TB, ctx context.Context, dsn string) *env {
	role, bucket := os.Getenv(envRedshiftRole), os.Getenv(envRedshiftBucket)
	if role == "" || bucket == "" {
		t.Fatalf("%s is set, so %s and %s must be too", envRedshiftDSN, envRedshiftRole, envRedshiftBucket)
	}
	region := os.Getenv(envRedshiftRegion)
	if region == "" {
		region = "us-east-1"
	}
	// The default credential chain: a real run uses real AWS credentials.
	awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		t.Fatalf("AWS config: %v", err)
	}
	client := s3.NewFromConfig(awsCfg)
	return &env{t: t, dsn: dsn, s3: client, bucket: bucket, role: role, ctx: ctx}
}

// needEmulator skips tests of the emulator's own hooks on a real Redshift.
func (e *env) needEmulator(t *testing.T) {
	t.Helper()
	if e.emu == nil {
		t.Skip("uses the emulator's fault hooks or statement log")
	}
}

// connect opens a client connection through the emulator.
func (e *env) connect(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(e.ctx, e.dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func (e *env) exec(t testing.TB, conn *pgx.Conn, sql string, args ...any) pgconn.CommandTag {
	t.Helper()
	tag, err := conn.Exec(e.ctx, sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return tag
}

// put uploads data under key in the test bucket and removes it afterwards.
func (e *env) put(t testing.TB, key string, data []byte) {
	t.Helper()
	if _, err := e.s3.PutObject(e.ctx, &s3.PutObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	t.Cleanup(func() {
		_, _ = e.s3.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key)})
	})
}

// url is the s3:// URL of a key or prefix in the test bucket.
func (e *env) url(key string) string { return "s3://" + e.bucket + "/" + key }

// copySQL is the COPY the Redshift sink issues.
func (e *env) copySQL(table, cols, key string) string {
	return `COPY ` + table + ` (` + cols + `) FROM '` + e.url(key) + `' CREDENTIALS 'aws_iam_role=` + e.role + `' FORMAT AS PARQUET`
}

// writeParquet encodes rows with parquet-go.
func writeParquet[T any](t testing.TB, rows []T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pgErr asserts err is a PostgreSQL error with the SQLSTATE code and a
// message containing msg.
func pgErr(t testing.TB, err error, code, msg string) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("want PgError %s %q, got %v", code, msg, err)
	}
	if pe.Code != code || !strings.Contains(pe.Message, msg) {
		t.Fatalf("want %s %q, got %s %q (detail %q)", code, msg, pe.Code, pe.Message, pe.Detail)
	}
	return pe
}

func count(t testing.TB, e *env, conn *pgx.Conn, table string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(e.ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}
