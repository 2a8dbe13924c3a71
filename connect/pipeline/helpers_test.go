package pipeline_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/child"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/shared/testenv"
	"github.com/picomq/heavy-sinks/shared/testenv/hosttest"
)

// testLib is the e2e test plugin that buildscripts/build.sh put in
// $PICOMQ_DIST or <repo>/dist. A missing build fails the test; it never
// skips.
func testLib(t testing.TB) string {
	t.Helper()
	return testenv.Library(t, "test/libpicomq_connector_test_a_sink.so")
}

// cluster starts an in-process broker with topics of one partition.
func cluster(t *testing.T, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func produce(t *testing.T, c *kfake.Cluster, topic string, payloads ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, p := range payloads {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(p), Key: []byte("k"),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func jsonPayloads(from, n int) []string {
	var out []string
	for i := from; i < from+n; i++ {
		out = append(out, fmt.Sprintf(`{"n":%d}`, i))
	}
	return out
}

// committed returns the group's committed offset per topic (partition 0);
// -1 when none.
func committed(t *testing.T, c *kfake.Cluster, group string, topics ...string) map[string]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[string]int64{}
	resp, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		for _, topic := range topics {
			out[topic] = -1
		}
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range topics {
		out[topic] = -1
		if o, ok := resp.Lookup(topic, 0); ok {
			out[topic] = o.At
		}
	}
	return out
}

// line is one batch the test plugin recorded.
type line struct {
	Topic     string `json:"topic"`
	Partition uint32 `json:"partition"`
	Schema    string `json:"schema"`
	Attempt   uint32 `json:"attempt"`
	Records   []struct {
		Offset  uint64      `json:"offset"`
		Key     *string     `json:"key"`
		Headers [][2]string `json:"headers"`
		Payload []byte      `json:"payload"`
	} `json:"records"`
}

func readLines(t *testing.T, path string) []line {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []line
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("record file line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// harness runs one sink definition against the test plugin in a real C
// host child process.
type harness struct {
	t       *testing.T
	kf      *kfake.Cluster
	def     *definition.Definition
	records string
	proc    *child.Process
	sink    *pipeline.Sink
	cancel  context.CancelFunc
	done    chan error
	backoff backoffLog
	seen    observed
	// brokers, when set, replace the cluster's addresses in the sink's
	// configuration (a broker that is not there yet).
	brokers []string
	logs    logBuffer
}

// logBuffer keeps the sink's log lines for a test to look for an event.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// has reports whether a logged line contains s.
func (l *logBuffer) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.b.String(), s)
}

// observed is an Observer that keeps every delivery.
type observed struct {
	mu sync.Mutex
	d  []pipeline.Delivery
}

func (o *observed) Delivered(d pipeline.Delivery) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.d = append(o.d, d)
}

func (o *observed) outcomes() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, d := range o.d {
		out = append(out, fmt.Sprintf("%s@%d#%d:%s", d.Topic, d.First, d.Attempt, d.Outcome))
	}
	return out
}

type backoffLog struct {
	mu       sync.Mutex
	attempts []int
}

func (b *backoffLog) wait(attempt int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.attempts = append(b.attempts, attempt)
	return 20 * time.Millisecond
}

func (b *backoffLog) get() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.attempts...)
}

// newHarness parses a definition whose [[topics]] blocks are given, with
// plugin_config for the test plugin (record_path is added).
func newHarness(t *testing.T, kf *kfake.Cluster, blocks, pluginConfig string) *harness {
	t.Helper()
	records := filepath.Join(t.TempDir(), "records.jsonl")
	doc := fmt.Sprintf("type = \"sink\"\nkey = \"test\"\nname = \"test sink\"\npath = %q\n%s\n[plugin_config]\nrecord_path = %q\n%s\n",
		strings.TrimSuffix(testLib(t), ".so"), blocks, records, pluginConfig)
	def, err := definition.Parse("test.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, kf: kf, def: def, records: records}
}

func (h *harness) start() {
	h.t.Helper()
	w := newTestWriter(h.t)
	log := slog.New(slog.NewTextHandler(io.MultiWriter(w, &h.logs), &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.proc = child.New(hosttest.BuildHost(h.t), h.def.LibraryPath(""), child.Options{Logger: log, Stderr: w})
	cfg, err := h.def.OpenConfig()
	if err != nil {
		h.t.Fatal(err)
	}
	ctx := context.Background()
	inst, err := h.proc.Open(ctx, string(cfg), log)
	if err != nil {
		h.t.Fatal(err)
	}
	brokers := h.brokers
	if brokers == nil {
		brokers = h.kf.ListenAddrs()
	}
	h.sink = pipeline.New(h.def, inst, pipeline.Config{Brokers: brokers, Logger: log, Backoff: h.backoff.wait, Observer: &h.seen,
		ClientOpts: []kgo.Opt{kgo.FetchMaxWait(50 * time.Millisecond)}})
	runCtx, cancel := context.WithCancel(ctx)
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.sink.Run(runCtx) }()
	h.t.Cleanup(func() { h.stop() })
}

// stop is SIGTERM: it cancels Run, waits for it and closes the plugin.
func (h *harness) stop() error {
	if h.cancel == nil {
		return nil
	}
	h.cancel()
	h.cancel = nil
	err := h.wait(30 * time.Second)
	h.proc.Close()
	return err
}

// wait returns Run's error once it returned.
func (h *harness) wait(d time.Duration) error {
	h.t.Helper()
	select {
	case err := <-h.done:
		h.done <- err
		return err
	case <-time.After(d):
		h.t.Fatalf("Run did not return within %s", d)
		return nil
	}
}

// until polls cond for up to d.
func until(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
	}
}

// offsets lists every record offset recorded for topic, in file order.
func offsets(lines []line, topic string) []uint64 {
	var out []uint64
	for _, l := range lines {
		if l.Topic == topic {
			for _, r := range l.Records {
				out = append(out, r.Offset)
			}
		}
	}
	return out
}

// testWriter logs to t until the test ends; the child's stderr copy may
// outlive it.
type testWriter struct {
	t    *testing.T
	done *atomic.Bool
}

func newTestWriter(t *testing.T) testWriter {
	w := testWriter{t, new(atomic.Bool)}
	t.Cleanup(func() { w.done.Store(true) })
	return w
}

func (w testWriter) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}
