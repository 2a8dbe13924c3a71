package observe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/child"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/connect/observe"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// plug is the plugin a test's sink runs: the scripted fake, or (fake nil)
// the e2e test plugin in a real C host child with config as its
// plugin_config.
type plug struct {
	fake   *fakeplugin.Plugin
	config string
}

// both runs body as two subtests: against the fake script makes, and
// against the test plugin configured with pluginConfig in the real host
// (skipped without $PICOMQ_DIST).
func both(t *testing.T, script func() *fakeplugin.Plugin, pluginConfig string, body func(t *testing.T, p plug)) {
	t.Run("fake", func(t *testing.T) { body(t, plug{fake: script()}) })
	t.Run("host", func(t *testing.T) { body(t, plug{config: pluginConfig}) })
}

// run starts a sink of p reading topic "a" of a fresh kfake broker,
// observed by m, and returns the broker and the endpoint.
func run(t *testing.T, m *observe.Metrics, block string, p plug) (*kfake.Cluster, *httptest.Server, *pipeline.Sink) {
	t.Helper()
	kf := newCluster(t)
	srv, s := runOn(t, kf, m, block, p)
	return kf, srv, s
}

// newCluster is a fresh kfake broker with topic "a" of one partition.
func newCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "a"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	return kf
}

// runOn is run on a broker the test prepared.
func runOn(t *testing.T, kf *kfake.Cluster, m *observe.Metrics, block string, p plug) (*httptest.Server, *pipeline.Sink) {
	t.Helper()
	lib, pluginConfig := "/nonexistent/libfake.so", ""
	if p.fake == nil {
		lib = testenv.E2ELibrary(t, "test/libpicomq_connector_test_a_sink.so")
		pluginConfig = fmt.Sprintf("record_path = %q\n%s", filepath.Join(t.TempDir(), "records.jsonl"), p.config)
	}
	doc := fmt.Sprintf("type = \"sink\"\nkey = \"obs\"\npath = %q\n[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\n%s\n[plugin_config]\n%s\n",
		strings.TrimSuffix(lib, ".so"), block, pluginConfig)
	def, err := definition.Parse("obs.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var (
		out    pipeline.Deliverer = p.fake
		plugin observe.Plugin     = p.fake
		closer                    = func() {}
	)
	if p.fake == nil {
		var inst *child.Instance
		inst, closer = openInHost(t, def, log)
		out, plugin = inst, inst
	}
	s := pipeline.New(def, out, pipeline.Config{Brokers: kf.ListenAddrs(), Logger: log, Observer: m,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }, LagRefresh: 100 * time.Millisecond,
		ClientOpts: []kgo.Opt{kgo.FetchMaxWait(50 * time.Millisecond)}})
	m.Add(s, plugin)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		closer()
	})
	srv := httptest.NewServer(observe.Handler(m))
	t.Cleanup(srv.Close)
	return srv, s
}

// openInHost opens def's plugin in a C host child, as picomq-connect
// does; closer closes the instance, then the child.
func openInHost(t *testing.T, def *definition.Definition, log *slog.Logger) (inst *child.Instance, closer func()) {
	t.Helper()
	proc := child.New(hosttest.BuildHost(t), def.LibraryPath(""), child.Options{Logger: log})
	cfg, err := def.OpenConfig()
	if err != nil {
		t.Fatal(err)
	}
	inst, err = proc.Open(context.Background(), string(cfg), log)
	if err != nil {
		t.Fatal(err)
	}
	return inst, func() {
		inst.Close()
		proc.Close()
	}
}

func produce(t *testing.T, kf *kfake.Cluster, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// One produce request, so the records arrive together and the batches
	// are cut by batch_length alone, however slow the machine.
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "a", Value: fmt.Appendf(nil, `{"n":%d}`, i)}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func status(t *testing.T, srv *httptest.Server) observe.Status {
	t.Helper()
	code, body := get(t, srv.URL+"/status")
	var st observe.Status
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		t.Fatalf("/status %d %q: %v", code, body, err)
	}
	return st
}

// scrape parses /metrics.
func scrape(t *testing.T, srv *httptest.Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// value returns the value of the family's series with exactly these
// labels (name=value pairs); fails when there is none.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, *dto.Metric) {
	t.Helper()
	mf := mfs[name]
	if mf == nil {
		t.Fatalf("no metric %s", name)
	}
	labels = slices.Clone(labels)
	slices.Sort(labels) // the parser sorts labels by name
	want := strings.Join(labels, ",")
next:
	for _, m := range mf.GetMetric() {
		var got []string
		for _, l := range m.GetLabel() {
			got = append(got, l.GetName()+"="+l.GetValue())
		}
		if strings.Join(got, ",") != want {
			continue next
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), m
		case m.Gauge != nil:
			return m.Gauge.GetValue(), m
		case m.Untyped != nil:
			return m.Untyped.GetValue(), m
		}
		return 0, m
	}
	t.Fatalf("no series %s{%s}", name, want)
	return 0, nil
}

// Three batches, each RETRYed once: the counters, histograms, lag, state
// and the plugin's metrics() fields, as a scraper parses them; /status
// shows lag while the batches are in flight and 0 once committed.
// With the fake, the plugin's own fields are its {"records": n}; the test
// plugin's are checked with the real host.
func TestMetricsAndStatus(t *testing.T) {
	both(t, func() *fakeplugin.Plugin {
		return &fakeplugin.Plugin{Decide: func(b hostclient.Batch, _ int) fakeplugin.Result {
			r := fakeplugin.Result{Delay: 150 * time.Millisecond}
			if b.Attempt == 1 {
				r.Code, r.Message = hostclient.StatusRetry, "asked to fail"
			}
			return r
		}}
	}, "fail_mode = \"retry\"\nfail_attempts = 1\ndelay = \"150ms\"\n", testMetricsAndStatus)
}

func testMetricsAndStatus(t *testing.T, pl plug) {
	m := observe.NewMetrics()
	kf, srv, _ := run(t, m, "batch_length = 4\npoll_interval = \"500ms\"\n", pl)
	produce(t, kf, 10)
	var maxLag int64
	var p observe.PartitionStatus
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st := status(t, srv)
		if len(st.Sinks) != 1 || st.Sinks[0].Key != "obs" {
			t.Fatalf("/status %+v", st)
		}
		if parts := st.Sinks[0].Partitions; len(parts) == 1 {
			p = parts[0]
			maxLag = max(maxLag, p.Lag)
			if p.CommittedOffset != nil && *p.CommittedOffset == 10 {
				if st.Sinks[0].State != pipeline.StateRunning || st.Sinks[0].Lag != 0 {
					t.Errorf("sink %+v", st.Sinks[0])
				}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("offset 10 never committed; last /status partition %+v", p)
		}
	}
	if p.Topic != "a" || p.Partition != 0 || p.HighWatermark == nil || *p.HighWatermark != 10 || p.Lag != 0 || p.LastBatchTime == nil {
		t.Errorf("partition after the commit %+v", p)
	}
	if maxLag == 0 {
		t.Error("/status never showed lag while batches were in flight")
	}

	mfs := scrape(t, srv)
	st := []string{"sink_key=obs", "topic=a"}
	type series struct {
		name   string
		labels []string
		want   float64
	}
	plugin := []series{{"picomq_plugin_records", []string{"sink_key=obs"}, 10}}
	if pl.fake == nil {
		plugin = []series{
			{"picomq_plugin_sink_lines_written", []string{"sink_key=obs"}, 3},
			{"picomq_plugin_records_written_total", []string{"sink_key=obs"}, 10},
		}
	}
	for _, c := range append([]series{
		{"picomq_connect_deliveries_total", append(st, "outcome=retry"), 3},
		{"picomq_connect_deliveries_total", append(st, "outcome=ok"), 3},
		{"picomq_connect_deliveries_total", append(st, "outcome=fatal"), 0},
		{"picomq_connect_records_delivered_total", st, 10},
		{"picomq_connect_retries_total", st, 3},
		{"picomq_connect_dead_letters_total", append(st, "reason=value"), 0},
		{"picomq_connect_consumer_lag_records", append(st, "partition=0"), 0},
		{"picomq_connect_sink_state", []string{"sink_key=obs", "state=running"}, 1},
		{"picomq_connect_sink_state", []string{"sink_key=obs", "state=error"}, 0},
		{"picomq_connect_plugin_metrics_up", []string{"sink_key=obs"}, 1},
		{"picomq_connect_batches_in_flight", []string{"sink_key=obs"}, 0},
	}, plugin...) {
		if got, _ := value(t, mfs, c.name, c.labels...); got != c.want {
			t.Errorf("%s{%v} = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	_, h := value(t, mfs, "picomq_connect_batch_records", st...)
	if h.Histogram.GetSampleCount() != 3 || h.Histogram.GetSampleSum() != 10 {
		t.Errorf("batch_records count %d sum %v, want 3 batches of 10 records", h.Histogram.GetSampleCount(), h.Histogram.GetSampleSum())
	}
	_, h = value(t, mfs, "picomq_connect_consume_duration_seconds", st...)
	if h.Histogram.GetSampleCount() != 6 || h.Histogram.GetSampleSum() < 6*0.15 {
		t.Errorf("consume_duration count %d sum %v, want 6 calls of at least 150ms", h.Histogram.GetSampleCount(), h.Histogram.GetSampleSum())
	}
	if _, last := value(t, mfs, "picomq_connect_last_batch_timestamp_seconds", append(st, "partition=0")...); last.Gauge.GetValue() < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("last batch timestamp %v", last.Gauge.GetValue())
	}
	// The SDK declares its fields (ABI 1.2); the test plugin leaves its
	// own undeclared, and they stay untyped, as the fake's do.
	if pl.fake == nil {
		if typ := mfs["picomq_plugin_records_written_total"].GetType(); typ != dto.MetricType_COUNTER {
			t.Errorf("picomq_plugin_records_written_total is %v, want counter", typ)
		}
		if typ := mfs["picomq_plugin_sink_lines_written"].GetType(); typ != dto.MetricType_UNTYPED {
			t.Errorf("picomq_plugin_sink_lines_written is %v, want untyped", typ)
		}
	} else if typ := mfs["picomq_plugin_records"].GetType(); typ != dto.MetricType_UNTYPED {
		t.Errorf("picomq_plugin_records is %v, want untyped", typ)
	}
	for name, mf := range mfs {
		if mf.GetType() == dto.MetricType_COUNTER && !strings.HasSuffix(name, "_total") {
			t.Errorf("counter %s does not end in _total", name)
		}
	}
	if code, body := get(t, srv.URL+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz %d %q", code, body)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != 200 {
		t.Errorf("/readyz %d %q", code, body)
	}
}

// A consume in flight does not hold up the plugin's metrics(): the ABI
// says metrics never waits for a consume.
func TestScrapeDuringConsume(t *testing.T) {
	both(t, func() *fakeplugin.Plugin {
		return &fakeplugin.Plugin{Decide: func(hostclient.Batch, int) fakeplugin.Result { return fakeplugin.Result{Delay: 4 * time.Second} }}
	}, "delay = \"4s\"\n", testScrapeDuringConsume)
}

func testScrapeDuringConsume(t *testing.T, p plug) {
	m := observe.NewMetrics()
	kf, srv, _ := run(t, m, "batch_length = 1\n", p)
	produce(t, kf, 1)
	until := time.Now().Add(10 * time.Second)
	// Listed from the assignment on; lag 1 once the record is known.
	for parts := status(t, srv).Sinks[0].Partitions; len(parts) == 0 || parts[0].Lag != 1; parts = status(t, srv).Sinks[0].Partitions {
		if time.Now().After(until) {
			t.Fatal("no fetch")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the batch of one is in consume()
	start := time.Now()
	mfs := scrape(t, srv)
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("scrape took %s during a 4s consume", d)
	}
	if up, _ := value(t, mfs, "picomq_connect_plugin_metrics_up", "sink_key=obs"); up != 1 {
		t.Error("plugin metrics not collected during a consume")
	}
	if lag, _ := value(t, mfs, "picomq_connect_consumer_lag_records", "sink_key=obs", "topic=a", "partition=0"); lag != 1 {
		t.Errorf("lag %v during the consume, want 1", lag)
	}
	if n, _ := value(t, mfs, "picomq_connect_batches_in_flight", "sink_key=obs"); n != 1 {
		t.Errorf("%v batches in flight during the consume, want 1", n)
	}
	if _, err := m.Registry().Gather(); err != nil {
		t.Error(err)
	}
}

// A quiet partition is listed from the assignment, before anything is
// fetched from it (before, only once a fetch returned records): a "latest"
// block on a topic with records but none new shows its partition at the
// end offset with no committed offset and lag 0, and so does an
// "earliest" group whose committed offset is at the end. Records produced
// afterwards are lag until committed.
func TestQuietPartitionsListed(t *testing.T) {
	for _, c := range []struct {
		name, block string
		commit      bool // the group committed offset 5 before the sink starts
		committed   *int64
	}{
		{"latest", "auto_offset_reset = \"latest\"\n", false, nil},
		{"earliest committed", "", true, ptr(int64(5))},
	} {
		t.Run(c.name, func(t *testing.T) {
			kf := newCluster(t)
			produce(t, kf, 5)
			if c.commit {
				commit(t, kf, "picomq-connect-sink-obs", "a", 5)
			}
			m := observe.NewMetrics()
			srv, _ := runOn(t, kf, m, c.block+"poll_interval = \"50ms\"\n", plug{fake: &fakeplugin.Plugin{}})
			var p observe.PartitionStatus
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if parts := status(t, srv).Sinks[0].Partitions; len(parts) == 1 {
					p = parts[0]
					if p.HighWatermark != nil && *p.HighWatermark == 5 {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("/status never listed a/0 at high watermark 5; last %+v", p)
				}
			}
			if p.Topic != "a" || p.Partition != 0 || p.Lag != 0 || p.LastBatchTime != nil ||
				(p.CommittedOffset == nil) != (c.committed == nil) || c.committed != nil && *p.CommittedOffset != *c.committed {
				t.Errorf("partition %+v", p)
			}
			if lag, _ := value(t, scrape(t, srv), "picomq_connect_consumer_lag_records", "sink_key=obs", "topic=a", "partition=0"); lag != 0 {
				t.Errorf("lag gauge %v, want 0", lag)
			}
			produce(t, kf, 2)
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				p = status(t, srv).Sinks[0].Partitions[0]
				if p.CommittedOffset != nil && *p.CommittedOffset == 7 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("offset 7 never committed; last %+v", p)
				}
			}
			if p.Lag != 0 || *p.HighWatermark != 7 {
				t.Errorf("partition after the commit %+v", p)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// commit commits offset at for topic partition 0 in group.
func commit(t *testing.T, kf *kfake.Cluster, group, topic string, at int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
	resp, err := kadm.NewClient(cl).CommitOffsets(context.Background(), group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}
