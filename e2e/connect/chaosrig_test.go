package connect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/audit"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/delta/deltatest"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
)

// chaosRig is what a chaos test runs in: topics of its own on the shared
// Apache Kafka broker; a private MinIO and PostgreSQL (services.StartPrivate:
// `go test` runs packages in parallel, and restarting the shared ones would
// fail other packages' tests) with an empty Delta table per topic and the
// Redshift emulator in front; picomq-connect processes running the
// definitions in defs; and a kill schedule drawn from a seed
// (PICOMQ_CHAOS_SEED repeats it).
type chaosRig struct {
	t       *testing.T
	began   time.Time
	rng     *rand.Rand
	kafka   services.Services
	priv    *services.Private
	cl      *kgo.Client
	adm     *kadm.Client
	prefix  string           // of the topics and groups, this run's own
	topics  map[string]int32 // topic → partitions
	names   []string         // topics, sorted
	bucket  string
	storage []byte   // delta-rs storage options, JSON
	uris    []string // the Delta table of each topic in names
	db      services.Database
	emu     *rsemu.Server
	defs    string
	procs   []*connectProc
	// connectArgs are more flags for every picomq-connect process.
	connectArgs []string
}

// newChaosRig creates topics <prefix>.<suffix> with the given partition
// counts, their Delta tables (id long, customer string, and the pico_topic,
// pico_partition and pico_offset columns the audit reads) and the emulator.
func newChaosRig(t *testing.T, partitions map[string]int32) *chaosRig {
	r := &chaosRig{t: t, began: time.Now(), kafka: services.RequireKafka(t)}
	r.priv = services.StartPrivate(t, "postgres", "minio")
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PICOMQ_CHAOS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (PICOMQ_CHAOS_SEED=%d repeats the kill schedule)", seed, seed)
	r.rng = rand.New(rand.NewPCG(seed, seed))
	r.prefix = "chaos" + strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	r.topics = map[string]int32{}
	for suffix, n := range partitions {
		r.topics[r.prefix+"."+suffix] = n
		r.names = append(r.names, r.prefix+"."+suffix)
	}
	slices.Sort(r.names)
	var err error
	r.cl, err = kgo.NewClient(kgo.SeedBrokers(r.kafka.KafkaBrokers...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.cl.Close)
	r.adm = kadm.NewClient(r.cl)
	for name, parts := range r.topics {
		if _, err := r.adm.CreateTopic(context.Background(), parts, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { r.adm.DeleteTopics(context.Background(), r.names...) })

	// Delta: one table per topic, created first, on the private MinIO.
	r.bucket = r.priv.NewBucket(t)
	r.storage, _ = json.Marshal(map[string]string{
		"AWS_ACCESS_KEY_ID": r.priv.S3AccessKey, "AWS_SECRET_ACCESS_KEY": r.priv.S3SecretKey,
		"AWS_REGION": r.priv.S3Region, "AWS_ENDPOINT_URL": r.priv.S3Endpoint, "AWS_ALLOW_HTTP": "true",
		"AWS_S3_ALLOW_UNSAFE_RENAME": "true",
	})
	for _, n := range r.names {
		r.uris = append(r.uris, "s3://"+r.bucket+"/chaos/"+n[strings.LastIndexByte(n, '.')+1:])
	}
	pyenv.Run(t, `
import json, sys
import pyarrow as pa
from deltalake import write_deltalake
opts = json.loads(sys.argv[1])
schema = pa.schema([("id", pa.int64()), ("customer", pa.string()),
    ("pico_topic", pa.string()), ("pico_partition", pa.int32()), ("pico_offset", pa.int64())])
for uri in sys.argv[2:]:
    write_deltalake(uri, pa.Table.from_pylist([], schema=schema), storage_options=opts)
`, append([]string{string(r.storage)}, r.uris...)...)

	// Redshift: the emulator, in this process, in front of the private
	// PostgreSQL; it outlives every runtime kill.
	r.db = r.priv.NewDatabase(t)
	r.emu = rsemu.NewTest(t, rsemu.Config{BackendDSN: r.db.DSN, S3Endpoint: r.priv.S3Endpoint,
		S3AccessKey: r.priv.S3AccessKey, S3SecretKey: r.priv.S3SecretKey, S3Region: r.priv.S3Region})
	r.defs = t.TempDir()
	return r
}

// chaosBlock is what a test sets in a definition's [[topics]] block, and
// what it adds to its [plugin_config], besides what the rig fills in.
type chaosBlock struct {
	batchLength  int
	pollInterval string
	extraTopic   string // more [[topics]] lines
	extraConfig  string // more [plugin_config] lines
}

// session.timeout.ms: a runtime killed with SIGKILL does not leave its
// groups, so its successor gets no partitions until the broker drops the
// dead members after the session timeout (45 s by default, 6 s the
// broker's minimum).
const chaosProperties = `properties = { "session.timeout.ms" = 6000, "heartbeat.interval.ms" = 1000 }`

// topicsBlock is a definition's [[topics]] block: the topics matching
// pattern, consumed in group with the rig's properties and b's settings.
func topicsBlock(pattern, group string, b chaosBlock) string {
	return fmt.Sprintf(`[[topics]]
pattern = %q
schema = "json"
batch_length = %d
poll_interval = %q
consumer_group = %q
%s
%s
`, pattern, b.batchLength, b.pollInterval, group, chaosProperties, b.extraTopic)
}

// writeDeltaDef writes the Delta definition (key chaos_delta, a table per
// topic) consuming every topic of the rig in group, and returns group.
func (r *chaosRig) writeDeltaDef(b chaosBlock) string {
	group := r.prefix + "-delta"
	writeDef(r.t, filepath.Join(r.defs, "delta.toml"), fmt.Sprintf(`type = "sink"
key = "chaos_delta"
path = "libpicomq_connector_delta_sink"

%s%smetadata_columns = true
%s
`, topicsBlock(`^`+r.prefix+`\..*`, group, b),
		deltaS3PluginConfig(r.priv.Services, "s3://"+r.bucket+"/chaos/{topic_segment[-1]}"), b.extraConfig))
	return group
}

// writeRedshiftDef writes the Redshift definition (key chaos_redshift, a
// table chaos_<suffix> per topic) and returns its group.
func (r *chaosRig) writeRedshiftDef(b chaosBlock) string {
	group := r.prefix + "-redshift"
	writeDef(r.t, filepath.Join(r.defs, "redshift.toml"), fmt.Sprintf(`type = "sink"
key = "chaos_redshift"
path = "libpicomq_connector_redshift_sink"

%s%sbatch_size = %d
retry_delay = "200ms"
max_retries = 5
%s
`, topicsBlock(`^`+r.prefix+`\..*`, group, b),
		redshiftPluginConfig(r.priv.Services, r.emu.DSN(r.db.Name), r.bucket, "chaos_{topic_segment[-1]}"),
		b.batchLength, b.extraConfig))
	return group
}

// start starts n picomq-connect processes on the rig's definitions, each
// with a log of its own (PICOMQ_CHAOS_LOG=path keeps them: path, path.2, …).
func (r *chaosRig) start(n int) {
	bin, host, plugins := buildConnect(r.t), hosttest.BuildHost(r.t), distDir(r.t)
	for i := range n {
		logPath := filepath.Join(r.t.TempDir(), "connect.log")
		if p := os.Getenv("PICOMQ_CHAOS_LOG"); p != "" {
			logPath = p // kept, to read after the test
			if i > 0 {
				logPath += "." + strconv.Itoa(i+1)
			}
			os.Remove(logPath)
		}
		p := &connectProc{t: r.t, bin: bin, host: host, plugins: plugins,
			brokers: strings.Join(r.kafka.KafkaBrokers, ","), defs: r.defs, log: logPath, args: r.connectArgs}
		r.t.Cleanup(p.kill)
		p.start()
		r.procs = append(r.procs, p)
	}
	r.t.Logf("setup done in %v", time.Since(r.began).Round(time.Millisecond))
}

// produce writes ids 0..perTopic-1 to every topic in the background, in
// chunks of chunk records per topic with pause between them (round robin
// over a topic's partitions), and returns the channel its end is sent on.
func (r *chaosRig) produce(perTopic, chunk int, pause time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		for from := 0; from < perTopic; from += chunk {
			var recs []*kgo.Record
			for _, n := range r.names {
				for id := from; id < min(from+chunk, perTopic); id++ {
					recs = append(recs, &kgo.Record{Topic: n, Value: fmt.Appendf(nil, `{"id":%d,"customer":"c%d"}`, id, id%97)})
				}
			}
			if err := r.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				done <- err
				return
			}
			time.Sleep(pause)
		}
		done <- nil
	}()
	return done
}

// chaos spreads kills kill -9 moments (of one host, or of a runtime and its
// hosts, in a random process), one MinIO restart and one PostgreSQL restart
// over d, in a random order.
func (r *chaosRig) chaos(d time.Duration, kills int) {
	events := []string{"restart minio", "restart postgres"}
	for range kills {
		events = append(events, "kill")
	}
	r.rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	step := d / time.Duration(len(events)+1)
	for _, ev := range events {
		time.Sleep(step/2 + time.Duration(r.rng.Int64N(int64(step))))
		switch ev {
		case "restart minio":
			r.t.Log("chaos: restarting MinIO")
			r.priv.Restart(r.t, "minio")
		case "restart postgres":
			r.t.Log("chaos: restarting PostgreSQL")
			r.priv.Restart(r.t, "postgres")
		case "kill":
			r.procs[r.rng.IntN(len(r.procs))].chaosKill(r.rng)
		}
	}
}

// settle waits, restarting any process that exited by itself (a sink that
// hit its retry limit during an outage stops, and the runtime exits 1 once
// no sink runs), until every group's committed offsets are the end offsets;
// then stops every process with SIGTERM, which must exit 0.
func (r *chaosRig) settle(groups ...string) kadm.ListedOffsets {
	r.t.Helper()
	ends, err := r.adm.ListEndOffsets(context.Background(), r.names...)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, group := range groups {
		waitGroupAtEnds(r.t, r.adm, group, ends, 120*time.Second, r.procs...)
	}
	r.t.Logf("offsets at the end at %v", time.Since(r.began).Round(time.Millisecond))
	for _, p := range r.procs {
		if code := p.stop(); code != 0 {
			r.t.Errorf("picomq-connect exited %d after SIGTERM, want 0\n%s", code, p.tail())
		}
		r.t.Logf("chaos: %d runtime kills, %d host kills, %d runtime exits on their own, %d starts; runtime log: %s",
			p.runtimeKills, p.hostKills, p.selfExits, p.starts, p.summary())
	}
	return ends
}

// checkOffsets: each group's committed offsets are the end offsets (read
// again, after the shutdown's final commit).
func (r *chaosRig) checkOffsets(ends kadm.ListedOffsets, groups ...string) {
	r.t.Helper()
	for _, group := range groups {
		committed, err := r.adm.FetchOffsets(context.Background(), group)
		if err != nil {
			r.t.Fatal(err)
		}
		ends.Each(func(e kadm.ListedOffset) {
			if o, ok := committed.Lookup(e.Topic, e.Partition); !ok || o.At != e.Offset {
				r.t.Errorf("group %s %s[%d]: committed %d, end offset %d", group, e.Topic, e.Partition, o.At, e.Offset)
			}
		})
	}
}

// checkDelta reads each topic's table with delta-rs and requires every id
// exactly once.
func (r *chaosRig) checkDelta(perTopic int) {
	r.t.Helper()
	out := pyenv.Run(r.t, `
import json, sys
from deltalake import DeltaTable
opts = json.loads(sys.argv[1])
print(json.dumps({uri: sorted(r["id"] for r in DeltaTable(uri, storage_options=opts).to_pyarrow_table(columns=["id"]).to_pylist()) for uri in sys.argv[2:]}))
`, append([]string{string(r.storage)}, r.uris...)...)
	var ids map[string][]int64
	if err := json.Unmarshal([]byte(out), &ids); err != nil {
		r.t.Fatalf("%v: %s", err, out)
	}
	for _, uri := range r.uris {
		checkExactlyOnce(r.t, "delta "+uri, ids[uri], perTopic)
	}
}

// checkRedshift reads each topic's table from the PostgreSQL behind the
// emulator: one row per record id (topic:partition:offset) and per
// produced payload id.
func (r *chaosRig) checkRedshift(perTopic int) {
	r.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, r.db.DSN)
	if err != nil {
		r.t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, n := range r.names {
		table := pgx.Identifier{"chaos_" + n[strings.LastIndexByte(n, '.')+1:]}.Sanitize()
		var rows, ids int64
		if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT id) FROM `+table).Scan(&rows, &ids); err != nil {
			r.t.Fatal(err)
		}
		if rows != ids {
			r.t.Errorf("redshift %s: %d rows, %d distinct record ids", table, rows, ids)
		}
		q, err := conn.Query(ctx, `SELECT (payload::json->>'id')::bigint FROM `+table+` ORDER BY 1`)
		if err != nil {
			r.t.Fatal(err)
		}
		payloadIDs, err := pgx.CollectRows(q, pgx.RowTo[int64])
		if err != nil {
			r.t.Fatal(err)
		}
		checkExactlyOnce(r.t, "redshift "+table, payloadIDs, perTopic)
	}
}

// checkExactlyOnce fails unless sorted ids are 0..n-1, naming the missing
// and the duplicated ones.
func checkExactlyOnce(t *testing.T, what string, ids []int64, n int) {
	t.Helper()
	slices.Sort(ids)
	seen := map[int64]int{}
	for _, id := range ids {
		seen[id]++
	}
	var missing, dup []int64
	for id := range int64(n) {
		switch seen[id] {
		case 0:
			missing = append(missing, id)
		case 1:
		default:
			dup = append(dup, id)
		}
	}
	if len(ids) != n || len(missing) > 0 || len(dup) > 0 {
		t.Errorf("%s: %d rows for %d records; missing %s; duplicated %s", what, len(ids), n, head(missing), head(dup))
	}
}

func head(ids []int64) string {
	if len(ids) > 20 {
		return fmt.Sprintf("%v… (%d)", ids[:20], len(ids))
	}
	return fmt.Sprint(ids)
}

// checkDeltaLog replays each table's log itself and requires (beyond what
// deltatest.ReadTableLog checks: every remove names a live file, live files
// exist, delta-rs lists the live files the replay finds) that some commit
// held several txn actions (a group commit), some commit was a compaction
// (OPTIMIZE, dataChange = false), and that DuckDB, reading the live files,
// sees every id exactly once, the rows delta-rs reads.
func (r *chaosRig) checkDeltaLog(perTopic int) {
	r.t.Helper()
	for _, uri := range r.uris {
		f := deltatest.ReadTableLog(r.t, deltatest.S3ReaderEnv(r.priv.Services), uri, "id")
		maxTxns, compactions := 0, 0
		for _, v := range f.Versions {
			maxTxns = max(maxTxns, v.Txns)
			if v.Op == "OPTIMIZE" {
				compactions++
			}
		}
		files := 0
		for _, n := range f.Files {
			files += n
		}
		r.t.Logf("delta %s: %d versions, %d compactions, at most %d txn actions in one commit, %d live files",
			uri, len(f.Versions), compactions, maxTxns, files)
		if maxTxns < 2 {
			r.t.Errorf("delta %s: no commit holds more than one txn action: no group commit happened", uri)
		}
		if compactions == 0 {
			r.t.Errorf("delta %s: no compaction commit", uri)
		}
		ids := func(rows []map[string]any) []int64 {
			var out []int64
			for _, row := range rows {
				n, _ := row["id"].(float64)
				out = append(out, int64(n))
			}
			return out
		}
		duck, rs := ids(f.DuckDB), ids(f.DeltaRS)
		checkExactlyOnce(r.t, "duckdb "+uri, duck, perTopic)
		slices.Sort(rs)
		if !slices.Equal(duck, rs) {
			r.t.Errorf("delta %s: DuckDB and delta-rs read different rows", uri)
		}
	}
}

// checkPipelined fails unless some batch of each sink key was delivered
// OK while the batch before it of its partition was unanswered: the
// runtime's debug line batch_delivered with pipelined=true (the processes
// run with --log-level debug). Through the real host and each real
// plugin, so that the chaos ran with followers in the sinks' group
// commits and loads, not only with one batch per partition.
func (r *chaosRig) checkPipelined(keys ...string) {
	r.t.Helper()
	n := map[string]int{}
	for _, p := range r.procs {
		b, err := os.ReadFile(p.log)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.Contains(l, "event=batch_delivered") || !strings.Contains(l, "pipelined=true") {
				continue
			}
			for _, k := range keys {
				if strings.Contains(l, "sink_key="+k+" ") {
					n[k]++
				}
			}
		}
	}
	for _, k := range keys {
		r.t.Logf("%s: %d pipelined batches delivered OK", k, n[k])
		if n[k] == 0 {
			r.t.Errorf("%s: no batch was delivered pipelined (max_in_flight_per_partition)", k)
		}
	}
}

// checkAudit runs `picomq-connect audit` on the rig's definitions after
// the chaos: it must find every partition of both sinks complete, each
// offset once, proven row by row, and exit 0.
func (r *chaosRig) checkAudit() {
	r.t.Helper()
	code, rep := auditJSON(r.t, r.procs[0].bin, r.kafka.KafkaBrokers, r.defs, "")
	parts := 0
	for _, n := range r.topics {
		parts += int(n)
	}
	if code != 0 || !rep.Clean || len(rep.Sinks) != 2 {
		r.t.Fatalf("audit: exit %d, %+v", code, rep)
	}
	for _, s := range rep.Sinks {
		if len(s.Partitions) != parts {
			r.t.Errorf("audit of %s: %d partitions, want %d", s.Key, len(s.Partitions), parts)
		}
		for _, p := range s.Partitions {
			if p.Proof != audit.ProofRows || p.Consumed != p.End || p.End == 0 || p.Written != p.Consumed {
				r.t.Errorf("audit of %s: %+v", s.Key, p)
			}
		}
	}
}
