// Command pipelinedemo is `make demo`: the whole pipeline on one machine.
// It starts an in-process Kafka-protocol broker (franz-go's kfake),
// produces sample orders to orders.eu and orders.us (plus one record that
// is not JSON, which goes to the dead-letter topic), runs the built picomq-connect binary on the two example
// definitions in examples/definitions/ — unchanged, pointed at local
// destinations through the plugins' environment overrides — waits until
// every consumer group has committed the end offsets, stops the runtime
// with SIGTERM and reads the results back: the Delta tables with delta-rs,
// the Redshift tables with SQL, the dead-letter topic with a consumer.
//
// The Delta half needs only dist/ and the Python env. The Redshift half
// runs when the services are up (`make services`: PostgreSQL and MinIO);
// the Redshift emulator (plugins/redshift/rsemu) is started in-process.
//
//	go run ./tools/pipelinedemo          (make demo)
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
)

// Options configure one run.
type Options struct {
	Connect  string // the picomq-connect binary (default: dist/picomq-connect)
	Dist     string // plugin directory (default: $PICOMQ_DIST or dist/)
	Defs     string // definitions directory (default: examples/definitions)
	Work     string // where the Delta tables go (default: a temporary directory, removed)
	Records  int    // good records per topic
	Redshift string // "auto" (when the services are up), "on" or "off"
	Out      io.Writer
	Log      io.Writer // picomq-connect's own log lines
}

// Result is what the demo saw, for the test.
type Result struct {
	Produced    map[string]int              // per topic, bad record included
	Committed   map[string]map[string]int64 // group -> topic -> committed offset
	DeltaRows   map[string]int              // table (topic suffix) -> rows delta-rs reads
	RSRows      map[string]int              // table -> rows (nil when the half did not run)
	DeadLetters int                         // records in the sinks' dead-letter topics
	ExitCode    int
}

var topics = []string{"orders.eu", "orders.us"}

// The example definitions' dead_letter_topic, one each: a topic shared
// by two sinks of the same topics would mix their letters (docs/runtime.md,
// Bad records).
const (
	deltaDLQ    = "dead_letters.orders_delta"
	redshiftDLQ = "dead_letters.orders_redshift"
)

const (
	deltaGroup    = "picomq-connect-sink-orders_delta"
	redshiftGroup = "picomq-connect-sink-orders_redshift"
	deltaEnv      = "PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_"
	redshiftEnv   = "PICOMQ_CONNECTORS_SINK_ORDERS_REDSHIFT_PLUGIN_CONFIG_"
)

func main() {
	var o Options
	flag.StringVar(&o.Connect, "connect", "", "picomq-connect binary (default: dist/picomq-connect)")
	flag.StringVar(&o.Work, "dir", "", "directory for the Delta tables, kept (default: a temporary one, removed)")
	flag.IntVar(&o.Records, "records", 1000, "records per topic")
	flag.StringVar(&o.Redshift, "redshift", "auto", "auto (when `make services` is up), on or off")
	verbose := flag.Bool("v", false, "show picomq-connect's log")
	flag.Parse()
	o.Out = os.Stdout
	if *verbose {
		o.Log = os.Stderr
	}
	if _, err := Run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// Run runs the demo once.
func Run(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	if o.Dist == "" {
		if o.Dist, err = testenv.DistDir(); err != nil {
			return nil, err
		}
	}
	if o.Connect == "" {
		o.Connect = filepath.Join(o.Dist, "picomq-connect")
	}
	if o.Defs == "" {
		o.Defs = filepath.Join(root, "examples", "definitions")
	}
	if o.Records <= 0 {
		o.Records = 1000
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	for _, p := range []string{o.Connect, filepath.Join(o.Dist, "picomq-host")} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%v: run `make build` first", err)
		}
	}
	out := o.Out
	res := &Result{Produced: map[string]int{}, Committed: map[string]map[string]int64{}, DeltaRows: map[string]int{}}

	if o.Work == "" {
		if o.Work, err = os.MkdirTemp("", "picomq-demo-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(o.Work)
	}
	py, err := exec.Command(filepath.Join(root, "buildscripts", "pyenv.sh")).Output()
	if err != nil {
		return nil, fmt.Errorf("python env (buildscripts/pyenv.sh): %w", err)
	}
	python := strings.TrimSpace(string(py))

	// The child environment: the runtime's, plus the overrides that point
	// the example definitions at this demo's destinations.
	env := os.Environ()
	lake := filepath.Join(o.Work, "lake")
	env = append(env, deltaEnv+"TABLE_URI=file://"+lake+"/{topic_segment[-1]}")
	if err := run(python, "-c", createTables, lake); err != nil {
		return nil, fmt.Errorf("create the Delta tables: %w", err)
	}
	fmt.Fprintf(out, "Delta:    created tables %s/{eu,us} with delta-rs (the sink appends to existing tables)\n", lake)

	defs := []string{filepath.Join(o.Defs, "orders_delta.toml")}
	var rs *redshift
	if o.Redshift != "off" {
		rs, err = startRedshift(ctx)
		if err != nil && o.Redshift == "on" {
			return nil, err
		}
		if err != nil {
			fmt.Fprintf(out, "Redshift: skipped (%v).\n          Start PostgreSQL and MinIO with `make services`, then `make demo` again.\n", firstLine(err))
		} else {
			defer rs.close()
			env = append(env, rs.env()...)
			defs = append(defs, filepath.Join(o.Defs, "orders_redshift.toml"))
			fmt.Fprintf(out, "Redshift: emulator on %s in front of PostgreSQL database %s, Parquet files to MinIO bucket %s\n",
				rs.emu.Addr(), rs.db, rs.bucket)
		}
	}

	// The broker, with the topics and the dead-letter topic.
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, append(topics, deltaDLQ, redshiftDLQ)...))
	if err != nil {
		return nil, err
	}
	defer kf.Close()
	brokers := strings.Join(kf.ListenAddrs(), ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	fmt.Fprintf(out, "Broker:   kfake (franz-go's in-process Kafka) on %s\n", brokers)

	if err := produce(ctx, cl, o.Records, res); err != nil {
		return nil, err
	}
	for _, t := range topics {
		fmt.Fprintf(out, "Produced: %d records to %s\n", res.Produced[t], t)
	}
	fmt.Fprintln(out, "          (one record of orders.eu is not JSON: it goes to each sink's dead-letter topic)")

	args := append([]string{"--brokers", brokers, "--plugin-dir", o.Dist}, defs...)
	fmt.Fprintf(out, "Running:  %s %s\n", filepath.Base(o.Connect), strings.Join(relative(root, args), " "))
	cmd := exec.Command(o.Connect, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = o.Log, o.Log
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	groups := []string{deltaGroup}
	if rs != nil {
		groups = append(groups, redshiftGroup)
	}
	if err := waitCommitted(ctx, kadm.NewClient(cl), groups, res, exited); err != nil {
		_ = cmd.Process.Kill()
		return nil, err
	}
	fmt.Fprintf(out, "Committed after %.1fs:\n", time.Since(t0).Seconds())
	for _, g := range groups {
		for _, t := range topics {
			fmt.Fprintf(out, "  %-36s %-10s offset %d of %d\n", g, t, res.Committed[g][t], res.Produced[t])
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	err = <-exited
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.ExitCode = ee.ExitCode()
	} else if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "Stopped:  SIGTERM -> flush, one synchronous commit, exit code %d\n", res.ExitCode)

	// Read everything back with independent readers.
	rows, err := exec.Command(python, "-c", readTables, lake).Output()
	if err != nil {
		return nil, fmt.Errorf("delta-rs: %w", err)
	}
	fmt.Fprintln(out, "Read back:")
	for _, line := range strings.Split(strings.TrimSpace(string(rows)), "\n") {
		var table string
		var n, versions int
		if _, err := fmt.Sscan(line, &table, &n, &versions); err != nil {
			return nil, fmt.Errorf("delta-rs output %q: %v", rows, err)
		}
		res.DeltaRows[table] = n
		fmt.Fprintf(out, "  Delta    %-10s %5d rows (delta-rs, %d table versions)\n", table, n, versions)
	}
	if rs != nil {
		if res.RSRows, err = rs.count(ctx); err != nil {
			return nil, err
		}
		for _, t := range []string{"orders_eu", "orders_us"} {
			fmt.Fprintf(out, "  Redshift %-10s %5d rows (SQL)\n", t, res.RSRows[t])
		}
	}
	dlqs := []string{deltaDLQ}
	if rs != nil {
		dlqs = append(dlqs, redshiftDLQ)
	}
	for _, dlq := range dlqs {
		n, err := countTopic(ctx, kf.ListenAddrs(), dlq)
		if err != nil {
			return nil, err
		}
		res.DeadLetters += n
		fmt.Fprintf(out, "  %s %d dead letter(s): the bad record (header pico_error_class=encoding)\n", dlq, n)
	}
	fmt.Fprintf(out, "Done in %.1fs.\n", time.Since(start).Seconds())
	return res, nil
}

const createTables = `
import sys, pyarrow as pa
from deltalake import write_deltalake
schema = pa.schema([("order_id", pa.int64()), ("customer", pa.string()), ("amount", pa.float64()),
                    ("created_at", pa.timestamp("us", tz="UTC")), ("region", pa.string())])
for t in ("eu", "us"):
    write_deltalake(sys.argv[1] + "/" + t, pa.Table.from_pylist([], schema=schema))
import os; sys.stdout.flush(); os._exit(0)
`

const readTables = `
import sys, os
from deltalake import DeltaTable
for t in ("eu", "us"):
    dt = DeltaTable(sys.argv[1] + "/" + t)
    ids = dt.to_pyarrow_table().column("order_id").to_pylist()
    assert len(ids) == len(set(ids)), "duplicate order_id in " + t
    print(t, len(ids), dt.version() + 1)
sys.stdout.flush(); os._exit(0)
`

// produce writes o.Records orders to each topic, and one payload that is
// not JSON in the middle of orders.eu.
func produce(ctx context.Context, cl *kgo.Client, n int, res *Result) error {
	base := time.Now().UTC().Truncate(time.Second)
	var recs []*kgo.Record
	for ti, topic := range topics {
		region := strings.TrimPrefix(topic, "orders.")
		for i := range n {
			id := ti*n + i
			ts := base.Add(time.Duration(id) * time.Millisecond)
			recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "customer-%d", id%17), Value: fmt.Appendf(nil,
				`{"order_id":%d,"customer":"customer-%d","amount":%d.%02d,"created_at":"%s","region":"%s"}`,
				id, id%17, 10+id%90, id%100, ts.Format(time.RFC3339Nano), region)})
			if ti == 0 && i == n/2 {
				recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(`{"order_id": 17, "customer": `)})
			}
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	for _, r := range recs {
		res.Produced[r.Topic]++
	}
	return nil
}

// waitCommitted waits until every group committed the end offset of every
// topic, or the runtime exited, or a minute passed.
func waitCommitted(ctx context.Context, adm *kadm.Client, groups []string, res *Result, exited chan error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		done := true
		for _, g := range groups {
			resp, err := adm.FetchOffsets(ctx, g)
			if err != nil {
				done = false
				continue
			}
			res.Committed[g] = map[string]int64{}
			for _, t := range topics {
				o, ok := resp.Lookup(t, 0)
				if ok {
					res.Committed[g][t] = o.At
				}
				if !ok || o.At != int64(res.Produced[t]) {
					done = false
				}
			}
		}
		if done {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("picomq-connect exited before committing everything (%v); run with -v for its log", err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("offsets not committed after a minute (committed: %v); run with -v for picomq-connect's log", res.Committed)
		}
	}
}

// countTopic reads a topic from the start to its end and counts the
// records.
func countTopic(ctx context.Context, brokers []string, topic string) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	end, _ := ends.Lookup(topic, 0)
	n := 0
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for int64(n) < end.Offset {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("reading %s: %w", topic, err)
		}
		n += fs.NumRecords()
	}
	return n, nil
}

// redshift is the Redshift half: a database, a bucket and the emulator.
type redshift struct {
	svc    services.Services
	emu    *rsemu.Server
	db     string
	dsn    string
	bucket string
}

func startRedshift(ctx context.Context) (*redshift, error) {
	svc, err := services.Lookup()
	if err != nil {
		return nil, err
	}
	suffix := randomHex(4)
	r := &redshift{svc: svc, db: "picomq_demo_" + suffix, bucket: "picomq-demo-" + suffix}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, svc.PGDSN)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(cctx, "CREATE DATABASE "+pgx.Identifier{r.db}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	if r.dsn, err = services.WithDatabase(svc.PGDSN, r.db); err != nil {
		r.close()
		return nil, err
	}
	if _, err := svc.S3Client().CreateBucket(cctx, &s3.CreateBucketInput{Bucket: aws.String(r.bucket)}); err != nil {
		r.close()
		return nil, fmt.Errorf("MinIO: %w", err)
	}
	r.emu, err = rsemu.New(rsemu.Config{BackendDSN: r.dsn, S3Endpoint: svc.S3Endpoint, S3AccessKey: svc.S3AccessKey,
		S3SecretKey: svc.S3SecretKey, S3Region: svc.S3Region})
	if err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// env returns the overrides that point orders_redshift.toml at the
// emulator and MinIO.
func (r *redshift) env() []string {
	return []string{
		redshiftEnv + "CONNECTION_STRING=" + r.emu.DSN(r.db),
		redshiftEnv + "AWS_IAM_ROLE=" + rsemu.DefaultRole,
		redshiftEnv + "S3_BUCKET=" + r.bucket,
		redshiftEnv + "AWS_REGION=" + r.svc.S3Region,
		redshiftEnv + "S3_ENDPOINT=" + r.svc.S3Endpoint,
		redshiftEnv + "AWS_ACCESS_KEY_ID=" + r.svc.S3AccessKey,
		redshiftEnv + "AWS_SECRET_ACCESS_KEY=" + r.svc.S3SecretKey,
	}
}

// count reads the row count per target table from PostgreSQL behind the
// emulator, failing on a duplicate record id.
func (r *redshift) count(ctx context.Context) (map[string]int, error) {
	conn, err := pgx.Connect(ctx, r.dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	out := map[string]int{}
	for _, t := range []string{"orders_eu", "orders_us"} {
		var n, ids int
		q := fmt.Sprintf("SELECT count(*), count(DISTINCT id) FROM %s", pgx.Identifier{t}.Sanitize())
		if err := conn.QueryRow(ctx, q).Scan(&n, &ids); err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		if n != ids {
			return nil, fmt.Errorf("%s: %d rows but %d distinct ids", t, n, ids)
		}
		out[t] = n
	}
	return out, nil
}

func (r *redshift) close() {
	ctx := context.Background()
	if r.emu != nil {
		_ = r.emu.Close()
	}
	s3c := r.svc.S3Client()
	_ = services.EmptyBucket(ctx, s3c, r.bucket)
	_, _ = s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(r.bucket)})
	if conn, err := pgx.Connect(ctx, r.svc.PGDSN); err == nil {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{r.db}.Sanitize()+" WITH (FORCE)")
		_ = conn.Close(ctx)
	}
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	return nil
}

// relative shortens paths under root for the printed command line.
func relative(root string, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if r, err := filepath.Rel(root, a); err == nil && !strings.HasPrefix(r, "..") && filepath.IsAbs(a) {
			a = r
		}
		out[i] = a
	}
	return out
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
