package abi_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// emptyDeltaTable writes version 0 of a Delta table (id long, body string)
// by hand, as any engine would, so the soak needs no Python.
func emptyDeltaTable(t *testing.T, dir string) {
	t.Helper()
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"body","type":"string","nullable":true,"metadata":{}}]}`
	log := `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n" +
		`{"metaData":{"id":"` + filepath.Base(dir) + `","format":{"provider":"parquet","options":{}},"schemaString":` + fmt.Sprintf("%q", schema) +
		`,"partitionColumns":[],"configuration":{},"createdTime":0}}` + "\n"
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSoakBothSinksInOneHost loads the two real sink libraries — two Go
// runtimes — into one host process and drives several instances of each
// concurrently from several host threads, with the collectors under
// pressure. Every batch must land exactly once: the Delta tables' txn
// actions and the Redshift tables' row counts are checked afterwards.
func TestSoakBothSinksInOneHost(t *testing.T) {
	const (
		workers   = 8
		instances = 3 // per library
		batches   = 60
		records   = 50
	)
	svc := services.Require(t)
	db := svc.NewDatabase(t)
	bucket := svc.NewBucket(t)
	emu := rsemu.NewTest(t, rsemu.Config{BackendDSN: db.DSN, S3Endpoint: svc.S3Endpoint, S3AccessKey: svc.S3AccessKey,
		S3SecretKey: svc.S3SecretKey, S3Region: svc.S3Region})

	dist := distDir(t)
	h := startHost(t, hostclient.Workers(workers), hostclient.Env("GOGC=5"))
	deltaLib, err := h.Load(filepath.Join(dist, "libpicomq_connector_delta_sink.so"))
	if err != nil {
		t.Fatal(err)
	}
	rsLib, err := h.Load(filepath.Join(dist, "libpicomq_connector_redshift_sink.so"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	var insts []*hostclient.Instance
	for i := range instances {
		dir := filepath.Join(root, fmt.Sprintf("t%d", i))
		emptyDeltaTable(t, dir)
		inst, err := deltaLib.Open(definition(t, fmt.Sprintf("soak_delta_%d", i), map[string]any{"table_uri": "file://" + dir}))
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, inst)
	}
	for i := range instances {
		inst, err := rsLib.Open(definition(t, fmt.Sprintf("soak_rs_%d", i), map[string]any{
			"connection_string": emu.DSN(db.Name), "target_table": fmt.Sprintf("soak_%d", i),
			"aws_iam_role": rsemu.DefaultRole, "s3_bucket": bucket, "s3_prefix": fmt.Sprintf("soak/%d", i), "aws_region": svc.S3Region,
			"s3_endpoint": svc.S3Endpoint, "aws_access_key_id": svc.S3AccessKey, "aws_secret_access_key": svc.S3SecretKey,
			"payload_format": "text", "retry_delay": "50ms",
		}))
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, inst)
	}

	start := time.Now()
	var calls atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(insts))
	for n, inst := range insts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				batch := hostclient.Batch{Attempt: 1, Topic: fmt.Sprintf("soak.%d", n), Schema: "json"}
				for r := range records {
					off := uint64(b*records + r)
					batch.Records = append(batch.Records, hostclient.Record{Offset: off, TimestampMs: int64(off),
						Key: []byte(fmt.Sprint(off)), Payload: []byte(fmt.Sprintf(`{"id":%d,"body":"instance %d record %d"}`, off, n, off))})
				}
				if err := inst.ConsumeOn((n+b)%workers, batch); err != nil {
					errs <- fmt.Errorf("instance %d batch %d: %w", n, b, err)
					return
				}
				calls.Add(1)
				if b%5 == 0 {
					if _, err := inst.Metrics(); err != nil {
						errs <- err
						return
					}
					calls.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	for _, inst := range insts {
		if err := inst.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// Delta: the last commit of each table records the last offset, and the
	// commits hold every record once (numRecords from the add stats).
	for i := range instances {
		dir := filepath.Join(root, fmt.Sprintf("t%d", i))
		entries, _ := os.ReadDir(filepath.Join(dir, "_delta_log"))
		commits := 0
		for _, e := range entries {
			if filepath.Ext(e.Name()) == ".json" {
				commits++
			}
		}
		if commits != batches+1 {
			t.Fatalf("delta table %d: %d commits, want %d", i, commits, batches+1)
		}
		last, _ := os.ReadFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", batches)))
		want := fmt.Sprintf(`"version":%d`, batches*records-1)
		if !strings.Contains(string(last), want) {
			t.Fatalf("delta table %d: last commit lacks %s:\n%s", i, want, last)
		}
	}
	// Redshift: one row per record, ids distinct.
	conn, err := pgx.Connect(context.Background(), db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for i := range instances {
		var rows, distinct int
		if err := conn.QueryRow(context.Background(), fmt.Sprintf(`SELECT count(*), count(DISTINCT id) FROM "soak_%d"`, i)).Scan(&rows, &distinct); err != nil {
			t.Fatal(err)
		}
		if rows != batches*records || distinct != rows {
			t.Fatalf("redshift table %d: %d rows, %d distinct ids, want %d", i, rows, distinct, batches*records)
		}
	}
	t.Logf("soak (real sinks): %d calls, %d consumes of %d records, %d instances of 2 libraries, %d host threads, %v",
		calls.Load(), len(insts)*batches, records, len(insts), workers, elapsed.Round(time.Millisecond))
}
