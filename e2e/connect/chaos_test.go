package connect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
)

// Chaos parameters: small enough for a 2-core machine in about two
// minutes, large enough that every kill lands among batches in flight.
const (
	chaosPerTopic   = 2000                   // records produced to each topic
	chaosChunk      = 40                     // records per produce call
	chaosChunkPause = 500 * time.Millisecond // so production lasts ~25 s
	chaosKills      = 4                      // kill -9 moments during production
)

// The end-to-end promise, against a real Apache Kafka broker:
// records produced to three topics (one with two partitions) while
// picomq-connect runs two definitions, Delta on MinIO with a per-topic
// table template and Redshift through the emulator, and while the runtime
// and its host children are killed with SIGKILL at random moments and
// MinIO and the PostgreSQL behind the emulator are restarted once each,
// all land in each destination exactly once, and both groups' committed
// offsets reach the end offsets.
//
// MinIO and PostgreSQL are this test's own instances
// (services.StartPrivate): `go test` runs packages in parallel, and
// restarting the shared ones would fail other packages' tests. The broker
// is the shared one; it is never restarted, and the topics and groups are
// this run's own.
func TestChaosBothSinksExactlyOnce(t *testing.T) {
	began := time.Now()
	kafka := services.RequireKafka(t)
	priv := services.StartPrivate(t, "postgres", "minio")
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PICOMQ_CHAOS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (PICOMQ_CHAOS_SEED=%d repeats the kill schedule)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	run := strconv.FormatInt(time.Now().UnixNano()%1e12, 36) // topics and groups of this run alone

	// Topics: chaos<run>.alpha, .beta (one partition), .gamma (two).
	prefix := "chaos" + run
	topics := map[string]int32{prefix + ".alpha": 1, prefix + ".beta": 1, prefix + ".gamma": 2}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range topics {
			if !yield(n) {
				return
			}
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka.KafkaBrokers...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	for name, parts := range topics {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { adm.DeleteTopics(context.Background(), names...) })

	// Delta: one table per topic, created first (the sink does not create
	// tables), on the private MinIO.
	bucket := priv.NewBucket(t)
	storage := map[string]string{
		"AWS_ACCESS_KEY_ID": priv.S3AccessKey, "AWS_SECRET_ACCESS_KEY": priv.S3SecretKey,
		"AWS_REGION": priv.S3Region, "AWS_ENDPOINT_URL": priv.S3Endpoint, "AWS_ALLOW_HTTP": "true",
		"AWS_S3_ALLOW_UNSAFE_RENAME": "true",
	}
	storageJSON, _ := json.Marshal(storage)
	tableURI := func(topic string) string {
		return "s3://" + bucket + "/chaos/" + topic[strings.LastIndexByte(topic, '.')+1:]
	}
	var uris []string
	for _, n := range names {
		uris = append(uris, tableURI(n))
	}
	pyenv.Run(t, `
import json, sys
import pyarrow as pa
from deltalake import write_deltalake
opts = json.loads(sys.argv[1])
schema = pa.schema([("id", pa.int64()), ("customer", pa.string())])
for uri in sys.argv[2:]:
    write_deltalake(uri, pa.Table.from_pylist([], schema=schema), storage_options=opts)
`, append([]string{string(storageJSON)}, uris...)...)

	// Redshift: the emulator, in this process, in front of the private
	// PostgreSQL; it outlives every runtime kill.
	db := priv.NewDatabase(t)
	emu := rsemu.NewTest(t, rsemu.Config{BackendDSN: db.DSN, S3Endpoint: priv.S3Endpoint,
		S3AccessKey: priv.S3AccessKey, S3SecretKey: priv.S3SecretKey, S3Region: priv.S3Region})

	// session.timeout.ms: a runtime killed with SIGKILL does not leave its
	// groups, so its successor gets no partitions until the broker drops
	// the dead members after the session timeout (45 s by default, 6 s the
	// broker's minimum).
	deltaGroup, rsGroup := prefix+"-delta", prefix+"-redshift"
	defs := t.TempDir()
	writeDef(t, filepath.Join(defs, "delta.toml"), fmt.Sprintf(`type = "sink"
key = "chaos_delta"
path = "libpicomq_connector_delta_sink"

[[topics]]
pattern = %q
schema = "json"
batch_length = 200
poll_interval = "100ms"
consumer_group = %q
properties = { "session.timeout.ms" = 6000, "heartbeat.interval.ms" = 1000 }

[plugin_config]
table_uri = %q
storage_backend_type = "s3"
aws_s3_access_key = %q
aws_s3_secret_key = %q
aws_s3_region = %q
aws_s3_endpoint_url = %q
aws_s3_allow_http = true
`, `^`+prefix+`\..*`, deltaGroup, "s3://"+bucket+"/chaos/{topic_segment[-1]}",
		priv.S3AccessKey, priv.S3SecretKey, priv.S3Region, priv.S3Endpoint))
	writeDef(t, filepath.Join(defs, "redshift.toml"), fmt.Sprintf(`type = "sink"
key = "chaos_redshift"
path = "libpicomq_connector_redshift_sink"

[[topics]]
pattern = %q
schema = "json"
batch_length = 500
poll_interval = "200ms"
consumer_group = %q
properties = { "session.timeout.ms" = 6000, "heartbeat.interval.ms" = 1000 }

[plugin_config]
connection_string = %q
target_table = "chaos_{topic_segment[-1]}"
aws_iam_role = %q
s3_bucket = %q
s3_prefix = "redshift"
aws_region = %q
s3_endpoint = %q
aws_access_key_id = %q
aws_secret_access_key = %q
batch_size = 500
payload_format = "text"
retry_delay = "200ms"
max_retries = 5
`, `^`+prefix+`\..*`, rsGroup, emu.DSN(db.Name), rsemu.DefaultRole, bucket, priv.S3Region, priv.S3Endpoint,
		priv.S3AccessKey, priv.S3SecretKey))

	logPath := filepath.Join(t.TempDir(), "connect.log")
	if p := os.Getenv("PICOMQ_CHAOS_LOG"); p != "" {
		logPath = p // kept, to read after the test
		os.Remove(p)
	}
	rt := &connectProc{t: t, bin: buildConnect(t), host: hosttest.BuildHost(t), plugins: distDir(t),
		brokers: strings.Join(kafka.KafkaBrokers, ","), defs: defs, log: logPath}
	t.Logf("setup done in %v", time.Since(began).Round(time.Millisecond))
	t.Cleanup(rt.kill)
	rt.start()

	// Produce in the background: ids 0..chaosPerTopic-1 per topic, in
	// chunks, interleaved over the topics.
	produced := make(chan error, 1)
	go func() {
		for from := 0; from < chaosPerTopic; from += chaosChunk {
			var recs []*kgo.Record
			for _, n := range names {
				for id := from; id < min(from+chaosChunk, chaosPerTopic); id++ {
					recs = append(recs, &kgo.Record{Topic: n, Value: fmt.Appendf(nil, `{"id":%d,"customer":"c%d"}`, id, id%97)})
				}
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				produced <- err
				return
			}
			time.Sleep(chaosChunkPause)
		}
		produced <- nil
	}()

	// Chaos over the production time: kills at random moments, MinIO and
	// PostgreSQL restarted once each, in a random order among them.
	produceTime := time.Duration(chaosPerTopic/chaosChunk) * chaosChunkPause
	events := []string{"restart minio", "restart postgres"}
	for range chaosKills {
		events = append(events, "kill")
	}
	rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	step := produceTime / time.Duration(len(events)+1)
	for _, ev := range events {
		time.Sleep(step/2 + time.Duration(rng.Int64N(int64(step))))
		switch ev {
		case "restart minio":
			t.Log("chaos: restarting MinIO")
			priv.Restart(t, "minio")
		case "restart postgres":
			t.Log("chaos: restarting PostgreSQL")
			priv.Restart(t, "postgres")
		case "kill":
			rt.chaosKill(rng)
		}
	}
	if err := <-produced; err != nil {
		t.Fatalf("producing: %v", err)
	}
	t.Logf("production and chaos done at %v", time.Since(began).Round(time.Millisecond))

	// A sink that hit its retry limit during an outage stops, and the
	// runtime exits 1 once no sink runs; a restarted runtime resumes from
	// the committed offsets. So: keep one running until both groups are at
	// the end offsets.
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	for _, group := range []string{deltaGroup, rsGroup} {
		rt.waitCommitted(adm, group, ends, 90*time.Second)
	}
	t.Logf("offsets at the end at %v", time.Since(began).Round(time.Millisecond))
	if code := rt.stop(); code != 0 {
		t.Errorf("picomq-connect exited %d after SIGTERM, want 0\n%s", code, rt.tail())
	}
	t.Logf("chaos: %d runtime kills, %d host kills, %d runtime exits on their own, %d starts; runtime log: %s",
		rt.runtimeKills, rt.hostKills, rt.selfExits, rt.starts, rt.summary())

	// Delta, read by delta-rs: every id exactly once per topic table.
	out := pyenv.Run(t, `
import json, sys
from deltalake import DeltaTable
opts = json.loads(sys.argv[1])
print(json.dumps({uri: sorted(r["id"] for r in DeltaTable(uri, storage_options=opts).to_pyarrow_table(columns=["id"]).to_pylist()) for uri in sys.argv[2:]}))
`, append([]string{string(storageJSON)}, uris...)...)
	var deltaIDs map[string][]int64
	if err := json.Unmarshal([]byte(out), &deltaIDs); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, uri := range uris {
		checkExactlyOnce(t, "delta "+uri, deltaIDs[uri])
	}

	// Redshift, read straight from PostgreSQL: one row per record id
	// (topic:partition:offset) and per produced payload id.
	conn, err := pgx.Connect(ctx, db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, n := range names {
		table := pgx.Identifier{"chaos_" + n[strings.LastIndexByte(n, '.')+1:]}.Sanitize()
		var rows, ids int64
		if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT id) FROM `+table).Scan(&rows, &ids); err != nil {
			t.Fatal(err)
		}
		if rows != ids {
			t.Errorf("redshift %s: %d rows, %d distinct record ids", table, rows, ids)
		}
		var payloadIDs []int64
		r, err := conn.Query(ctx, `SELECT (payload::json->>'id')::bigint FROM `+table+` ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		if payloadIDs, err = pgx.CollectRows(r, pgx.RowTo[int64]); err != nil {
			t.Fatal(err)
		}
		checkExactlyOnce(t, "redshift "+table, payloadIDs)
	}

	// The groups' committed offsets are the end offsets (read again, after
	// the shutdown's final commit).
	for _, group := range []string{deltaGroup, rsGroup} {
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		ends.Each(func(e kadm.ListedOffset) {
			if o, ok := committed.Lookup(e.Topic, e.Partition); !ok || o.At != e.Offset {
				t.Errorf("group %s %s[%d]: committed %d, end offset %d", group, e.Topic, e.Partition, o.At, e.Offset)
			}
		})
	}
}

// checkExactlyOnce fails unless sorted ids are 0..chaosPerTopic-1, naming
// the missing and the duplicated ones.
func checkExactlyOnce(t *testing.T, what string, ids []int64) {
	t.Helper()
	slices.Sort(ids)
	seen := map[int64]int{}
	for _, id := range ids {
		seen[id]++
	}
	var missing, dup []int64
	for id := range int64(chaosPerTopic) {
		switch seen[id] {
		case 0:
			missing = append(missing, id)
		case 1:
		default:
			dup = append(dup, id)
		}
	}
	if len(ids) != chaosPerTopic || len(missing) > 0 || len(dup) > 0 {
		t.Errorf("%s: %d rows for %d records; missing %s; duplicated %s", what, len(ids), chaosPerTopic, head(missing), head(dup))
	}
}

func head(ids []int64) string {
	if len(ids) > 20 {
		return fmt.Sprintf("%v… (%d)", ids[:20], len(ids))
	}
	return fmt.Sprint(ids)
}

func writeDef(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// buildConnect builds cmd/picomq-connect into a temporary directory.
func buildConnect(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "picomq-connect")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/picomq-connect")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/picomq-connect: %v\n%s", err, out)
	}
	return bin
}

// connectProc is the picomq-connect process under test, restarted by
// waitCommitted whenever it is not running.
type connectProc struct {
	t                                          *testing.T
	bin, host, plugins, brokers, defs          string
	log                                        string
	mu                                         sync.Mutex
	cmd                                        *exec.Cmd
	exited                                     chan struct{}
	code                                       int
	starts, runtimeKills, hostKills, selfExits int
}

func (r *connectProc) start() {
	r.t.Helper()
	f, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "---- start %d\n", r.starts+1)
	cmd := exec.Command(r.bin, "--brokers", r.brokers, "--plugin-dir", r.plugins, "--host", r.host,
		"--workers", "2", "--shutdown-timeout", "60s", r.defs)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	exited := make(chan struct{})
	r.mu.Lock()
	r.cmd, r.exited = cmd, exited
	r.starts++
	r.mu.Unlock()
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		r.mu.Lock()
		r.code = code
		r.mu.Unlock()
		close(exited)
	}()
}

// running reports whether the current process has not exited.
func (r *connectProc) running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// children are the pids of the runtime's child processes (its plugin
// hosts).
func (r *connectProc) children() []int { return hosttest.Children(r.cmd.Process.Pid) }

// chaosKill sends SIGKILL either to one plugin host (the runtime restarts
// it) or to the runtime and all its hosts at once (the test restarts it).
func (r *connectProc) chaosKill(rng *rand.Rand) {
	if !r.running() {
		r.selfExits++
		r.t.Logf("chaos: picomq-connect had exited (%d); restarting\n%s", r.code, r.tail())
		r.start()
		return
	}
	kids := r.children()
	if len(kids) > 0 && rng.IntN(3) == 0 {
		pid := kids[rng.IntN(len(kids))]
		r.t.Logf("chaos: kill -9 host %d", pid)
		syscall.Kill(pid, syscall.SIGKILL)
		r.hostKills++
		return
	}
	r.t.Logf("chaos: kill -9 picomq-connect %d and hosts %v", r.cmd.Process.Pid, kids)
	r.cmd.Process.Signal(syscall.SIGKILL)
	for _, pid := range kids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	<-r.exited
	r.runtimeKills++
	r.start()
}

// waitCommitted restarts the runtime when it exited by itself, until
// group's committed offsets equal ends.
func (r *connectProc) waitCommitted(adm *kadm.Client, group string, ends kadm.ListedOffsets, timeout time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if !r.running() {
			r.selfExits++
			r.t.Logf("picomq-connect exited (%d) by itself; restarting\n%s", r.code, r.tail())
			r.start()
		}
		committed, err := adm.FetchOffsets(context.Background(), group)
		behind := 0
		ends.Each(func(e kadm.ListedOffset) {
			if o, ok := committed.Lookup(e.Topic, e.Partition); !ok || o.At != e.Offset {
				behind++
			}
		})
		if err == nil && behind == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("group %s: %d partitions not at the end offsets after %v (%v)\n%s", group, behind, timeout, err, r.tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop sends SIGTERM and returns the exit code.
func (r *connectProc) stop() int {
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(90 * time.Second):
		r.t.Errorf("picomq-connect did not exit 90 s after SIGTERM")
		r.kill()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.code
}

func (r *connectProc) kill() {
	if r.cmd != nil && r.running() {
		for _, pid := range r.children() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		r.cmd.Process.Signal(syscall.SIGKILL)
		<-r.exited
	}
}

// summary counts the runtime's log lines that show the chaos at work.
func (r *connectProc) summary() string {
	b, _ := os.ReadFile(r.log)
	var parts []string
	for _, what := range []string{"delivering again", "plugin process died", "plugin host process exited", "commit failed", "consumer stopped"} {
		parts = append(parts, fmt.Sprintf("%d × %q", strings.Count(string(b), what), what))
	}
	return strings.Join(parts, ", ")
}

// tail is the end of the runtime's log.
func (r *connectProc) tail() string {
	b, _ := os.ReadFile(r.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}
