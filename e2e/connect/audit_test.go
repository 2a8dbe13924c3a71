package connect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
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
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/metadata"
)

// auditRig is a clean run of picomq-connect from a two-partition topic on
// the real broker into a Delta table with metadata_columns (rejecting the
// records whose amount would need rounding into the dead-letter topic) and
// into Redshift through the emulator; then `picomq-connect audit` is run
// on its definitions.
type auditRig struct {
	t        *testing.T
	bin      string
	brokers  []string
	adm      *kadm.Client
	topic    string
	defs     string
	table    string // the Delta table's directory
	db       services.Database
	rsTable  string
	bad      map[int32][]int64 // dead-lettered offsets per partition
	partOffs map[int32]int64   // records per partition
}

const auditRecords = 160

func newAuditRig(t *testing.T) *auditRig {
	kafka := services.RequireKafka(t)
	svc := services.Require(t)
	run := strconv.FormatInt(time.Now().UnixNano()%1e12, 36)
	r := &auditRig{t: t, brokers: kafka.KafkaBrokers, topic: "aud" + run + ".orders", defs: t.TempDir(),
		table: filepath.Join(t.TempDir(), "orders"), rsTable: "aud_orders", bad: map[int32][]int64{}, partOffs: map[int32]int64{}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	r.adm = kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := r.adm.CreateTopic(ctx, 2, 1, nil, r.topic); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.adm.DeleteTopics(context.Background(), r.topic, r.topic+".dlq") })

	pyenv.Run(t, `
import sys, pyarrow as pa
from deltalake import write_deltalake
schema = pa.schema([("id", pa.int64()), ("amount", pa.decimal128(10, 2)),
    ("pico_topic", pa.string()), ("pico_partition", pa.int32()), ("pico_offset", pa.int64())])
write_deltalake(sys.argv[1], pa.Table.from_pylist([], schema=schema))
`, r.table)

	// Every 13th record's amount would need rounding: the Delta sink
	// rejects it (dead letter); Redshift takes the payload as text.
	var recs []*kgo.Record
	for id := range int64(auditRecords) {
		p := int32(id % 2)
		amount := fmt.Sprintf("%d.25", id)
		if id%13 == 4 {
			amount = "1.234"
			r.bad[p] = append(r.bad[p], r.partOffs[p])
		}
		r.partOffs[p]++
		recs = append(recs, &kgo.Record{Topic: r.topic, Partition: p, Value: fmt.Appendf(nil, `{"id":%d,"amount":"%s"}`, id, amount)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	r.db = svc.NewDatabase(t)
	emu := rsemu.NewTest(t, rsemu.Config{BackendDSN: r.db.DSN, S3Endpoint: svc.S3Endpoint,
		S3AccessKey: svc.S3AccessKey, S3SecretKey: svc.S3SecretKey, S3Region: svc.S3Region})
	block := func(group, extra string) string {
		return fmt.Sprintf("[[topics]]\ntopics = [%q]\nschema = \"json\"\nbatch_length = 20\npoll_interval = \"100ms\"\nconsumer_group = %q\n%s\n", r.topic, group, extra)
	}
	writeDef(t, filepath.Join(r.defs, "delta.toml"), fmt.Sprintf("type = \"sink\"\nkey = \"aud_delta\"\npath = \"libpicomq_connector_delta_sink\"\n\n%s\n[plugin_config]\ntable_uri = %q\nmetadata_columns = true\n",
		block(run+"-delta", `errors_tolerance = "all"`), "file://"+r.table))
	writeDef(t, filepath.Join(r.defs, "redshift.toml"), fmt.Sprintf("type = \"sink\"\nkey = \"aud_redshift\"\npath = \"libpicomq_connector_redshift_sink\"\n\n%s%sbatch_size = 20\n",
		block(run+"-redshift", ""), redshiftPluginConfig(svc, emu.DSN(r.db.Name), svc.NewBucket(t), r.rsTable)))

	rt := startConnect(t, r.brokers, r.defs)
	r.bin = rt.bin
	for _, g := range []string{run + "-delta", run + "-redshift"} {
		waitTopicAtEnd(t, r.adm, g, r.topic, 120*time.Second, rt)
	}
	if code := rt.stop(); code != 0 {
		t.Fatalf("picomq-connect exit code %d\n%s", code, rt.tail())
	}
	return r
}

// audit runs `picomq-connect audit --format json` on the rig's
// definitions (restricted to sink when not empty).
func (r *auditRig) audit(sink string) (int, audit.Report) {
	r.t.Helper()
	return auditJSON(r.t, r.bin, r.brokers, r.defs, sink)
}

func (r *auditRig) run(args ...string) (code int, stdout, stderr string) {
	r.t.Helper()
	return runBin(r.t, r.bin, args...)
}

// auditJSON runs `bin audit --format json` on defs against brokers
// (restricted to sink when not empty) and returns its exit code and
// report.
func auditJSON(t *testing.T, bin string, brokers []string, defs, sink string) (int, audit.Report) {
	t.Helper()
	args := []string{"audit", "--brokers", strings.Join(brokers, ","), "--format", "json"}
	if sink != "" {
		args = append(args, "--sink", sink)
	}
	code, out, errOut := runBin(t, bin, append(args, defs)...)
	var rep audit.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("audit exit %d, report not JSON (%v):\n%s\nstderr:\n%s", code, err, out, errOut)
	}
	return code, rep
}

func runBin(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), o.String(), e.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, o.String(), e.String()
}

// offsets expands runs of inclusive offsets.
func offsets[T any](xs []T, bounds func(T) (int64, int64)) []int64 {
	var out []int64
	for _, x := range xs {
		first, last := bounds(x)
		for o := first; o <= last; o++ {
			out = append(out, o)
		}
	}
	return out
}

func gapsOf(p audit.PartitionReport) []int64 {
	return offsets(p.Gaps, func(g audit.Gap) (int64, int64) { return g.First, g.Last })
}

// checkGaps asserts that sink's partitions miss exactly want's offsets and
// hold nothing twice.
func checkGaps(t *testing.T, rep audit.Report, sink string, want map[int32][]int64) {
	t.Helper()
	for _, s := range rep.Sinks {
		if s.Key != sink {
			continue
		}
		if len(s.Partitions) != 2 {
			t.Fatalf("sink %s: %d partitions, want 2", sink, len(s.Partitions))
		}
		for _, p := range s.Partitions {
			w := slices.Clone(want[p.Partition])
			slices.Sort(w)
			if got := gapsOf(p); !slices.Equal(got, w) || p.Missing != int64(len(w)) || p.Duplicated != 0 {
				t.Errorf("sink %s partition %d: gaps %v (missing %d, duplicated %d), want %v", sink, p.Partition, got, p.Missing, p.Duplicated, w)
			}
		}
		return
	}
	t.Fatalf("no sink %s in the report", sink)
}

// TestAuditOnRealBroker: after a clean run the audit finds nothing and
// exits 0; then each damage done behind the sinks' backs — a data file
// removed from the Delta table, a Redshift row inserted twice, dead
// letters cut from the dead-letter topic — is reported exactly, with
// exit status 1.
func TestAuditOnRealBroker(t *testing.T) {
	r := newAuditRig(t)
	ctx := context.Background()

	t.Run("clean", func(t *testing.T) {
		code, rep := r.audit("")
		if code != 0 || !rep.Clean || len(rep.Sinks) != 2 {
			t.Fatalf("exit %d, report %+v", code, rep)
		}
		for _, s := range rep.Sinks {
			for _, p := range s.Partitions {
				n := r.partOffs[p.Partition]
				dead := int64(0)
				if s.Key == "aud_delta" {
					dead = int64(len(r.bad[p.Partition]))
				}
				if p.Proof != audit.ProofRows || p.Consumed != n || p.Committed != n || p.Written != n-dead || p.DeadLetter != dead ||
					p.InBoth != 0 || p.Missing != 0 || p.Duplicated != 0 {
					t.Errorf("sink %s: %+v; want %d consumed, %d dead-lettered", s.Key, p, n, dead)
				}
			}
		}
		code, out, _ := r.run("audit", "--brokers", strings.Join(r.brokers, ","), r.defs)
		if code != 0 || !strings.Contains(out, "clean: nothing missing, nothing twice") || !strings.Contains(out, "aud_redshift") {
			t.Errorf("text report, exit %d:\n%s", code, out)
		}
	})

	// A commit that removes one data file: its rows are gone from the
	// table's snapshot, so their offsets are missing.
	fileGaps := map[int32][]int64{}
	t.Run("deleted data file", func(t *testing.T) {
		path, version := liveFile(t, r.table)
		var rows [][2]int64
		out := pyenv.Run(t, `
import sys, json, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1], columns=["pico_partition", "pico_offset"]).to_pylist()
print(json.dumps([[r["pico_partition"], r["pico_offset"]] for r in t]))
`, filepath.Join(r.table, path))
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rows); err != nil || len(rows) == 0 {
			t.Fatalf("rows of %s: %v %q", path, err, out)
		}
		for _, row := range rows {
			fileGaps[int32(row[0])] = append(fileGaps[int32(row[0])], row[1])
		}
		commit := fmt.Sprintf(`{"remove":{"path":%q,"deletionTimestamp":%d,"dataChange":true}}
{"commitInfo":{"timestamp":%d,"operation":"DELETE"}}
`, path, time.Now().UnixMilli(), time.Now().UnixMilli())
		if err := os.WriteFile(filepath.Join(r.table, "_delta_log", fmt.Sprintf("%020d.json", version+1)), []byte(commit), 0o644); err != nil {
			t.Fatal(err)
		}
		code, rep := r.audit("aud_delta")
		if code != 1 || rep.Clean || len(rep.Sinks) != 1 {
			t.Fatalf("exit %d, report %+v", code, rep)
		}
		checkGaps(t, rep, "aud_delta", fileGaps)
	})

	t.Run("duplicated Redshift row", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, r.db.DSN)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		id := metadata.RecordID(r.topic, 1, 7)
		tag, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %q SELECT * FROM %q WHERE id = '%s'`, r.rsTable, r.rsTable, id))
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("insert %s again: %v %v", id, tag, err)
		}
		code, rep := r.audit("aud_redshift")
		if code != 1 || rep.Clean || rep.Missing != 0 || rep.Duplicated != 1 {
			t.Fatalf("exit %d, report %+v", code, rep)
		}
		for _, p := range rep.Sinks[0].Partitions {
			want := []audit.Dup{}
			if p.Partition == 1 {
				want = []audit.Dup{{First: 7, Last: 7, Where: audit.InTable}}
			}
			if !slices.Equal(p.Duplicates, want) {
				t.Errorf("partition %d: duplicates %v, want %v", p.Partition, p.Duplicates, want)
			}
		}
	})

	// Kafka deletes no single record: DeleteRecords moves the dead-letter
	// topic's log start past its first dead letters, and the source
	// offsets they stood for are missing too.
	t.Run("removed dead letters", func(t *testing.T) {
		dlq := r.topic + ".dlq"
		var nBad int
		for _, offs := range r.bad {
			nBad += len(offs)
		}
		letters := readDeadLetters(t, r.brokers, r.topic, nBad)
		if len(letters) != nBad {
			t.Fatalf("%d dead letters, want %d", len(letters), nBad)
		}
		const cut = 3
		want := map[int32][]int64{}
		for p, offs := range fileGaps {
			want[p] = slices.Clone(offs)
		}
		removed := 0
		for _, l := range letters {
			if l.Partition != 0 || l.Offset >= cut {
				continue
			}
			removed++
			h := headers(l)
			p, _ := strconv.ParseInt(h[metadata.DeadLetterPartition], 10, 32)
			o, _ := strconv.ParseInt(h[metadata.DeadLetterOffset], 10, 64)
			want[int32(p)] = append(want[int32(p)], o)
		}
		if removed != cut {
			t.Fatalf("%d dead letters in partition 0 below offset %d, want %d", removed, cut, cut)
		}
		o := kadm.Offsets{}
		o.AddOffset(dlq, 0, cut, -1)
		resp, err := r.adm.DeleteRecords(ctx, o)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
		code, rep := r.audit("aud_delta")
		if code != 1 || rep.Clean {
			t.Fatalf("exit %d, report %+v", code, rep)
		}
		checkGaps(t, rep, "aud_delta", want)
		_, text, _ := r.run("audit", "--brokers", strings.Join(r.brokers, ","), "--sink", "aud_delta", r.defs)
		t.Logf("the text report:\n%s", text)
	})

	// A redrive puts the letters back; the sink rejects them again and
	// writes newer letters (pico_redrive_attempts 1) next to the old ones.
	// Only the newest count: the report is the same as before, no
	// dead_letter duplicates.
	t.Run("after a redrive that rejects again", func(t *testing.T) {
		_, before := r.audit("aud_delta")
		code, out := runRedrive(t, r.bin, r.brokers, filepath.Join(r.defs, "delta.toml"))
		t.Logf("redrive exit %d:\n%s", code, out)
		code, after := r.audit("aud_delta")
		if code != 1 || after.Duplicated != 0 || after.Missing != before.Missing || after.Missing == 0 {
			t.Fatalf("exit %d, report %+v; before %+v", code, after, before)
		}
		for i, p := range after.Sinks[0].Partitions {
			if b := before.Sinks[0].Partitions[i]; p.DeadLetter != b.DeadLetter || p.Redriven != 0 || len(p.Duplicates) != 0 {
				t.Errorf("partition %d: %+v, before %+v", p.Partition, p, b)
			}
		}
	})
}

// liveFile reads the Delta log of the table at dir (JSON commits only: the
// test's table has no checkpoint) and returns the path of the newest live
// data file (one batch's: one partition's rows) and the newest version.
func liveFile(t *testing.T, dir string) (string, int64) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	var order []string
	version := int64(-1)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSuffix(name, ".json"), 10, 64)
		if err != nil {
			continue
		}
		version = max(version, v)
		data, err := os.ReadFile(filepath.Join(dir, "_delta_log", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			var a struct {
				Add    *struct{ Path string } `json:"add"`
				Remove *struct{ Path string } `json:"remove"`
			}
			if json.Unmarshal(line, &a) != nil {
				continue
			}
			if a.Add != nil {
				live[a.Add.Path] = true
				order = append(order, a.Add.Path)
			}
			if a.Remove != nil {
				delete(live, a.Remove.Path)
			}
		}
	}
	for _, p := range slices.Backward(order) {
		if live[p] {
			return p, version
		}
	}
	t.Fatal("no live data file")
	return "", 0
}
