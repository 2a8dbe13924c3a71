package delta_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/delta/deltatest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// harness is one C host with the Delta sink library loaded.
type harness struct {
	t    *testing.T
	host *hostclient.Host
	lib  *hostclient.Lib
}

func newHarness(t *testing.T, opts ...hostclient.Option) *harness {
	t.Helper()
	h := hosttest.StartTest(t, hosttest.BuildHost(t), opts...)
	lib, err := h.Load(testenv.Library(t, "libpicomq_connector_delta_sink.so"))
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, host: h, lib: lib}
}

func definition(key string, cfg map[string]any) string {
	b, _ := json.Marshal(map[string]any{"key": key, "name": key, "version": 0, "plugin_config": cfg})
	return string(b)
}

func (h *harness) open(key string, cfg map[string]any) *hostclient.Instance {
	h.t.Helper()
	inst, err := h.lib.Open(definition(key, cfg))
	if err != nil {
		h.t.Fatalf("open: %v", err)
	}
	h.t.Cleanup(func() { _ = inst.Close() })
	return inst
}

// with is a copy of cfg with kv (key, value, ...) set.
func with(cfg map[string]any, kv ...any) map[string]any { return deltatest.With(cfg, kv...) }

func (h *harness) openErr(key string, cfg map[string]any) error {
	h.t.Helper()
	inst, err := h.lib.Open(definition(key, cfg))
	if err == nil {
		_ = inst.Close()
		h.t.Fatalf("open succeeded, want an error")
	}
	return err
}

func wantStatus(t *testing.T, err error, code hostclient.Status, contains ...string) {
	t.Helper()
	deltatest.WantStatus(t, err, code, contains...)
}

// jsonBatch builds a batch of JSON records with consecutive offsets.
func jsonBatch(topic string, first uint64, payloads ...string) hostclient.Batch {
	return deltatest.JSONBatch(topic, first, payloads...)
}

func consume(t *testing.T, inst *hostclient.Instance, b hostclient.Batch) {
	t.Helper()
	if err := inst.Consume(b); err != nil {
		t.Fatalf("consume %s offsets %d..: %v", b.Topic, b.Records[0].Offset, err)
	}
}

// py runs a delta-rs script after deltatest.Prelude (which gives it `uri`,
// `opts` and `dump`).
func py(t *testing.T, script string, args ...string) string {
	t.Helper()
	return deltatest.Py(t, script, args...)
}

// readRows returns the table's rows sorted by the given column, as delta-rs
// reads them.
func readRows(t *testing.T, uri, sortBy string) []map[string]any {
	t.Helper()
	return deltatest.ReadRows(t, uri, sortBy)
}

// history returns the table's versions, newest first, with their operation.
func history(t *testing.T, uri string) []map[string]any { t.Helper(); return deltatest.History(t, uri) }

// sinkMetrics returns the sink's own metrics of an instance.
func sinkMetrics(t *testing.T, inst *hostclient.Instance) map[string]any {
	t.Helper()
	raw, err := inst.Metrics()
	var m struct {
		Sink map[string]any `json:"sink"`
	}
	if err != nil || json.Unmarshal([]byte(raw), &m) != nil {
		t.Fatalf("metrics: %v: %s", err, raw)
	}
	return m.Sink
}

// waitForMetric waits until a counter of the sink reaches at least min.
// The checkpointer counts its work after doing it, so a test that saw a
// checkpoint or a cleanup on disk waits here before reading the counter.
func waitForMetric(t *testing.T, inst *hostclient.Instance, key string, min float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, _ := sinkMetrics(t, inst)[key].(float64)
		if n >= min {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metric %s stayed at %v, below %v", key, n, min)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fileURI(dir string) string { return "file://" + dir }

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// noSecret fails when secret shows in the instance's logs or metrics.
func noSecret(t *testing.T, inst *hostclient.Instance, secret string) {
	t.Helper()
	for _, l := range inst.Logs() {
		if strings.Contains(l.Message, secret) || strings.Contains(fmt.Sprint(l), secret) {
			t.Fatalf("secret in logs: %v", l)
		}
	}
	m, _ := inst.Metrics()
	if strings.Contains(m, secret) {
		t.Fatalf("secret in metrics: %s", m)
	}
}

// azurite points the delta-rs helper scripts at the test Azurite and returns
// the quick-start plugin_config for container c.
func azurite(t *testing.T, svc services.Services, c string) map[string]any {
	t.Helper()
	t.Setenv("PICOMQ_DELTA_STORAGE_OPTIONS", deltatest.AzureReaderOptions(svc))
	return deltatest.AzureConfig(svc, c)
}

// fakeGCS points the delta-rs helper scripts at the test fake-gcs-server and
// returns the quick-start plugin_config and the marker that the service
// account key's private key is.
func fakeGCS(t *testing.T, svc services.Services) (map[string]any, string) {
	t.Helper()
	cfg, marker := deltatest.GCSConfig(svc)
	t.Setenv("PICOMQ_DELTA_STORAGE_OPTIONS", deltatest.GCSReaderOptions(cfg))
	return cfg, marker
}

// createInGCS creates a table with a delta-rs script in a local directory
// and uploads it to gs://bucket/prefix (delta-rs cannot write gs:// tables
// to the emulator: see deltatest.Store.Create).
func createInGCS(t *testing.T, svc services.Services, script, bucket, prefix string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "table")
	py(t, script, fileURI(dir))
	deltatest.UploadGCS(t, svc, dir, bucket, prefix)
	return "gs://" + bucket + "/" + prefix
}
