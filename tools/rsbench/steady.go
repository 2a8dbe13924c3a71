package main

// The steady mode (-partitions N): many partitions of one topic at a steady
// total rate, each consumed by a loop of its own as the runtime does with
// several batches in flight: it delivers what has arrived (up to
// -batch-length records) as soon as its previous batch returned (-depth 1),
// or once its oldest record waited -max-batch-latency. With -depth N above 1
// a partition keeps up to N batches in flight, pipelined as picomq-connect
// does with max_in_flight_per_partition (PIPELINED.md, docs/abi.md
// "Pipelined batches"): a batch sent while the partition's previous one is
// unanswered carries Follows (that batch's RangeLast) and is sent only
// after it; batches land in order, a batch's latency ends when it lands;
// when one fails, the results of the batches after it are discarded and
// their records delivered again after it. Every
// partition's calls go to one instance in the C host; with one host worker
// (-workers 1) they reach the sink one at a time, as from a host without
// concurrent consume calls. It prints whether the loads keep up (records
// committed within the run and the backlog at its end), the latency of a
// batch (from its oldest record's arrival to its consume returning OK,
// p50/p99), and the load transactions per second and batches per load
// from the sink's metrics.

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

var (
	partitions  = flag.Int("partitions", 0, "steady mode: this many partitions of one topic at -rate records/s in total, for -duration (0: the batch_size mode)")
	rate        = flag.Int("rate", 3000, "steady mode: records/s over all partitions")
	duration    = flag.Duration("duration", 30*time.Second, "steady mode: how long records arrive")
	workers     = flag.Int("workers", 0, "steady mode: C host worker threads, the consume calls in flight at once (0: one per batch in flight, -partitions x -depth; 1: one at a time)")
	batchLength = flag.Int("batch-length", 1000, "steady mode: most records per batch, and batch_size")
	drain       = flag.Duration("drain", 30*time.Second, "steady mode: how long to wait after -duration for the backlog to load")
	depth       = flag.Int("depth", 1, "steady mode: batches per partition in flight at once (pipelined: Follows, as max_in_flight_per_partition)")
	maxLatency  = flag.Duration("max-batch-latency", 0, "steady mode: a batch smaller than -batch-length goes once its oldest record waited this long (0: as soon as a slot is free)")
)

func runSteady(ctx context.Context, dist, lib string, svc services.Services, bucket string, emu *rsemu.Server, dbName, dsn string) error {
	if *depth < 1 {
		return fmt.Errorf("-depth %d: want 1 or more", *depth)
	}
	w := *workers
	if w == 0 {
		w = *partitions * *depth
	}
	h, err := bench.StartHost(dist, w)
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.Load(lib)
	if err != nil {
		return err
	}
	const table = "steady"
	inst, err := l.Open(bench.Definition("rsbench", map[string]any{
		"connection_string": emu.DSN(dbName), "target_table": table, "aws_iam_role": rsemu.DefaultRole,
		"s3_bucket": bucket, "s3_prefix": "steady", "aws_region": svc.S3Region, "s3_endpoint": svc.S3Endpoint,
		"aws_access_key_id": svc.S3AccessKey, "aws_secret_access_key": svc.S3SecretKey,
		"batch_size": *batchLength, "retry_delay": "100ms", "max_connections": 5,
	}))
	if err != nil {
		return err
	}
	defer inst.Close()
	tmpl, _ := generate(1, *batchLength)
	// Warm-up: the table check and a connection, on a partition of its own.
	if err := inst.Consume(hostclient.Batch{Attempt: 1, Topic: "orders", Partition: uint32(*partitions), Schema: "json", Records: tmpl[0][:1]}); err != nil {
		return err
	}
	before, err := bench.SinkMetrics(inst)
	if err != nil {
		return err
	}
	fmt.Printf("rsbench steady: %s in %s, %d partitions, %d records/s in total for %s, batches of up to %d, %d host workers, %d batches per partition in flight, max batch latency %s\n",
		filepath.Base(lib), filepath.Base(dist+"/picomq-host"), *partitions, *rate, *duration, *batchLength, w, *depth, *maxLatency)
	fmt.Printf("emulated cluster cost: COPY %s, commit %s (commit queue)\n", *copyLat, *commLat)

	interval := time.Duration(float64(time.Second) * float64(*partitions) / float64(*rate)) // per partition
	perPartition := int(*duration / interval)
	start := time.Now()
	stop := start.Add(*duration + *drain)
	var (
		mu        sync.Mutex
		latencies []time.Duration // a batch's oldest record's arrival to its OK
		calls     []time.Duration // a consume call's duration
		inRun     int             // records committed by the end of -duration
		committed int
		firstErr  error
		backlog   [2]int // arrived and not committed at half of -duration and at its end
	)
	var wg sync.WaitGroup
	// The backlog at half the run and at its end: equal when the loads keep
	// up (records in flight), growing when they fall behind.
	for i, at := range []time.Duration{*duration / 2, *duration} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(at)))
			arrived := min(int(at/interval)+1, perPartition) * *partitions
			mu.Lock()
			backlog[i] = arrived - committed
			mu.Unlock()
		}()
	}
	for p := range *partitions {
		fd := &feed{topic: "orders", partition: uint32(p), total: perPartition,
			arrival: func(off int) time.Time { return start.Add(time.Duration(off) * interval) },
			arrived: func(now time.Time) int { return min(int(now.Sub(start)/interval)+1, perPartition) },
			records: func(first, n int) []hostclient.Record {
				recs := make([]hostclient.Record, n)
				copy(recs, tmpl[0][:n])
				for i := range recs {
					recs[i].Offset = uint64(first + i)
				}
				return recs
			},
			consume: func(b hostclient.Batch) error { return inst.Consume(b) }, depth: *depth, batchLength: *batchLength, maxLatency: *maxLatency, stop: stop,
			landed: func(f *flight, at time.Time) {
				mu.Lock()
				defer mu.Unlock()
				latencies = append(latencies, at.Sub(start.Add(time.Duration(f.first)*interval)))
				calls = append(calls, f.end.Sub(f.sent))
				committed += f.n
				if at.Sub(start) <= *duration {
					inRun += f.n
				}
			},
			failed: func(f *flight) {
				mu.Lock()
				defer mu.Unlock()
				if firstErr == nil {
					firstErr = fmt.Errorf("partition %d: %w", p, f.err)
				}
			},
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fd.run()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	after, err := bench.SinkMetrics(inst)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var rows, ids int
	if err := conn.QueryRow(ctx, "SELECT count(*), count(DISTINCT id) FROM "+table).Scan(&rows, &ids); err != nil {
		return err
	}
	produced := perPartition * *partitions
	loads := after["loads"] - before["loads"]
	fmt.Printf("produced %d records in %s; committed %d within it; backlog (arrived, not committed) %d at half time, %d at the end; all %d committed after %s\n",
		produced, *duration, inRun, backlog[0], backlog[1], committed, elapsed.Round(time.Millisecond))
	fmt.Printf("batches %d: latency (oldest record's arrival to OK) p50 %.0fms p99 %.0fms max %.0fms; consume call p50 %.0fms p99 %.0fms\n", len(latencies),
		bench.MS(bench.Percentile(latencies, 0.5)), bench.MS(bench.Percentile(latencies, 0.99)), bench.MS(bench.Percentile(latencies, 1)),
		bench.MS(bench.Percentile(calls, 0.5)), bench.MS(bench.Percentile(calls, 0.99)))
	fmt.Printf("loads %.0f (%.2f/s), batches per load %.1f, COPY retries %.0f; table rows %d, distinct ids %d (want %d)\n",
		loads, loads/elapsed.Seconds(), (after["load_batches"]-before["load_batches"])/max(loads, 1),
		after["copy_retries"]-before["copy_retries"], rows-1, ids-1, committed)
	if firstErr != nil {
		fmt.Printf("first failed consume: %v\n", firstErr)
	}
	if rows-1 != committed || ids != rows {
		return fmt.Errorf("%s holds %d rows for %d ids, want %d committed (+1 warm-up)", table, rows, ids, committed)
	}
	return nil
}
