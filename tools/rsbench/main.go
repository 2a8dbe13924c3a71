// Command rsbench measures the Redshift sink end to end: the real
// libpicomq_connector_redshift_sink.so in the C host (dist/picomq-host, one
// worker, no quarantine), loading batches of 10,000 JSON records of about
// 250 bytes into the Redshift emulator (plugins/redshift/rsemu, started in
// this process in front of a fresh PostgreSQL database of the services), with the
// Parquet files going to MinIO through a counting reverse proxy. For each
// batch_size (100, the default, 1,000 and 10,000) it prints:
//
//   - rows/s end to end: records over the wall time of the consume calls,
//     each of which returns only once its rows are committed;
//
//   - host CPU per row: the host process's utime+stime (/proc/<pid>/stat)
//     over the run divided by the rows. It is the plugin's own work —
//     pre-flight checks, Parquet and zstd encoding — plus its pgx and AWS
//     SDK clients (SigV4 signing hashes every upload), the SDK's JSON check
//     of the payloads, the Go runtime and the C host's framing. The emulator and PostgreSQL run elsewhere and
//     are not in it. For comparison the same chunks are also encoded in
//     this process with the plugin's encoder (rsparquet) alone;
//
//   - SQL round trips per chunk (requests the emulator answered: simple
//     queries and extended-protocol Syncs) and the statements they carried,
//     from the emulator's statement log;
//
//   - S3 requests per chunk, counted by the proxy in front of MinIO;
//
//   - peak RSS of the host process (VmHWM), one fresh host per batch_size.
//
//     go run ./tools/rsbench                      (make bench-redshift)
//     go run ./tools/rsbench -batches 5 -sizes 100,10000
//     go run ./tools/rsbench -copy-latency 1s -commit-latency 600ms
//     go run ./tools/rsbench -copy-latency 1s -commit-latency 600ms -partitions 48 -rate 3000 -duration 30s
//     go run ./tools/rsbench -copy-latency 1s -commit-latency 600ms -partitions 48 -rate 3000 -duration 30s -depth 2 -max-batch-latency 500ms
//
//     go run ./tools/rsbench -upsert-rows 1000000 -update-pcts 1,10,50 -batches 5   (make bench-redshift-upsert)
//
// The last is the upsert mode (upsert.go): write_mode = "upsert" against a
// table of that many keys, for each share of updates. The two before are
// the steady mode (steady.go, feed.go): many partitions at a steady
// rate, their batches in flight at once, which the sink loads in groups;
// with -depth 2 each partition keeps two batches in flight, the second
// pipelined (ABI 1.5 Follows) as picomq-connect's
// max_in_flight_per_partition does.
//
// -copy-latency and -commit-latency give the emulator a real cluster's cost per COPY and per commit
// (plugins/redshift/rsemu/README.md, "Cost model"); without it the loads
// cost what PostgreSQL on this machine costs, and small batches look cheap.
//
// Needs dist/ (make build; or $PICOMQ_DIST) and the services (.services.env from
// buildscripts/services.sh start).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/internal/testenv/workload"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsparquet"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

var (
	batches = flag.Int("batches", 5, "measured batches per batch_size (after one warm-up batch)")
	records = flag.Int("records", 10000, "records per batch, as the runtime delivers them")
	sizes   = flag.String("sizes", "100,1000,10000", "comma-separated batch_size values")
	format  = flag.String("payload-format", "varbyte", "payload_format: varbyte or text")
	copyLat = flag.Duration("copy-latency", 0, "the emulator's fixed cost per COPY (rsemu.Config.CopyLatency; a cluster: 1s)")
	commLat = flag.Duration("commit-latency", 0, "the emulator's commit queue turn per commit (rsemu.Config.CommitLatency; a cluster: 600ms)")
)

func main() { bench.Main("rsbench", run) }

type result struct {
	size       int
	rows       int
	chunks     int
	elapsed    time.Duration
	latencies  []time.Duration
	cpu        time.Duration // host process utime+stime over the measured batches
	encodeCPU  time.Duration // the same chunks encoded in-process, per row × rows
	statements map[string]int
	roundTrips int
	s3         map[string]int
	rssKB      int64
	fileBytes  int64
}

func run() error {
	var sizeList []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("bad -sizes entry %q", s)
		}
		sizeList = append(sizeList, n)
	}
	if *batches < 1 || *records < 1 {
		return errors.New("-batches and -records must be above 0")
	}
	dist, err := testenv.DistDir()
	if err != nil {
		return err
	}
	hostBin := filepath.Join(dist, "picomq-host")
	lib := filepath.Join(dist, "libpicomq_connector_redshift_sink.so")
	if err := bench.Built(hostBin, lib); err != nil {
		return err
	}
	svc, err := services.Lookup()
	if err != nil {
		return fmt.Errorf("%w (run buildscripts/services.sh start)", err)
	}
	ctx := context.Background()

	suffix := randomHex(4)
	dbName := "rsbench_" + suffix
	dsn, dropDB, err := bench.CreateDatabase(ctx, svc.PGDSN, dbName)
	if err != nil {
		return err
	}
	defer dropDB()
	s3c := svc.S3Client()
	bucket := "rsbench-" + suffix
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("create bucket: %w", err)
	}
	defer func() {
		_ = services.EmptyBucket(ctx, s3c, bucket)
		_, _ = s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	}()

	proxy, err := startCountingProxy(svc.S3Endpoint)
	if err != nil {
		return err
	}
	defer proxy.close()

	emu, err := rsemu.New(rsemu.Config{BackendDSN: dsn, S3Endpoint: svc.S3Endpoint, S3AccessKey: svc.S3AccessKey,
		S3SecretKey: svc.S3SecretKey, S3Region: svc.S3Region, CopyLatency: *copyLat, CommitLatency: *commLat})
	if err != nil {
		return err
	}
	defer emu.Close()
	if *partitions > 0 {
		return runSteady(ctx, dist, lib, svc, bucket, emu, dbName, dsn)
	}
	if *upsertRows > 0 {
		return runUpsert(ctx, dist, lib, svc, bucket, emu, dbName, dsn)
	}

	data, payloadBytes := generate(*batches+1, *records)
	fmt.Printf("rsbench: %s in %s -> rsemu -> PostgreSQL, Parquet files via a counting proxy -> MinIO\n",
		filepath.Base(lib), filepath.Base(hostBin))
	fmt.Printf("workload: per batch_size 1 warm-up + %d measured batches x %d records, %.0f-byte JSON payloads (avg), 16-byte keys, payload_format %s, 1 host worker\n",
		*batches, *records, float64(payloadBytes)/float64(len(data)*len(data[0])), *format)
	fmt.Printf("emulated cluster cost: COPY %s, commit %s (commit queue)\n\n", *copyLat, *commLat)

	var results []result
	for _, size := range sizeList {
		r, err := runSize(ctx, dist, lib, size, svc, bucket, proxy, emu, dbName, dsn, data)
		if err != nil {
			return fmt.Errorf("batch_size %d: %w", size, err)
		}
		results = append(results, r)
	}
	printResults(results)
	return nil
}

func runSize(ctx context.Context, dist, lib string, size int, svc services.Services, bucket string, proxy *countingProxy,
	emu *rsemu.Server, dbName, dsn string, data [][]hostclient.Record) (result, error) {
	r := result{size: size}
	h, err := bench.StartHost(dist, 1)
	if err != nil {
		return r, err
	}
	defer h.Close()
	l, err := h.Load(lib)
	if err != nil {
		return r, err
	}
	table := fmt.Sprintf("bench_%d", size)
	cfg := map[string]any{
		"connection_string":     emu.DSN(dbName),
		"target_table":          table,
		"aws_iam_role":          rsemu.DefaultRole,
		"s3_bucket":             bucket,
		"s3_prefix":             fmt.Sprintf("bench/%d", size),
		"aws_region":            svc.S3Region,
		"s3_endpoint":           proxy.url,
		"aws_access_key_id":     svc.S3AccessKey,
		"aws_secret_access_key": svc.S3SecretKey,
		"batch_size":            size,
		"payload_format":        *format,
		"retry_delay":           "100ms",
	}
	inst, err := l.Open(bench.Definition("rsbench", cfg))
	if err != nil {
		return r, err
	}
	defer inst.Close()

	consume := func(recs []hostclient.Record) error {
		return inst.Consume(hostclient.Batch{Attempt: 1, Topic: "orders.eu", Schema: "json", Records: recs})
	}
	// Warm-up: connections, the table check, first-use allocations.
	if err := consume(data[0]); err != nil {
		return r, err
	}
	before, err := bench.SinkMetrics(inst)
	if err != nil {
		return r, err
	}
	emu.ResetStatements()
	proxy.reset()
	cpu0, err := hosttest.ProcessCPU(h.Pid())
	if err != nil {
		return r, err
	}
	start := time.Now()
	for _, recs := range data[1:] {
		t0 := time.Now()
		if err := consume(recs); err != nil {
			return r, err
		}
		r.latencies = append(r.latencies, time.Since(t0))
		r.rows += len(recs)
		r.chunks += (len(recs) + size - 1) / size
	}
	r.elapsed = time.Since(start)
	cpu1, err := hosttest.ProcessCPU(h.Pid())
	if err != nil {
		return r, err
	}
	r.cpu = cpu1 - cpu0
	_, r.rssKB = hosttest.ProcessMemory(h.Pid())
	r.roundTrips = emu.RoundTrips()
	r.statements = map[string]int{}
	for _, s := range emu.Statements() {
		if f := strings.Fields(s); len(f) > 0 {
			r.statements[strings.ToUpper(f[0])]++
		}
	}
	r.s3 = proxy.snapshot()
	after, err := bench.SinkMetrics(inst)
	if err != nil {
		return r, err
	}
	r.fileBytes = int64(after["s3_bytes_uploaded"] - before["s3_bytes_uploaded"])
	if got := int(after["chunks"] - before["chunks"]); got != r.chunks {
		return r, fmt.Errorf("the sink reports %d chunks, expected %d", got, r.chunks)
	}

	// Sanity: every record landed once.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return r, err
	}
	defer conn.Close(ctx)
	var n, ids int
	if err := conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT id) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&n, &ids); err != nil {
		return r, err
	}
	if want := len(data) * len(data[0]); n != want || ids != want {
		return r, fmt.Errorf("%s holds %d rows for %d ids, want %d", table, n, ids, want)
	}

	r.encodeCPU = encodeOnly(data[1:], size)
	if err := inst.Close(); err != nil {
		return r, err
	}
	return r, h.Close()
}

// encodeOnly encodes the same chunks with the plugin's own encoder in this
// process (pre-flight check plus Parquet and zstd, as the sink does per
// chunk) and returns the time it took, single-threaded.
func encodeOnly(data [][]hostclient.Record, size int) time.Duration {
	payload := rsql.PayloadVarbyte
	if *format == "text" {
		payload = rsql.PayloadText
	}
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true, Payload: payload})
	enc := rsparquet.NewEncoder(l)
	lim := l.DefaultLimits()
	created := time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	start := time.Now()
	for _, recs := range data {
		all := make([]rsparquet.Record, len(recs))
		for i, rec := range recs {
			all[i] = rsparquet.Record{Offset: rec.Offset, Timestamp: rec.TimestampMs, Key: rec.Key, Payload: rec.Payload}
		}
		c := rsparquet.Chunk{Topic: "orders.eu", CreatedAt: created, Records: all}
		if err := rsparquet.Check(l, lim, c); err != nil {
			panic(err)
		}
		for lo := 0; lo < len(all); lo += size {
			c.Records = all[lo:min(lo+size, len(all))]
			if _, err := enc.Encode(c); err != nil {
				panic(err)
			}
		}
	}
	return time.Since(start)
}

func printResults(rs []result) {
	fmt.Printf("%-10s %6s %9s %10s %10s %13s %13s %11s %8s %9s %8s %10s\n",
		"batch_size", "chunks", "rows/s", "batch p50", "batch max", "host CPU/row", "encode/row", "CPU/chunk", "SQL rt/ck", "stmts/ck", "S3/ck", "peak RSS")
	for _, r := range rs {
		stmts, s3n := 0, 0
		for _, n := range r.statements {
			stmts += n
		}
		for _, n := range r.s3 {
			s3n += n
		}
		fmt.Printf("%-10d %6d %9.0f %8.1fms %8.1fms %11.1fµs %11.1fµs %9.2fms %9.2f %9.2f %8.2f %7.1f MiB\n",
			r.size, r.chunks, float64(r.rows)/r.elapsed.Seconds(),
			bench.MS(bench.Percentile(r.latencies, 0.5)), bench.MS(bench.Percentile(r.latencies, 1)),
			bench.US(r.cpu)/float64(r.rows), bench.US(r.encodeCPU)/float64(r.rows), bench.MS(r.cpu)/float64(r.chunks),
			float64(r.roundTrips)/float64(r.chunks), float64(stmts)/float64(r.chunks), float64(s3n)/float64(r.chunks), float64(r.rssKB)/1024)
	}
	fmt.Println()
	for _, r := range rs {
		fmt.Printf("batch_size %d: statements/chunk %s; S3 requests/chunk %s; %.0f Parquet bytes/row\n",
			r.size, perChunk(r.statements, r.chunks), perChunk(r.s3, r.chunks), float64(r.fileBytes)/float64(r.rows))
	}
	fmt.Println()
	fmt.Println("rows/s: records over the wall time of the consume calls; each returns once its chunks are committed.")
	fmt.Println("host CPU/row: utime+stime of the host process (/proc/<pid>/stat) over the measured batches, per row:")
	fmt.Println("  the plugin's pre-flight checks, Parquet + zstd encoding, and also its pgx and AWS SDK clients (SigV4")
	fmt.Println("  hashes each upload), the Go runtime (GC, scheduler) and the C host's framing; the sink never parses")
	fmt.Println("  payloads, so there is no JSON check; the emulator and PostgreSQL are not in it.")
	fmt.Println("CPU/chunk: the same host CPU per chunk; at small batch_size it is mostly fixed per-chunk cost (3 round trips:")
	fmt.Println("  the load transaction's 6 statements in one query, 2 S3 requests, each parking and waking the C caller's thread), not encoding.")
	fmt.Println("SQL rt/ck: requests the emulator answered per chunk (a simple query, however many statements it carries, or an")
	fmt.Println("  extended-protocol Sync), each a wait for the sink; stmts/ck: the statements they carried.")
	fmt.Println("encode/row: the same chunks through the plugin's encoder (rsparquet: check + Parquet + zstd) in this process, single-threaded.")
	fmt.Println("S3/ck: requests the sink made, counted by a reverse proxy in front of MinIO; COPY's reads by the emulator are not included.")
	fmt.Println("peak RSS: VmHWM of the host process, a fresh host per batch_size.")
}

func perChunk(m map[string]int, chunks int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(m[k])/float64(chunks)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// countingProxy is a reverse proxy in front of S3 that counts the requests
// passing through it by operation. It leaves the Host header as the client
// sent it, so SigV4 signatures made for the proxy's address still verify.
type countingProxy struct {
	url string
	srv *http.Server
	mu  sync.Mutex
	n   map[string]int
}

func startCountingProxy(endpoint string) (*countingProxy, error) {
	target, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	p := &countingProxy{url: "http://" + ln.Addr().String(), n: map[string]int{}}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.count(r)
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *countingProxy) count(r *http.Request) {
	op := r.Method
	switch {
	case r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "":
		op = "CopyObject"
	case r.Method == http.MethodPut:
		op = "PutObject"
	case r.Method == http.MethodDelete:
		op = "DeleteObject"
	case r.Method == http.MethodGet:
		op = "GetObject"
	}
	p.mu.Lock()
	p.n[op]++
	p.mu.Unlock()
}

func (p *countingProxy) reset() {
	p.mu.Lock()
	p.n = map[string]int{}
	p.mu.Unlock()
}

func (p *countingProxy) snapshot() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.n))
	for k, v := range p.n {
		out[k] = v
	}
	return out
}

func (p *countingProxy) close() { _ = p.srv.Close() }

// generate returns nb batches of size records: JSON orders of about 250
// bytes that differ per record, with 16-byte keys.
func generate(nb, size int) ([][]hostclient.Record, int) {
	statuses := []string{"paid", "pending", "shipped", "refunded"}
	cities := []string{"Berlin", "Hamburg", "Munich", "Cologne", "Frankfurt"}
	return workload.Batches(nb, size, func(n int, ts time.Time) hostclient.Record {
		p := fmt.Appendf(nil, `{"order_id":%d,"customer":"customer-%07d","status":"%s","amount":%d.%02d,"currency":"EUR",`+
			`"items":[{"sku":"SKU-%05d","qty":%d},{"sku":"SKU-%05d","qty":1}],"shipping":{"country":"DE","city":"%s","zip":"10%03d"},`+
			`"created":"%s"}`,
			n, n%5000, statuses[n%len(statuses)], n%997, n%100, n%40000, 1+n%3, (n*7)%40000, cities[n%len(cities)], n%1000,
			ts.Format("2006-01-02T15:04:05.000Z"))
		return hostclient.Record{Offset: uint64(n), TimestampMs: ts.UnixMilli(),
			Key: fmt.Appendf(nil, "customer-%07d", n%5000), Payload: p}
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
