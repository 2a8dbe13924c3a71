package main

// The upsert mode (-upsert-rows N): write_mode = "upsert" against a target
// that already holds N keys. The table is filled straight in the backend
// (the sink's own columns, key_order_id and the offsets table as the sink
// makes them), so the run measures changes, not the fill. Then, for each
// -update-pcts value, -batches batches of -records changes (batch_size =
// -records: one chunk, one load per batch) go through the .so in the C
// host: that percentage of each batch updates random existing keys, the
// rest inserts new ones. It prints records/s (over the consume calls, each
// returning once its load committed) and the host process's CPU per
// record, and checks the table's row count afterwards.

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

var (
	upsertRows = flag.Int("upsert-rows", 0, "upsert mode: keys in the target before the run, e.g. 1000000 (0: off)")
	updatePcts = flag.String("update-pcts", "1,10,50", "upsert mode: comma-separated percentages of updates (of existing keys) per batch")
)

func runUpsert(ctx context.Context, dist, lib string, svc services.Services, bucket string, emu *rsemu.Server, dbName, dsn string) error {
	var pcts []int
	for _, s := range strings.Split(*updatePcts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 || n > 100 {
			return fmt.Errorf("bad -update-pcts entry %q", s)
		}
		pcts = append(pcts, n)
	}
	h, err := bench.StartHost(dist, 1)
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.Load(lib)
	if err != nil {
		return err
	}
	const table = "upsert_bench"
	inst, err := l.Open(bench.Definition("rsbench", map[string]any{
		"connection_string": emu.DSN(dbName), "target_table": table, "aws_iam_role": rsemu.DefaultRole,
		"s3_bucket": bucket, "s3_prefix": "upsert", "aws_region": svc.S3Region, "s3_endpoint": svc.S3Endpoint,
		"aws_access_key_id": svc.S3AccessKey, "aws_secret_access_key": svc.S3SecretKey,
		"batch_size": *records, "retry_delay": "100ms", "payload_format": *format,
		"write_mode": "upsert", "key_columns": "order_id",
	}))
	if err != nil {
		return err
	}
	defer inst.Close()

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	// The sink created the tables at open; fill the target as earlier
	// loads would have.
	fill := fmt.Sprintf(`INSERT INTO %s (id, pico_offset, pico_timestamp, pico_topic, pico_partition, pico_key, payload, created_at, key_order_id)
		SELECT 'fill:0:' || g, g::text, '0', 'fill', 0, NULL, %s, '2026-01-01T00:00:00.000Z', g::text FROM generate_series(0, %d) g`,
		pgx.Identifier{table}.Sanitize(), fillPayload(), *upsertRows-1)
	t0 := time.Now()
	if _, err := conn.Exec(ctx, fill); err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	if _, err := conn.Exec(ctx, "ANALYZE "+pgx.Identifier{table}.Sanitize()); err != nil {
		return err
	}
	fmt.Printf("rsbench upsert: %s in %s -> rsemu -> PostgreSQL; target filled with %d keys in %s\n",
		filepath.Base(lib), "picomq-host", *upsertRows, time.Since(t0).Round(time.Millisecond))
	fmt.Printf("workload: per percentage %d batches x %d changes (batch_size %d: one load each), op_field changes of ~250-byte JSON, payload_format %s\n",
		*batches, *records, *records, *format)
	fmt.Printf("emulated cluster cost: COPY %s, commit %s (commit queue)\n\n", *copyLat, *commLat)
	fmt.Printf("%-9s %9s %11s %10s %10s %14s %10s\n", "updates", "records", "records/s", "load p50", "load max", "host CPU/rec", "rows after")

	rng := rand.New(rand.NewPCG(1, 2))
	nextKey, offset := *upsertRows, 0
	for _, pct := range pcts {
		var lat []time.Duration
		cpu0, err := hosttest.ProcessCPU(h.Pid())
		if err != nil {
			return err
		}
		start := time.Now()
		n := 0
		for range *batches {
			recs := make([]hostclient.Record, *records)
			for i := range recs {
				key := nextKey
				if rng.IntN(100) < pct {
					key = rng.IntN(*upsertRows)
				} else {
					nextKey++
				}
				recs[i] = hostclient.Record{Offset: uint64(offset), TimestampMs: int64(offset),
					Payload: fmt.Appendf(nil, `{"order_id":%d,"customer":"customer-%07d","status":"paid","amount":%d.%02d,"currency":"EUR","items":[{"sku":"SKU-%05d","qty":1}],"shipping":{"country":"DE","city":"Berlin","zip":"10%03d"},"_op":"u"}`,
						key, key%5000, key%997, key%100, key%40000, key%1000)}
				offset++
			}
			t := time.Now()
			if err := inst.Consume(hostclient.Batch{Attempt: 1, Topic: "orders", Schema: "json", Records: recs}); err != nil {
				return err
			}
			lat = append(lat, time.Since(t))
			n += len(recs)
		}
		elapsed := time.Since(start)
		cpu1, err := hosttest.ProcessCPU(h.Pid())
		if err != nil {
			return err
		}
		var rows int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&rows); err != nil {
			return err
		}
		if rows != nextKey {
			return fmt.Errorf("%s holds %d rows, want one per key: %d", table, rows, nextKey)
		}
		fmt.Printf("%8d%% %9d %11.0f %8.0fms %8.0fms %12.1fµs %10d\n", pct, n, float64(n)/elapsed.Seconds(),
			bench.MS(bench.Percentile(lat, 0.5)), bench.MS(bench.Percentile(lat, 1)), bench.US(cpu1-cpu0)/float64(n), rows)
	}
	fmt.Println()
	fmt.Println("records/s: changes over the wall time of the consume calls; each returns once its load committed (COPY into staging,")
	fmt.Println("  DELETE of applied changes, DELETE of the changed keys' rows from the target, INSERT of each key's last upsert,")
	fmt.Println("  the offsets, staging emptied). The target has no index (Redshift has none): PostgreSQL joins staging to it by a scan.")
	fmt.Println("host CPU/rec: utime+stime of the host process per change: parsing the change, Parquet + zstd, the clients.")
	return nil
}

// fillPayload is the SQL expression of a filled row's payload.
func fillPayload() string {
	p := `'{"order_id":' || g || ',"status":"paid"}'`
	if *format == "text" {
		return p
	}
	return "convert_to(" + p + ", 'UTF8')"
}
