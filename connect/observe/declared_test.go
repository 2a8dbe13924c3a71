package observe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/child"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/observe"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/internal/testenv"
)

// olderPlugin is the instance as a plugin before ABI 1.2 presents itself:
// the same metrics(), a describe() without "metrics".
type olderPlugin struct{ inst *child.Instance }

func (o olderPlugin) Metrics(ctx context.Context) (string, error) { return o.inst.Metrics(ctx) }
func (o olderPlugin) Description() string {
	var d map[string]any
	_ = json.Unmarshal([]byte(o.inst.Description()), &d)
	delete(d, "metrics")
	b, _ := json.Marshal(d)
	return string(b)
}

// The real Delta .so in a C host child, as picomq-connect runs it: every
// number of its metrics() is declared (ABI 1.2), so /metrics, parsed with
// the Prometheus text parser, has counters ending in _total, durations in
// seconds (the JSON's milliseconds / 1000) and nothing untyped. The same
// instance presented as an older plugin (describe() without declarations)
// is exported untyped under the names of before.
func TestDeltaMetricsDeclared(t *testing.T) {
	kf := newCluster(t)
	lib := testenv.E2ELibrary(t, "libpicomq_connector_delta_sink.so")
	uri := "file://" + filepath.Join(t.TempDir(), "ids")
	doc := fmt.Sprintf(`type = "sink"
key = "dm"
path = %q
[[topics]]
topics = ["a"]
schema = "json"
batch_length = 1
[plugin_config]
table_uri = %q
create_table = true
table_schema = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'
`, strings.TrimSuffix(lib, ".so"), uri)
	def, err := definition.Parse("dm.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	inst, closeInst := openInHost(t, def, log)
	m, older := observe.NewMetrics(), observe.NewMetrics()
	s := pipeline.New(def, inst, pipeline.Config{Brokers: kf.ListenAddrs(), Logger: log, Observer: m,
		ClientOpts: []kgo.Opt{kgo.FetchMaxWait(50 * time.Millisecond)}})
	m.Add(s, inst)
	older.Add(s, olderPlugin{inst})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		closeInst()
	})
	srv := httptest.NewServer(observe.Handler(m))
	t.Cleanup(srv.Close)
	oldSrv := httptest.NewServer(observe.Handler(older))
	t.Cleanup(oldSrv.Close)

	// Twelve one-record batches: twelve commits, a checkpoint at version 10.
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 12 {
		recs = append(recs, &kgo.Record{Topic: "a", Value: fmt.Appendf(nil, `{"id":%d}`, i)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	type snapshot struct {
		Records float64            `json:"records"`
		Sink    map[string]float64 `json:"sink"`
	}
	read := func() (snap snapshot) {
		t.Helper()
		js, err := inst.Metrics(context.Background())
		if err == nil {
			err = json.Unmarshal([]byte(js), &snap)
		}
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	var before snapshot
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if before = read(); before.Records == 12 && before.Sink["checkpoints_written"] >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("12 records and a checkpoint never showed in metrics(): %+v", before)
		}
	}
	mfs := scrape(t, srv)
	if after := read(); after.Sink["checkpoints_written"] != before.Sink["checkpoints_written"] {
		t.Fatalf("a checkpoint was written during the scrape: %v then %v", before.Sink, after.Sink)
	}

	for name, mf := range mfs {
		if !strings.HasPrefix(name, "picomq_plugin_") {
			continue
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			if !strings.HasSuffix(name, "_total") {
				t.Errorf("counter %s does not end in _total", name)
			}
		case dto.MetricType_GAUGE:
		default:
			t.Errorf("%s is %v: the Delta sink declares every metric", name, mf.GetType())
		}
		if strings.Contains(name, "_ms") {
			t.Errorf("%s: durations are exported in seconds", name)
		}
	}
	for _, c := range []struct {
		name string
		typ  dto.MetricType
		want float64
	}{
		{"picomq_plugin_records_written_total", dto.MetricType_COUNTER, 12},
		{"picomq_plugin_records_skipped_total", dto.MetricType_COUNTER, 0},
		{"picomq_plugin_sink_checkpoints_written_total", dto.MetricType_COUNTER, before.Sink["checkpoints_written"]},
		{"picomq_plugin_sink_checkpoint_cpu_seconds_total", dto.MetricType_COUNTER, before.Sink["checkpoint_cpu_ms"] / 1000},
		{"picomq_plugin_sink_last_checkpoint_write_seconds", dto.MetricType_GAUGE, before.Sink["last_checkpoint_write_ms"] / 1000},
		{"picomq_plugin_sink_written_bytes_total", dto.MetricType_COUNTER, before.Sink["bytes_written"]},
		{"picomq_plugin_sink_last_checkpoint_version", dto.MetricType_GAUGE, 10},
	} {
		got, _ := value(t, mfs, c.name, "sink_key=dm")
		if typ := mfs[c.name].GetType(); typ != c.typ || got != c.want {
			t.Errorf("%s = %v %v, want %v %v", c.name, typ, got, c.typ, c.want)
		}
	}

	// Presented as an older plugin: untyped, the names of before.
	old := scrape(t, oldSrv)
	for name, mf := range old {
		if strings.HasPrefix(name, "picomq_plugin_") && mf.GetType() != dto.MetricType_UNTYPED {
			t.Errorf("older plugin: %s is %v, want untyped", name, mf.GetType())
		}
	}
	if got, _ := value(t, old, "picomq_plugin_sink_checkpoint_cpu_ms", "sink_key=dm"); got != before.Sink["checkpoint_cpu_ms"] {
		t.Errorf("older plugin: checkpoint_cpu_ms %v, want %v", got, before.Sink["checkpoint_cpu_ms"])
	}
	if got, _ := value(t, old, "picomq_plugin_records", "sink_key=dm"); got != 12 {
		t.Errorf("older plugin: records %v, want 12", got)
	}
}
