// Command pipelinebench is `make bench-pipeline`: the Delta sink through
// the whole runtime. Per target (file://, MinIO) it
//
//  1. runs the plugin alone in the C host on the workload of `make
//     bench-delta` (internal/testenv/workload: the same records, 1000-record
//     batches): the plugin-only CPU per record;
//  2. produces the same batches to a topic while dist/picomq-connect runs
//     a definition with batch_length = the batch size, and measures
//     records/s from the first produce to the last commit, the runtime
//     process's own CPU (user+sys from /proc) and its picomq-host child's,
//     per record, and the runtime's overhead over the plugin-only figure;
//  3. produces at a fixed rate below that capacity for -steady seconds and
//     reports the end-to-end latency (record timestamp at produce → the
//     group's committed offset passing it, p50/p99) and whether the lag
//     grows.
//
// Brokers: -brokers, else $PICOMQ_KAFKA_BROKERS, else franz-go's kfake in
// this process (it prints which). The target figures are against a
// real broker; kfake's own CPU is in this process, never in the runtime's.
//
//	go run ./tools/pipelinebench -batches 100
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/internal/testenv/workload"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

var (
	brokersFlag = flag.String("brokers", os.Getenv("PICOMQ_KAFKA_BROKERS"), "seed brokers (default $PICOMQ_KAFKA_BROKERS; empty: an in-process kfake)")
	batches     = flag.Int("batches", 100, "batches per target")
	batchSize   = flag.Int("batch-size", 1000, "records per batch (the definition's batch_length)")
	targets     = flag.String("targets", "file,s3", "comma-separated: file, s3")
	workDir     = flag.String("dir", "", "parent of the work directory where the file:// tables go (default $TMPDIR; make: BENCH_DIR)")
	steady      = flag.Duration("steady", 10*time.Second, "length of the fixed-rate phase (0: skip)")
	rateShare   = flag.Float64("rate", 0.5, "fixed rate as a share of the measured capacity")
	connectBin  = flag.String("connect", "", "picomq-connect binary (default: dist/picomq-connect)")
	compression = flag.String("compression", "snappy", "the producer's batch compression: none, snappy (franz-go's default), lz4, zstd; the runtime pays for decompressing it")
	cpuProfile  = flag.String("cpuprofile", "", "directory for a pprof CPU profile of each picomq-connect run (<target>-<phase>.pprof)")
)

func main() { bench.Main("pipelinebench", run) }

func run() error {
	env, err := bench.Setup("")
	if err != nil {
		return err
	}
	dist, python := env.Dist, env.Python
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

	brokers := splitList(*brokersFlag)
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
	codec, err := compressionCodec(*compression)
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
	fmt.Printf("workload: %d batches x %d records (make bench-delta's), %.0f bytes/record, produced with %s compression; runtime: %s, batch_length %d, 1 host worker\n",
		*batches, *batchSize, float64(rawBytes)/float64(*batches**batchSize), *compression, filepath.Base(*connectBin), *batchSize)

	run := fmt.Sprintf("%d", time.Now().UnixNano())
	for _, target := range strings.Split(*targets, ",") {
		t, err := newTarget(target, work, run)
		if err != nil {
			return err
		}
		optsJSON, _ := json.Marshal(t.storage)
		for _, name := range []string{"plugin", "pipeline", "steady"} {
			if out, err := exec.Command(python, "-c", workload.CreateDeltaTable, t.uri+"/"+name, string(optsJSON)).CombinedOutput(); err != nil {
				return fmt.Errorf("create table: %v\n%s", err, out)
			}
		}
		fmt.Printf("\n== %s (%s)\n", target, t.uri)
		plugin, err := pluginOnly(dist, t, data)
		if err != nil {
			return fmt.Errorf("%s plugin-only: %w", target, err)
		}
		fmt.Printf("plugin only (C host):    %8.0f records/s   host CPU %6.2f µs/record\n",
			float64(plugin.records)/plugin.elapsed.Seconds(), bench.US(plugin.hostCPU)/float64(plugin.records))

		topic := "bench." + target + "." + run
		resp, err := adm.CreateTopics(context.Background(), 1, -1, nil, topic, topic+".steady")
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return fmt.Errorf("create topics: %w", err)
		}
		p, err := pipeline(cl, adm, brokers, dist, work, t, topic, "pipeline", data, 0)
		if err != nil {
			return fmt.Errorf("%s pipeline: %w", target, err)
		}
		rcpu, ccpu := bench.US(p.runtimeCPU)/float64(p.records), bench.US(p.hostCPU)/float64(p.records)
		pcpu := bench.US(plugin.hostCPU) / float64(plugin.records)
		fmt.Printf("through picomq-connect:  %8.0f records/s   runtime CPU %6.2f µs/record   child host CPU %6.2f µs/record\n",
			float64(p.records)/p.elapsed.Seconds(), rcpu, ccpu)
		fmt.Printf("  runtime overhead: %.1f %% of the plugin-only CPU per record (target ≤ 15 %%); runtime+child %.2f µs vs plugin-only %.2f µs (%+.1f %%)\n",
			100*rcpu/pcpu, rcpu+ccpu, pcpu, 100*(rcpu+ccpu-pcpu)/pcpu)
		fmt.Printf("  end-to-end latency with the backlog (all produced at once): p50 %.0f ms, p99 %.0f ms\n", bench.MS(bench.Percentile(p.latencies, 0.5)), bench.MS(bench.Percentile(p.latencies, 0.99)))

		if *steady > 0 {
			rate := *rateShare * float64(p.records) / p.elapsed.Seconds()
			s, err := pipeline(cl, adm, brokers, dist, work, t, topic+".steady", "steady", data, rate)
			if err != nil {
				return fmt.Errorf("%s steady: %w", target, err)
			}
			fmt.Printf("steady %.0f records/s for %v (%.0f %% of capacity): e2e latency p50 %.0f ms, p99 %.0f ms; lag sampled each second: %s; lag at end of producing %d\n",
				rate, *steady, 100**rateShare, bench.MS(bench.Percentile(s.latencies, 0.5)), bench.MS(bench.Percentile(s.latencies, 0.99)), lagTrend(s.lags), s.endLag)
		}
	}
	fmt.Println("\nruntime CPU: utime+stime of the picomq-connect process; child host CPU: of its picomq-host child; both from /proc, from the first produce to the last commit.")
	fmt.Println("e2e latency: the record's produce timestamp to the first poll (every 5 ms) that saw the group's committed offset past it.")
	return nil
}

type target struct {
	name    string
	uri     string            // the directory the three tables go under
	storage map[string]string // delta-rs storage options
	cfg     map[string]any    // plugin_config besides table_uri
	env     []string          // secrets, as environment overrides
}

func newTarget(name, work, run string) (*target, error) {
	switch name {
	case "file":
		return &target{name: name, uri: "file://" + filepath.Join(work, "tables"), storage: map[string]string{}, cfg: map[string]any{}}, nil
	case "s3":
		svc, err := services.Lookup()
		if err != nil {
			return nil, fmt.Errorf("s3 target: %w (run buildscripts/services.sh start)", err)
		}
		bucket := "pipelinebench-" + run
		client := services.NewS3Client(svc.S3Endpoint, svc.S3AccessKey, svc.S3SecretKey, svc.S3Region)
		if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
			return nil, err
		}
		return &target{name: name, uri: "s3://" + bucket,
			storage: map[string]string{"AWS_ENDPOINT_URL": svc.S3Endpoint, "AWS_ACCESS_KEY_ID": svc.S3AccessKey, "AWS_SECRET_ACCESS_KEY": svc.S3SecretKey,
				"AWS_REGION": svc.S3Region, "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"},
			cfg: map[string]any{"storage_backend_type": "s3", "aws_s3_region": svc.S3Region, "aws_s3_endpoint_url": svc.S3Endpoint, "aws_s3_allow_http": true},
			env: []string{"AWS_S3_ACCESS_KEY=" + svc.S3AccessKey, "AWS_S3_SECRET_KEY=" + svc.S3SecretKey}}, nil
	}
	return nil, fmt.Errorf("unknown target %q", name)
}

type pluginResult struct {
	records int
	elapsed time.Duration
	hostCPU time.Duration
}

// pluginOnly is make bench-delta's measurement: the batches straight into
// the plugin in the C host, with the host's CPU.
func pluginOnly(dist string, t *target, data [][]hostclient.Record) (pluginResult, error) {
	var r pluginResult
	h, err := bench.StartHost(dist, 1)
	if err != nil {
		return r, err
	}
	defer h.Close()
	lib, err := h.Load(filepath.Join(dist, "libpicomq_connector_delta_sink.so"))
	if err != nil {
		return r, err
	}
	cfg := map[string]any{"table_uri": t.uri + "/plugin"}
	for k, v := range t.cfg {
		cfg[k] = v
	}
	for _, kv := range t.env {
		k, v, _ := strings.Cut(kv, "=")
		cfg[strings.ToLower(k)] = v
	}
	inst, err := lib.Open(bench.Definition("bench", cfg))
	if err != nil {
		return r, err
	}
	cpu0, err := hosttest.ProcessCPU(h.Pid())
	if err != nil {
		return r, err
	}
	start := time.Now()
	for _, recs := range data {
		if err := inst.Consume(hostclient.Batch{Attempt: 1, Topic: "bench", Schema: "json", Records: recs}); err != nil {
			return r, err
		}
		r.records += len(recs)
	}
	r.elapsed = time.Since(start)
	cpu1, err := hosttest.ProcessCPU(h.Pid())
	if err != nil {
		return r, err
	}
	r.hostCPU = cpu1 - cpu0
	return r, inst.Close()
}

type pipeResult struct {
	records             int
	elapsed             time.Duration
	runtimeCPU, hostCPU time.Duration
	latencies           []time.Duration
	lags                []int64 // sampled each second while producing
	endLag              int64   // when the producer stopped
}

// pipeline runs dist/picomq-connect on a definition for topic into table
// name, produces data to topic (all at once when rate is 0, else at rate
// records/s for -steady) and waits until everything is committed.
func pipeline(cl *kgo.Client, adm *kadm.Client, brokers []string, dist, work string, t *target, topic, name string,
	data [][]hostclient.Record, rate float64) (pipeResult, error) {
	var r pipeResult
	key := "bench_" + name
	group := "picomq-connect-sink-" + key
	cfg := map[string]any{"table_uri": t.uri + "/" + name}
	for k, v := range t.cfg {
		cfg[k] = v
	}
	var b strings.Builder
	fmt.Fprintf(&b, "type = \"sink\"\nkey = %q\npath = \"libpicomq_connector_delta_sink\"\n\n[[topics]]\ntopics = [%q]\nschema = \"json\"\nbatch_length = %d\npoll_interval = \"100ms\"\n\n[plugin_config]\n",
		key, topic, *batchSize)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range cfg {
			if !yield(k) {
				return
			}
		}
	}) {
		v, _ := json.Marshal(cfg[k])
		fmt.Fprintf(&b, "%s = %s\n", k, v)
	}
	defFile := filepath.Join(work, key+".toml")
	if err := os.WriteFile(defFile, []byte(b.String()), 0o644); err != nil {
		return r, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return r, err
	}
	args := []string{"--brokers", strings.Join(brokers, ","), "--plugin-dir", dist, "--workers", "1",
		"--http", httpAddr, "--log-level", "warn"}
	if *cpuProfile != "" {
		args = append(args, "--cpuprofile", filepath.Join(*cpuProfile, t.name+"-"+name+".pprof"))
	}
	cmd := exec.Command(*connectBin, append(args, defFile)...)
	cmd.Env = os.Environ()
	for _, kv := range t.env {
		cmd.Env = append(cmd.Env, "PICOMQ_CONNECTORS_SINK_"+strings.ToUpper(key)+"_PLUGIN_CONFIG_"+kv)
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return r, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()
	if err := waitReady(httpAddr, exited); err != nil {
		return r, err
	}
	hostPid, err := childOf(cmd.Process.Pid)
	if err != nil {
		return r, err
	}

	// Commit times, polled.
	var mu sync.Mutex
	type sample struct {
		at     time.Time
		offset int64
	}
	var commits []sample
	var produced int64 // records handed to the producer
	stopPoll := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			resp, err := adm.FetchOffsets(context.Background(), group)
			if err == nil {
				if o, ok := resp.Lookup(topic, 0); ok {
					mu.Lock()
					if len(commits) == 0 || o.At > commits[len(commits)-1].offset {
						commits = append(commits, sample{time.Now(), o.At})
					}
					mu.Unlock()
				}
			}
			select {
			case <-stopPoll:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	cpuR0, err1 := hosttest.ProcessCPU(cmd.Process.Pid)
	cpuH0, err2 := hosttest.ProcessCPU(hostPid)
	if err := errors.Join(err1, err2); err != nil {
		return r, err
	}
	start := time.Now()
	var produceTimes []time.Time // per offset
	var prodErr error
	var perr sync.Mutex
	send := func(recs []hostclient.Record) {
		for _, rec := range recs {
			now := time.Now()
			produceTimes = append(produceTimes, now)
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: rec.Payload, Timestamp: now}, func(_ *kgo.Record, err error) {
				if err != nil {
					perr.Lock()
					prodErr = errors.Join(prodErr, err)
					perr.Unlock()
				}
			})
		}
		produced += int64(len(recs))
	}
	if rate == 0 {
		for _, recs := range data {
			send(recs)
		}
	} else {
		// Fixed rate, in 10 ms slices, cycling through the workload.
		end := start.Add(*steady)
		nextLag := start.Add(time.Second)
		var flat []hostclient.Record
		for _, recs := range data {
			flat = append(flat, recs...)
		}
		i := 0
		for now := time.Now(); now.Before(end); now = time.Now() {
			want := int(rate * now.Sub(start).Seconds())
			for int(produced) < want {
				n := min(want-int(produced), len(flat)-i%len(flat))
				send(flat[i%len(flat) : i%len(flat)+n])
				i += n
			}
			if now.After(nextLag) {
				r.lags = append(r.lags, produced-lastCommit(&mu, func() int64 {
					if len(commits) == 0 {
						return 0
					}
					return commits[len(commits)-1].offset
				}))
				nextLag = nextLag.Add(time.Second)
			}
			time.Sleep(10 * time.Millisecond)
		}
		r.endLag = produced - lastCommit(&mu, func() int64 {
			if len(commits) == 0 {
				return 0
			}
			return commits[len(commits)-1].offset
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		return r, err
	}
	if prodErr != nil {
		return r, fmt.Errorf("produce: %w", prodErr)
	}
	// Wait for the last commit.
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		done := len(commits) > 0 && commits[len(commits)-1].offset >= produced
		mu.Unlock()
		if done {
			break
		}
		select {
		case err := <-exited:
			return r, fmt.Errorf("picomq-connect exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("not everything committed after 5 minutes")
		}
	}
	close(stopPoll)
	<-polled
	cpuR1, err1 := hosttest.ProcessCPU(cmd.Process.Pid)
	cpuH1, err2 := hosttest.ProcessCPU(hostPid)
	if err := errors.Join(err1, err2); err != nil {
		return r, err
	}
	r.elapsed = commits[len(commits)-1].at.Sub(start)
	r.runtimeCPU, r.hostCPU = cpuR1-cpuR0, cpuH1-cpuH0
	r.records = int(produced)
	// Latency of each record: its produce time to the first sample whose
	// committed offset is past it.
	c := 0
	for off, at := range produceTimes {
		for commits[c].offset <= int64(off) {
			c++
		}
		r.latencies = append(r.latencies, commits[c].at.Sub(at))
	}
	return r, nil
}

func lastCommit(mu *sync.Mutex, f func() int64) int64 {
	mu.Lock()
	defer mu.Unlock()
	return f()
}

// lagTrend prints the sampled lags and whether they grow: the last
// third's mean against the first third's.
func lagTrend(lags []int64) string {
	if len(lags) < 3 {
		return fmt.Sprint(lags)
	}
	mean := func(s []int64) float64 {
		var t int64
		for _, v := range s {
			t += v
		}
		return float64(t) / float64(len(s))
	}
	n := len(lags) / 3
	first, last := mean(lags[:n]), mean(lags[len(lags)-n:])
	verdict := "not growing"
	if last > 2*first+float64(*batchSize) {
		verdict = "GROWING"
	}
	return fmt.Sprintf("%v (first third mean %.0f, last third %.0f: %s)", lags, first, last, verdict)
}

// waitReady waits for /readyz: the sink's consumers started.
func waitReady(addr string, exited chan error) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-exited:
			return fmt.Errorf("picomq-connect exited at start: %v", err)
		default:
		}
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return errors.New("picomq-connect not ready after 30 s")
}

// childOf finds the one child process of pid (the picomq-host) in /proc.
func childOf(pid int) (int, error) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			c, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			s := string(b)
			f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
			if len(f) > 1 && f[1] == strconv.Itoa(pid) {
				return c, nil
			}
		}
	}
	return 0, fmt.Errorf("no child process of picomq-connect (pid %d)", pid)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// compressionCodec maps -compression to the producer's codec.
func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("-compression %q: want none, snappy, lz4 or zstd", name)
}
