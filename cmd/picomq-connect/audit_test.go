package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/audit"
	"github.com/picomq/heavy-sinks/plugins/delta"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

// auditBroker is a kfake broker with 7 records in topic "a" and group
// "g" committed at 7.
func auditBroker(t *testing.T) *kfake.Cluster {
	t.Helper()
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "a"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for i := range 7 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: fmt.Appendf(nil, `{"i":%d}`, i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var o kadm.Offsets
	o.AddOffset("a", 0, 7, -1)
	if err := kadm.NewClient(cl).CommitAllOffsets(ctx, "g", o); err != nil {
		t.Fatal(err)
	}
	return kf
}

func auditDef(t *testing.T, uri string) string {
	t.Helper()
	dir := t.TempDir()
	def := fmt.Sprintf("type = \"sink\"\nkey = \"k\"\npath = \"libpicomq_connector_delta_sink\"\n\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nconsumer_group = \"g\"\n\n[plugin_config]\ntable_uri = %q\n", uri)
	if err := os.WriteFile(filepath.Join(dir, "d.toml"), []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runAuditJSON runs the audit command and decodes its report.
func runAuditJSON(t *testing.T, args ...string) (int, audit.Report, string) {
	t.Helper()
	var out, errBuf bytes.Buffer
	oldOut, oldErr := stdout, stderr
	stdout, stderr = &out, &errBuf
	defer func() { stdout, stderr = oldOut, oldErr }()
	code := run(append([]string{"audit", "--format", "json"}, args...))
	data := out.Bytes()
	var rep audit.Report
	if code != exitUsage {
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatalf("exit %d: %v\n%s\n%s", code, err, data, errBuf.String())
		}
	}
	return code, rep, errBuf.String()
}

func TestAuditUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--format", "xml", "x.toml"}, `--format "xml"`},
		{nil, "usage: picomq-connect audit"},
		{[]string{"--sink", "nope", auditDef(t, "file:///nowhere")}, `--sink "nope"`},
	} {
		code, _, msg := runAuditJSON(t, c.args...)
		if code != exitUsage || !strings.Contains(msg, c.msg) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, msg, exitUsage, c.msg)
		}
	}
}

// A table that does not exist holds nothing: every committed offset is
// missing, and the note says why.
func TestAuditMissingTable(t *testing.T) {
	kf := auditBroker(t)
	code, rep, msg := runAuditJSON(t, "--brokers", kf.ListenAddrs()[0], auditDef(t, "file://"+filepath.Join(t.TempDir(), "none")))
	if code != exitNotClean || rep.Missing != 7 || len(rep.Sinks) != 1 {
		t.Fatalf("exit %d, %+v, %s", code, rep, msg)
	}
	p := rep.Sinks[0].Partitions[0]
	if !slices.Equal(p.Gaps, []audit.Gap{{First: 0, Last: 6}}) || !strings.Contains(strings.Join(rep.Sinks[0].Notes, "\n"), "does not exist") {
		t.Errorf("%+v, notes %q", p, rep.Sinks[0].Notes)
	}
}

// Without metadata_columns only the txn version is evidence: offsets up
// to it count as written, those after it up to the commit are missing.
func TestAuditTxnOnly(t *testing.T) {
	kf := auditBroker(t)
	dir := t.TempDir()
	ctx := context.Background()
	st, err := objstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := deltalog.ParseSchema(`{"type":"struct","fields":[{"name":"i","type":"long","nullable":true,"metadata":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := deltalog.NewTable(schema, nil, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deltalog.CommitAppend(ctx, st, snap, deltalog.AppendCommit{AppID: delta.AppID("k", "a", 0), AppVersion: 4}, nil); err != nil {
		t.Fatal(err)
	}
	code, rep, msg := runAuditJSON(t, "--brokers", kf.ListenAddrs()[0], auditDef(t, "file://"+dir))
	if code != exitNotClean || len(rep.Sinks) != 1 {
		t.Fatalf("exit %d, %+v, %s", code, rep, msg)
	}
	p := rep.Sinks[0].Partitions[0]
	if p.Proof != audit.ProofTxn || p.TxnVersion == nil || *p.TxnVersion != 4 || p.Written != 5 ||
		!slices.Equal(p.Gaps, []audit.Gap{{First: 5, Last: 6}}) || !strings.Contains(strings.Join(rep.Sinks[0].Notes, "\n"), "metadata_columns is false") {
		t.Errorf("%+v, notes %q", p, rep.Sinks[0].Notes)
	}
}

// A transaction marker takes an offset but is no record: the read-back of
// the missing offsets ends at it (counted as compacted, not missing)
// instead of waiting for a record that never comes.
func TestAuditTransactionMarker(t *testing.T) {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "a"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...), kgo.TransactionalID("tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "a", Value: fmt.Appendf(nil, `{"i":%d}`, i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup("a", 0)
	if end.Offset != 4 {
		t.Fatalf("end offset %d, want 4 (3 records and the commit marker)", end.Offset)
	}
	var o kadm.Offsets
	o.AddOffset("a", 0, 4, -1)
	if err := adm.CommitAllOffsets(ctx, "g", o); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, rep, msg := runAuditJSON(t, "--brokers", kf.ListenAddrs()[0], auditDef(t, "file://"+filepath.Join(t.TempDir(), "none")))
	if code != exitNotClean || len(rep.Sinks) != 1 {
		t.Fatalf("exit %d, %+v, %s", code, rep, msg)
	}
	p := rep.Sinks[0].Partitions[0]
	if !slices.Equal(p.Gaps, []audit.Gap{{First: 0, Last: 2}}) || p.Compacted != 1 || time.Since(start) > 10*time.Second {
		t.Errorf("%+v after %v", p, time.Since(start))
	}
}

// A topic the broker does not have was not audited: exit 3, not clean.
func TestAuditTopicGone(t *testing.T) {
	kf := auditBroker(t)
	dir := auditDef(t, "file://"+filepath.Join(t.TempDir(), "none"))
	def := filepath.Join(dir, "d.toml")
	b, err := os.ReadFile(def)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(def, bytes.Replace(b, []byte(`topics = ["a"]`), []byte(`topics = ["gone"]`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	code, rep, msg := runAuditJSON(t, "--brokers", kf.ListenAddrs()[0], dir)
	if code != exitNotAudited || rep.Clean || rep.Unaudited != 1 || !strings.Contains(strings.Join(rep.Sinks[0].Unaudited, ""), "topic gone does not exist") {
		t.Fatalf("exit %d, %+v, %s", code, rep, msg)
	}
}

// Two definitions whose blocks send letters of the same topic to the same
// dead-letter topic: each audit would count the other's letters, so
// neither audited its dead letters.
func TestAuditSharedDeadLetters(t *testing.T) {
	kf := auditBroker(t)
	dir := t.TempDir()
	for _, key := range []string{"one", "two"} {
		def := fmt.Sprintf("type = \"sink\"\nkey = %q\npath = \"libpicomq_connector_delta_sink\"\n\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nconsumer_group = \"g\"\nerrors_tolerance = \"all\"\ndead_letter_topic = \"dl\"\n\n[plugin_config]\ntable_uri = %q\n",
			key, "file://"+filepath.Join(dir, "none"))
		if err := os.WriteFile(filepath.Join(dir, key+".toml"), []byte(def), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, rep, msg := runAuditJSON(t, "--brokers", kf.ListenAddrs()[0], "--sink", "one", dir)
	if code == exitOK || rep.Clean || len(rep.Sinks) != 1 || !strings.Contains(strings.Join(rep.Sinks[0].Unaudited, ""), "dead-letter topic dl is also where sink two") {
		t.Fatalf("exit %d, %+v, %s", code, rep, msg)
	}
}
