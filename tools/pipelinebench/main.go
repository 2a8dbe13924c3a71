package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv/workload"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

var (
	brokersFlag = flag.String("brokers", os.Getenv("PICOMQ_KAFKA_BROKERS"), "seed brokers (default $PICOMQ_KAFKA_BROKERS; empty: an in-process kfake)")
	batches     = flag.Int("batches", 100, "batches per target")
	batchSize   = flag.Int("batch-size", 1000, "records per batch (the definition's batch_length)")
	targets     = flag.String("targets", "file,s3", "comma-separated: file, s3")
	repeats     = flag.Int("repeats", 3, "runs per target; the figures printed are their medians")
	workDir     = flag.String("dir", "", "parent of the work directory where the file:// tables go (default $TMPDIR; make: BENCH_DIR)")
	steady      = flag.Duration("steady", 10*time.Second, "length of the fixed-rate phase (0: skip)")
	rateShare   = flag.Float64("rate", 0.5, "fixed rate as a share of the measured capacity")
	connectBin  = flag.String("connect", "", "picomq-connect binary (default: dist/picomq-connect)")
	compression = flag.String("compression", "snappy", "the producer's batch compression: none, snappy (franz-go's default), lz4, zstd; the runtime pays for decompressing it")
	cpuProfile  = flag.String("cpuprofile", "", "directory for a pprof CPU profile of each picomq-connect run (<target>-<phase>-<repeat>.pprof)")
	formatsFlag = flag.String("formats", "json", "comma-separated payload formats run through picomq-connect in each repeat, the same records in each: json, avro, proto, each optionally +transforms (the three-transform chain); json is the baseline of the per-format table")
	hostStart   = flag.String("host-start", "runtime", "how the plugin-only host starts: runtime (as picomq-connect starts it, connect/child) or bench (bench.StartHost, no quarantine: the old comparison)")
)

func main() {
	bench.Main("pipelinebench", func() error {
		if *floorTopic != "" {
			return floorConsume()
		}
		return run()
	})
}

func run() error {
	if *hostStart != "runtime" && *hostStart != "bench" {
		return fmt.Errorf("-host-start %q: want runtime or bench", *hostStart)
	}
	variants, err := parseVariants(*formatsFlag)
	if err != nil {
		return err
	}
	if *repeats < 1 {
		return fmt.Errorf("-repeats %d: want at least 1", *repeats)
	}
	env, err := bench.Setup("")
	if err != nil {
		return err
	}
	dist := env.Dist
	if *connectBin == "" {
		*connectBin = filepath.Join(dist, "picomq-connect")
	}
	if err := bench.Built(*connectBin, filepath.Join(dist, "picomq-host")); err != nil {
		return err
	}
	work, err := workload.WorkDir(*workDir, "pipelinebench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	brokers := bench.SplitList(*brokersFlag)
	if len(brokers) == 0 {
		kf, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			return err
		}
		defer kf.Close()
		brokers = kf.ListenAddrs()
		fmt.Printf("broker: in-process kfake on %s (not a real Kafka broker; set -brokers or $PICOMQ_KAFKA_BROKERS for the issue's figure)\n", brokers[0])
	} else {
		fmt.Printf("broker: %s (from -brokers / $PICOMQ_KAFKA_BROKERS)\n", strings.Join(brokers, ","))
	}
	codec, err := bench.CompressionCodec(*compression)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(4*(*batchSize)*(*batches)),
		kgo.ProducerBatchCompression(codec))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	data, rawBytes := workload.Delta(*batches, *batchSize)
	payloads := map[string][][]hostclient.Record{}
	for _, v := range variants {
		if payloads[v.format] == nil {
			if payloads[v.format], err = encodeWorkload(data, v.format); err != nil {
				return err
			}
		}
	}
	fmt.Printf("workload: %d batches x %d records (make bench-delta's), %.0f bytes/record, produced with %s compression; runtime: %s, batch_length %d, 1 host worker; plugin-only host started the %s way; %d repeats, medians (range)\n",
		*batches, *batchSize, float64(rawBytes)/float64(*batches**batchSize), *compression, filepath.Base(*connectBin), *batchSize, *hostStart, *repeats)

	stamp := fmt.Sprintf("%d", time.Now().UnixNano())
	for _, name := range bench.SplitList(*targets) {
		t, err := bench.NewDeltaTarget(name, work, stamp)
		if err != nil {
			return err
		}
		fmt.Printf("\n== %s (%s)\n", name, t.URI)
		f := figures{}
		for i := range *repeats {
			if err := repeat(cl, adm, brokers, env, work, t, fmt.Sprintf("%s.%s.%d", name, stamp, i), i, variants, payloads, f); err != nil {
				_ = t.Remove(context.Background())
				return fmt.Errorf("%s, repeat %d: %w", name, i+1, err)
			}
		}
		if err := t.Remove(context.Background()); err != nil {
			fmt.Fprintf(os.Stderr, "pipelinebench: removing the %s target: %v\n", name, err)
		}
		fmt.Printf("plugin only (C host):    %s records/s   host CPU %s µs/record\n", f.get("plugin/s", 0), f.get("plugin µs", 2))
		fmt.Printf("through picomq-connect:  %s records/s   runtime CPU %s µs/record   child host CPU %s µs/record\n",
			f.get("pipe/s", 0), f.get("runtime µs", 2), f.get("child µs", 2))
		fmt.Printf("  runtime overhead: %s %% of the plugin-only CPU per record (target ≤ 15 %%); runtime+child vs plugin-only %s %%; child vs plugin-only %s %%\n",
			f.get("overhead %", 1), f.get("total vs plugin %", 1), f.get("child vs plugin %", 1))
		fmt.Printf("  the Kafka client alone (franz-go's defaults, no group, no commits) on the same topic: %s µs/record, %s %% of the plugin-only CPU; the runtime above it: %s µs/record, %s %%\n",
			f.get("floor µs", 2), f.get("floor %", 1), f.get("above floor µs", 2), f.get("above floor %", 1))
		fmt.Printf("  end-to-end latency with the backlog (all produced at once): p50 %s ms, p99 %s ms\n", f.get("backlog p50", 0), f.get("backlog p99", 0))
		if *steady > 0 {
			fmt.Printf("steady at %.0f %% of each run's capacity for %v: %s records/s, e2e latency p50 %s ms, p99 %s ms, lag at end of producing %s\n",
				100**rateShare, *steady, f.get("steady rate", 0), f.get("steady p50", 0), f.get("steady p99", 0), f.get("steady end lag", 0))
		}
		if len(variants) > 1 {
			printVariants(variants, payloads, f)
		}
	}
	fmt.Println("\nruntime CPU: utime+stime of the picomq-connect process; child host CPU: of its picomq-host child; both from /proc, from the first produce to the last commit.")
	fmt.Println("e2e latency: the record's produce timestamp to the first poll (every 5 ms) that saw the group's committed offset past it.")
	return nil
}

// repeat is one run of the three phases on fresh tables and topics,
// printed on one line and added to f.
//
// Each variant of -formats runs through picomq-connect on its own table
// and topic (plain json on the ones the bench always used), after the
// plugin-only run, in the order given rotated by one each repeat (a
// variant that always ran first would always meet the same state of the
// machine): the json run is the one the summary lines report, the others
// go to the per-format table.
func repeat(cl *kgo.Client, adm *kadm.Client, brokers []string, env bench.Env, work string, t *bench.DeltaTarget, run string, i int,
	variants []variant, payloads map[string][][]hostclient.Record, f figures) error {
	data := payloads["json"]
	tables := map[string]string{}
	phases := []string{"plugin", "steady"}
	for _, v := range variants {
		phases = append(phases, "pipeline"+v.slug())
	}
	for _, phase := range phases {
		tables[phase] = fmt.Sprintf("%s_%d", phase, i)
		if err := t.CreateTable(env.Python, tables[phase]); err != nil {
			return err
		}
	}
	topic := "bench." + run
	topics := []string{topic + ".steady"}
	for _, v := range variants {
		topics = append(topics, topic+v.slug())
	}
	resp, err := adm.CreateTopics(context.Background(), 1, -1, nil, topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	defer adm.DeleteTopics(context.Background(), topics...) //nolint:errcheck // best effort

	plugin, err := pluginOnly(env.Dist, topic, t, tables["plugin"], data)
	if err != nil {
		return fmt.Errorf("plugin-only: %w", err)
	}
	pcpu := bench.US(plugin.hostCPU) / float64(plugin.records)
	var p pipeResult
	var others []string // the other variants' part of the run's line
	for k := range variants {
		v := variants[(i+k)%len(variants)] // rotated: no variant always runs first
		r, err := pipeline(cl, adm, brokers, env.Dist, work, t, topic+v.slug(), tables["pipeline"+v.slug()], v, payloads[v.format], 0)
		if err != nil {
			return fmt.Errorf("pipeline (%s): %w", v, err)
		}
		rcpu, ccpu := bench.US(r.runtimeCPU)/float64(r.records), bench.US(r.hostCPU)/float64(r.records)
		f.add(v.String()+" /s", float64(r.records)/r.elapsed.Seconds())
		f.add(v.String()+" runtime µs", rcpu)
		f.add(v.String()+" child µs", ccpu)
		f.add(v.String()+" share %", 100*rcpu/pcpu)
		if v.slug() == "" {
			p = r
		} else {
			others = append(others, fmt.Sprintf("%s runtime %.2f, child %.2f", v, rcpu, ccpu))
		}
	}
	for _, v := range variants {
		f.add(v.String()+" vs json µs", f.last(v.String()+" runtime µs")-f.last("json runtime µs"))
	}
	rcpu, ccpu := bench.US(p.runtimeCPU)/float64(p.records), bench.US(p.hostCPU)/float64(p.records)
	fcpu, err := floor(brokers, topic, p.records)
	if err != nil {
		return err
	}
	f.add("floor µs", bench.US(fcpu)/float64(p.records))
	f.add("floor %", 100*f.last("floor µs")/pcpu)
	f.add("above floor µs", rcpu-f.last("floor µs"))
	f.add("above floor %", 100*f.last("above floor µs")/pcpu)
	capacity := float64(p.records) / p.elapsed.Seconds()
	f.add("plugin/s", float64(plugin.records)/plugin.elapsed.Seconds())
	f.add("plugin µs", pcpu)
	f.add("pipe/s", capacity)
	f.add("runtime µs", rcpu)
	f.add("child µs", ccpu)
	f.add("overhead %", 100*rcpu/pcpu)
	f.add("total vs plugin %", 100*(rcpu+ccpu-pcpu)/pcpu)
	f.add("child vs plugin %", 100*(ccpu-pcpu)/pcpu)
	f.add("backlog p50", bench.MS(bench.Percentile(p.latencies, 0.5)))
	f.add("backlog p99", bench.MS(bench.Percentile(p.latencies, 0.99)))
	line := fmt.Sprintf("  run %d: plugin-only %.2f µs/record; pipeline %.0f records/s, runtime %.2f, child %.2f µs/record; Kafka client alone %.2f µs/record", i+1, pcpu, capacity, rcpu, ccpu, f.last("floor µs"))
	if *steady > 0 {
		rate := *rateShare * capacity
		s, err := pipeline(cl, adm, brokers, env.Dist, work, t, topic+".steady", tables["steady"], variant{format: "json"}, data, rate)
		if err != nil {
			return fmt.Errorf("steady: %w", err)
		}
		f.add("steady rate", rate)
		f.add("steady p50", bench.MS(bench.Percentile(s.latencies, 0.5)))
		f.add("steady p99", bench.MS(bench.Percentile(s.latencies, 0.99)))
		f.add("steady end lag", float64(s.endLag))
		line += fmt.Sprintf("; steady %.0f/s p99 %.0f ms, lag %s", rate, bench.MS(bench.Percentile(s.latencies, 0.99)), bench.LagTrend(s.lags, int64(*batchSize)))
	}
	if len(others) > 0 {
		line += "\n    " + strings.Join(others, "; ") + " µs/record"
	}
	fmt.Println(line)
	nb := *batches
	fmt.Printf("    host: plugin-only %s\n          child       %s\n", plugin.host.PerBatch(plugin.records, nb), p.host.PerBatch(p.records, nb))
	return nil
}

// figures collects each figure's value per repeat.
type figures map[string][]float64

func (f figures) add(name string, v float64) { f[name] = append(f[name], v) }

// last is the latest repeat's value of a figure.
func (f figures) last(name string) float64 { return f[name][len(f[name])-1] }

// get prints the median of a figure and, over several repeats, its range.
func (f figures) get(name string, decimals int) string {
	v := f[name]
	s := fmt.Sprintf("%.*f", decimals, bench.Median(v))
	if len(v) > 1 {
		s += fmt.Sprintf(" (%.*f–%.*f)", decimals, slices.Min(v), decimals, slices.Max(v))
	}
	return s
}
