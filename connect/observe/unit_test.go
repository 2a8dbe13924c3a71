package observe_test

import (
	"context"
	"errors"
	"maps"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/picomq/heavy-sinks/connect/observe"
	"github.com/picomq/heavy-sinks/connect/pipeline"
)

type fakeSink struct {
	state pipeline.State
	err   error
	parts []pipeline.PartitionStatus
}

func (f fakeSink) Key() string                            { return "fake" }
func (f fakeSink) State() (pipeline.State, error)         { return f.state, f.err }
func (f fakeSink) Partitions() []pipeline.PartitionStatus { return f.parts }

type slowPlugin struct{}

func (slowPlugin) Metrics(ctx context.Context) (string, error) {
	<-ctx.Done() // a plugin that never answers
	return "", ctx.Err()
}

// A plugin that does not answer costs a scrape PluginTimeout, not the
// scrape: its fields are left out and plugin_metrics_up says 0.
func TestSlowPluginDoesNotHangScrape(t *testing.T) {
	m := observe.NewMetrics()
	m.PluginTimeout = 100 * time.Millisecond
	m.Add(fakeSink{state: pipeline.StateRunning}, slowPlugin{})
	srv := httptest.NewServer(observe.Handler(m))
	defer srv.Close()
	start := time.Now()
	mfs := scrape(t, srv)
	if d := time.Since(start); d > time.Second {
		t.Errorf("scrape took %s", d)
	}
	if up, _ := value(t, mfs, "picomq_connect_plugin_metrics_up", "sink_key=fake"); up != 0 {
		t.Errorf("plugin_metrics_up %v, want 0", up)
	}
}

// A sink in error: /readyz is 503 naming it, /healthz stays 200, /status
// carries the error text and the lag of the stuck partition.
func TestReadyzAndStatusOnError(t *testing.T) {
	m := observe.NewMetrics()
	m.Add(fakeSink{state: pipeline.StateError, err: errors.New("topic a partition 0 offset 5: fatal after 1 attempt(s): boom"),
		parts: []pipeline.PartitionStatus{{Topic: "a", Committed: 5, HighWatermark: 12, LastBatch: time.Now()}}}, nil)
	srv := httptest.NewServer(observe.Handler(m))
	defer srv.Close()
	if code, body := get(t, srv.URL+"/readyz"); code != 503 || body != "fake error\n" {
		t.Errorf("/readyz %d %q", code, body)
	}
	if code, _ := get(t, srv.URL+"/healthz"); code != 200 {
		t.Errorf("/healthz %d", code)
	}
	s := status(t, srv).Sinks[0]
	if s.State != pipeline.StateError || !strings.Contains(s.LastError, "boom") || s.Lag != 7 ||
		*s.Partitions[0].CommittedOffset != 5 || *s.Partitions[0].HighWatermark != 12 {
		t.Errorf("/status %+v", s)
	}
	mfs := scrape(t, srv)
	if v, _ := value(t, mfs, "picomq_connect_sink_state", "sink_key=fake", "state=error"); v != 1 {
		t.Errorf("state error gauge %v", v)
	}
	if _, ok := mfs["picomq_connect_plugin_metrics_up"]; ok {
		t.Error("plugin_metrics_up for a sink without a plugin")
	}
}

func TestPluginFields(t *testing.T) {
	got := observe.PluginFields(map[string]any{
		"batches": 3.0, "plugin": "delta", "last_error": nil, "ok": true, "list": []any{1.0},
		"sink": map[string]any{"files_written": 2.0, "Weird-Name.x": 1.5},
	})
	want := map[string]float64{"picomq_plugin_batches": 3, "picomq_plugin_sink_files_written": 2, "picomq_plugin_sink_weird_name_x": 1.5}
	if !maps.Equal(got, want) {
		t.Errorf("PluginFields = %v, want %v", got, want)
	}
}

// Declared fields are exported under their declared name and type, in base
// units; undeclared ones, and those of an invalid declaration, untyped as
// before ABI 1.2.
func TestPluginMetrics(t *testing.T) {
	fields := map[string]any{
		"records": 7.0, "skipped": 2.0, "plugin": "delta",
		"sink": map[string]any{"checkpoint_cpu_ms": 1500.0, "last_checkpoint_write_ms": 13.0, "files_written": 3.0, "bad": 4.0},
	}
	decls := observe.Declarations(`{"metrics":[
		{"field":"records","name":"records_written_total","type":"counter","help":"written"},
		{"field":"sink.checkpoint_cpu_ms","name":"sink_checkpoint_cpu_seconds_total","type":"counter","unit":"seconds","scale":0.001,"help":"cpu"},
		{"field":"sink.last_checkpoint_write_ms","name":"sink_last_checkpoint_write_seconds","type":"gauge","unit":"seconds","scale":0.001,"help":"took"},
		{"field":"sink.bad","name":"sink_bad","type":"counter","help":"a counter without _total"},
		{"field":"sink.absent","name":"sink_absent_total","type":"counter","help":"not in the JSON"}]}`)
	if len(decls) != 4 {
		t.Fatalf("%d valid declarations, want 4 (sink_bad is invalid): %v", len(decls), decls)
	}
	got := map[string]observe.PluginMetric{}
	for _, m := range observe.PluginMetrics(fields, decls) {
		got[m.Name] = m
	}
	want := map[string]observe.PluginMetric{
		"picomq_plugin_records_written_total":              {Help: "written", Type: prometheus.CounterValue, Value: 7},
		"picomq_plugin_sink_checkpoint_cpu_seconds_total":  {Help: "cpu", Type: prometheus.CounterValue, Value: 1.5},
		"picomq_plugin_sink_last_checkpoint_write_seconds": {Help: "took", Type: prometheus.GaugeValue, Value: 13.0 / 1000},
		"picomq_plugin_skipped":                            {Type: prometheus.UntypedValue, Value: 2},
		"picomq_plugin_sink_files_written":                 {Type: prometheus.UntypedValue, Value: 3},
		"picomq_plugin_sink_bad":                           {Type: prometheus.UntypedValue, Value: 4},
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for name, w := range want {
		g := got[name]
		if g.Type != w.Type || g.Value != w.Value || (w.Help != "" && g.Help != w.Help) {
			t.Errorf("%s = %+v, want %+v", name, g, w)
		}
	}
	// An older plugin declares nothing: every number untyped, named as
	// PluginFields names it.
	old := observe.PluginMetrics(fields, observe.Declarations(`{"name":"delta_sink","abi_version":"1.1"}`))
	names := observe.PluginFields(fields)
	if len(old) != len(names) {
		t.Errorf("undeclared: %v, want %v", old, names)
	}
	for _, m := range old {
		if v, ok := names[m.Name]; !ok || v != m.Value || m.Type != prometheus.UntypedValue {
			t.Errorf("undeclared %+v, want untyped %v", m, v)
		}
	}
}

// Lag before any commit counts from the log start.
func TestLag(t *testing.T) {
	for _, c := range []struct {
		p    pipeline.PartitionStatus
		want int64
	}{
		{pipeline.PartitionStatus{Committed: -1, HighWatermark: -1}, 0},
		{pipeline.PartitionStatus{Committed: -1, HighWatermark: 10, LogStart: 4}, 6},
		{pipeline.PartitionStatus{Committed: 7, HighWatermark: 10}, 3},
		{pipeline.PartitionStatus{Committed: 2, HighWatermark: 10, LogStart: 5}, 5},
	} {
		if got := c.p.Lag(); got != c.want {
			t.Errorf("%+v: lag %d, want %d", c.p, got, c.want)
		}
	}
}

func TestDeadLettersCountedByReason(t *testing.T) {
	m := observe.NewMetrics()
	m.Delivered(pipeline.Delivery{Sink: "s", Topic: "t", Attempt: 1, Outcome: pipeline.OK, Records: 7,
		DeadLetters: map[string]int{"value": 2, "encoding": 1}})
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "picomq_connect_dead_letters_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range mt.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["sink_key"] == "s" && l["topic"] == "t" {
				got[l["reason"]] = mt.GetCounter().GetValue()
			}
		}
	}
	if want := map[string]float64{"value": 2, "encoding": 1, "size": 0}; !maps.Equal(got, want) {
		t.Errorf("dead letters by reason = %v, want %v", got, want)
	}
}

// Records a transform dropped are counted once, at the attempt that
// returned OK, not at the retries before it.
func TestFilteredCountedOnce(t *testing.T) {
	m := observe.NewMetrics()
	m.Delivered(pipeline.Delivery{Sink: "s", Topic: "t", Attempt: 1, Outcome: pipeline.Retry, Records: 5, Filtered: 3})
	m.Delivered(pipeline.Delivery{Sink: "s", Topic: "t", Attempt: 2, Outcome: pipeline.OK, Records: 5, Filtered: 3})
	m.Delivered(pipeline.Delivery{Sink: "s", Topic: "t", Attempt: 0, Outcome: pipeline.OK, Records: 2, Filtered: 2})
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := -1.0
	for _, mf := range mfs {
		if mf.GetName() == "picomq_connect_records_filtered_total" {
			got = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if got != 5 {
		t.Errorf("picomq_connect_records_filtered_total = %v, want 5", got)
	}
}
