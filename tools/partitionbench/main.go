package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv/workload"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

var (
	brokersFlag   = flag.String("brokers", os.Getenv("PICOMQ_KAFKA_BROKERS"), "seed brokers of a real Kafka (default $PICOMQ_KAFKA_BROKERS, from .services.env)")
	partitions    = flag.Int("partitions", 48, "partitions of the topic")
	rate          = flag.Float64("rate", 3000, "steady mode: records/s produced, round-robin over the partitions")
	duration      = flag.Duration("duration", 20*time.Second, "steady mode: how long to produce")
	backlog       = flag.Int("backlog", 0, "backlog mode: produce this many records at once after the processes joined (0: steady mode)")
	processes     = flag.Int("processes", 1, "picomq-connect processes in the one consumer group")
	targets       = flag.String("targets", "file", "comma-separated: file, s3 (Delta on MinIO), redshift (through the emulator, in this process)")
	copyLatency   = flag.Duration("copy-latency", 0, "redshift: the emulator's fixed cost per COPY (rsemu.Config.CopyLatency; a cluster: 1s)")
	commitLatency = flag.Duration("commit-latency", 0, "redshift: the emulator's commit queue turn per commit (rsemu.Config.CommitLatency; a cluster: 600ms)")
	batchLength   = flag.Int("batch-length", 1000, "[[topics]] batch_length")
	pollInterval  = flag.String("poll-interval", "100ms", "[[topics]] poll_interval")
	maxLatency    = flag.String("max-batch-latency", "", "[[topics]] max_batch_latency (empty: not set)")
	workers       = flag.Int("workers", 0, "picomq-connect --workers (0: its default)")
	connectBin    = flag.String("connect", "", "picomq-connect binary (default: dist/picomq-connect)")
	workDir       = flag.String("dir", "", "parent of the work directory where file:// tables go (default $TMPDIR)")
	compression   = flag.String("compression", "snappy", "the producer's compression: none, snappy, lz4, zstd")
	drainTimeout  = flag.Duration("drain-timeout", 3*time.Minute, "longest wait for the last commit after producing")
	cpuProfile    = flag.String("cpuprofile", "", "directory for a pprof CPU profile of each picomq-connect process")
	topicKeys     bench.TopicKeys
	pluginKeys    pluginKeyFlag
)

func init() {
	flag.Var(&topicKeys, "topic-key", "another [[topics]] key, name=value (repeat it): -topic-key max_in_flight=16")
	flag.Var(&pluginKeys, "plugin-key", "another plugin_config key, name=value, the value a string (repeat it): -plugin-key group_commit_linger=500ms")
}

func main() { bench.Main("partitionbench", runAll) }

// blockKeys are the definition's [[topics]] lines from the flags.
func blockKeys() []string {
	lines := []string{fmt.Sprintf("batch_length = %d", *batchLength), fmt.Sprintf("poll_interval = %q", *pollInterval)}
	if *maxLatency != "" {
		lines = append(lines, fmt.Sprintf("max_batch_latency = %q", *maxLatency))
	}
	return append(lines, topicKeys...)
}

func runAll() error {
	brokers := bench.SplitList(*brokersFlag)
	if len(brokers) == 0 {
		return fmt.Errorf("no broker: set -brokers or $PICOMQ_KAFKA_BROKERS (set -a; . .services.env)")
	}
	if *partitions < 1 || *processes < 1 || (*backlog == 0 && (*rate <= 0 || *duration <= 0)) {
		return fmt.Errorf("want -partitions and -processes ≥ 1, and -backlog or a -rate and -duration above 0")
	}
	env, err := bench.Setup("")
	if err != nil {
		return err
	}
	if *connectBin == "" {
		*connectBin = filepath.Join(env.Dist, "picomq-connect")
	}
	if err := bench.Built(*connectBin, filepath.Join(env.Dist, "picomq-host"), filepath.Join(env.Dist, "libpicomq_connector_delta_sink.so")); err != nil {
		return err
	}
	work, err := workload.WorkDir(*workDir, "partitionbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	codec, err := bench.CompressionCodec(*compression)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1<<20), kgo.ProducerBatchCompression(codec))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	n := *backlog
	if n == 0 {
		n = int(*rate * duration.Seconds())
	}
	data, raw := workload.Delta(1, min(n, 100_000))
	payloads := data[0]
	mode := fmt.Sprintf("steady %.0f records/s for %v", *rate, *duration)
	if *backlog > 0 {
		mode = fmt.Sprintf("backlog of %d records produced at once", *backlog)
	}
	fmt.Printf("partitionbench: broker %s; topic of %d partitions; %s; %d picomq-connect process(es) (%s) in one group; %.0f-byte records (make bench-delta's), %s compression\n",
		strings.Join(brokers, ","), *partitions, mode, *processes, filepath.Base(*connectBin), float64(raw)/float64(len(payloads)), *compression)
	fmt.Printf("[[topics]]: %s\n", strings.Join(blockKeys(), "; "))
	if len(pluginKeys) > 0 {
		fmt.Printf("plugin_config, more: %v\n", map[string]string(pluginKeys))
	}

	stamp := fmt.Sprint(time.Now().UnixNano())
	for _, name := range bench.SplitList(*targets) {
		t, err := newTarget(name, work, env.Python, stamp)
		if err != nil {
			return err
		}
		r, err := run(cl, adm, brokers, env.Dist, work, t, name+"_"+stamp, payloads)
		rmErr := t.remove(context.Background())
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if rmErr != nil {
			fmt.Fprintf(os.Stderr, "partitionbench: removing the %s target: %v\n", name, rmErr)
		}
		report(name, t, r)
	}
	fmt.Println("\nlatency: the record's produce time to the first 10 ms poll that saw its partition's committed offset past it (the runtime commits after the table version holding it);")
	fmt.Println("versions/s: new _delta_log/*.json files while producing (backlog: until drained); CPU: user+sys from /proc, first produce to last commit, of all picomq-connect processes and, apart, their picomq-host children.")
	return nil
}

func report(name string, t target, r result) {
	recs := float64(int64(r.records) - r.undrained) // committed
	fmt.Printf("\n== %s (%s)\n", name, t.uri())
	if r.undrained > 0 {
		fmt.Printf("NOT DRAINED: %d of %d records not committed %v after producing ended; the figures below are of what was\n", r.undrained, r.records, *drainTimeout)
	}
	fmt.Printf("records/s %.0f (%d records, first produce to last commit %.1f s)\n", recs/r.elapsed.Seconds(), r.records, r.elapsed.Seconds())
	fmt.Printf("produce→commit latency p50/p95/p99: %s", percentiles(r.latencies))
	if r.missing > 0 {
		fmt.Printf(" (%d records' commits not seen)", r.missing)
	}
	fmt.Println()
	span := r.producing
	if span == 0 {
		span = r.elapsed
	}
	if t.delta() {
		fmt.Printf("table versions: %d, %.1f per second\n", r.versions, float64(r.versions)/span.Seconds())
	}
	if r.producing > 0 {
		fmt.Printf("lag each second: %s; at the end of producing %d\n", bench.LagTrend(r.lags, int64(*batchLength)), r.endLag)
	}
	fmt.Printf("CPU per record: runtime %.2f µs, hosts %.2f µs; peak RSS: runtime %.0f MiB, host %.0f MiB\n",
		bench.US(r.runtimeCPU)/recs, bench.US(r.hostCPU)/recs, float64(r.runtimeRSS)/1024, float64(r.hostRSS)/1024)
	fmt.Printf("batches delivered: %.0f, %.0f records each on average", r.batches, r.batchRecords/max(r.batches, 1))
	if t.delta() {
		fmt.Printf("; Delta sink: %.0f commits, %.0f lost commit races (%.1f %% of commits)", r.commits, r.conflicts, 100*r.conflicts/max(r.commits, 1))
	}
	fmt.Println()
	if r.metricsMissing {
		fmt.Println("  (a process's /metrics lacked some of these counters: picomq_connect_batch_records, picomq_plugin_sink_commits_total, picomq_plugin_sink_commit_conflicts_total)")
	}
}

// pluginKeyFlag collects a repeated -plugin-key name=value (flag.Value).
type pluginKeyFlag map[string]string

func (k *pluginKeyFlag) String() string { return fmt.Sprint(map[string]string(*k)) }

func (k *pluginKeyFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("-plugin-key %q: want name=value", v)
	}
	if *k == nil {
		*k = pluginKeyFlag{}
	}
	(*k)[name] = value
	return nil
}
