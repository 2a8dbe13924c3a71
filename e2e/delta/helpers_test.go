package delta_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltatest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/testenv"
	"github.com/picomq/heavy-sinks/shared/testenv/hosttest"
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
	var se *hostclient.StatusError
	if !errors.As(err, &se) || se.Code != code {
		t.Fatalf("got %v, want status %v", err, code)
	}
	for _, c := range contains {
		if !strings.Contains(se.Message, c) {
			t.Fatalf("message %q does not contain %q", se.Message, c)
		}
	}
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
func history(t *testing.T, uri string) []map[string]any {
	t.Helper()
	out := py(t, `
dt = DeltaTable(uri, storage_options=opts)
dump([{"version": h.get("version"), "operation": h.get("operation")} for h in dt.history()])
`, uri)
	var h []map[string]any
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return h
}

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

// writeConcurrently has `writers` sink instances (distinct keys, so distinct
// application transactions) append `batches` batches of `per` records each
// to the table of cfg at the same time, from several host threads, and
// returns the ids the table must then hold, in order.
func writeConcurrently(t *testing.T, cfg map[string]any, writers, batches, per int) string {
	t.Helper()
	h := newHarness(t, hostclient.Workers(4))
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		inst := h.open(fmt.Sprintf("w%d", w), cfg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range batches {
				if err := inst.Consume(events(fmt.Sprintf("t%d", w), w*1000+n*per, per)); err != nil {
					errs <- fmt.Errorf("writer %d batch %d: %w", w, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var want []string
	for w := range writers {
		want = append(want, span(w*1000, w*1000+batches*per-1))
	}
	return strings.Join(want, ",")
}
