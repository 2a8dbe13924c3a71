package pipeline_test

import (
	"bufio"
	"context"
	"encoding/base64"
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
	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/internal/fakeplugin"
	"github.com/picomq/heavy-sinks/connect/pipeline"
	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/logbuf"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// testLib is the e2e test plugin that buildscripts/build.sh put in
// $PICOMQ_DIST: the cases through the real C host run in `make e2e`, and
// skip in `make unit`, which builds nothing.
func testLib(t testing.TB) string {
	t.Helper()
	return testenv.E2ELibrary(t, "test/libpicomq_connector_test_a_sink.so")
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
	Topic     string       `json:"topic"`
	Partition uint32       `json:"partition"`
	Schema    string       `json:"schema"`
	Attempt   uint32       `json:"attempt"`
	Records   []lineRecord `json:"records"`
}

type lineRecord struct {
	Offset  uint64      `json:"offset"`
	Key     *string     `json:"key"` // base64
	Headers [][2]string `json:"headers"`
	Payload []byte      `json:"payload"`
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

// harness runs one sink definition against a plugin: the scripted fake
// (connect/internal/fakeplugin), or the e2e test plugin in a real C host
// child process.
type harness struct {
	t       *testing.T
	kf      *kfake.Cluster
	def     *definition.Definition
	fake    *fakeplugin.Plugin // nil with the real host
	records string             // the test plugin's record file
	proc    *child.Process
	sink    *pipeline.Sink
	cancel  context.CancelFunc
	done    chan error
	backoff backoffLog
	// openBackoff logs the waits between open attempts.
	openBackoff backoffLog
	// decodeBackoff logs the waits between decode attempts of a batch
	// whose decoder failed transiently.
	decodeBackoff backoffLog
	// decoders are the sink's Config.Decoders (binary-format blocks).
	decoders map[int]decode.Decoder
	seen     observed
	// brokers, when set, replace the cluster's addresses in the sink's
	// configuration (a broker that is not there yet).
	brokers []string
	// shutdownTimeout, when set, is the sink's Config.ShutdownTimeout.
	shutdownTimeout time.Duration
	// budget, when set, is the sink's Config.Budget.
	budget *pipeline.Budget
	// derivedFetch leaves the fetch settings to the runtime; otherwise
	// the client's fetches wait at most 50ms, for quick tests.
	derivedFetch bool
	logs         logbuf.Buffer // the sink's log lines, for a test to look for an event
}

// logged reports whether a logged line contains s.
func (h *harness) logged(s string) bool { return strings.Contains(h.logs.String(), s) }

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
	d        time.Duration // each wait; 0 for 20 ms
}

func (b *backoffLog) wait(attempt int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.attempts = append(b.attempts, attempt)
	if b.d > 0 {
		return b.d
	}
	return 20 * time.Millisecond
}

func (b *backoffLog) get() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.attempts...)
}

// plug is the plugin a harness runs: the fake, or (fake nil) the test
// plugin in the real host with config as its plugin_config.
type plug struct {
	fake   *fakeplugin.Plugin
	config string
}

// fake runs the sink against p.
func fake(p *fakeplugin.Plugin) plug { return plug{fake: p} }

// host runs the sink against the test plugin in the real C host, with
// pluginConfig; the test skips without $PICOMQ_DIST.
func host(pluginConfig string) plug { return plug{config: pluginConfig} }

// both runs body as two subtests: against the fake script makes, and
// against the test plugin configured with pluginConfig in the real host.
// The two must behave alike to the runtime.
func both(t *testing.T, script func() *fakeplugin.Plugin, pluginConfig string, body func(t *testing.T, p plug)) {
	t.Run("fake", func(t *testing.T) { body(t, fake(script())) })
	t.Run("host", func(t *testing.T) { body(t, host(pluginConfig)) })
}

// newHarness parses a definition whose [[topics]] blocks are given, for
// the plugin p (with the real host, p.config plus record_path as its
// plugin_config).
func newHarness(t *testing.T, kf *kfake.Cluster, blocks string, p plug) *harness {
	t.Helper()
	records := filepath.Join(t.TempDir(), "records.jsonl")
	lib, pluginConfig := "/nonexistent/libfake.so", ""
	if p.fake == nil {
		lib, pluginConfig = testLib(t), fmt.Sprintf("record_path = %q\n%s", records, p.config)
	}
	doc := fmt.Sprintf("type = \"sink\"\nkey = \"test\"\nname = \"test sink\"\npath = %q\n%s\n[plugin_config]\n%s\n",
		strings.TrimSuffix(lib, ".so"), blocks, pluginConfig)
	def, err := definition.Parse("test.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, kf: kf, def: def, fake: p.fake, records: records}
}

// start runs the sink. With the real host the instance is opened first,
// as picomq-connect opened it before the sink opened its Opener itself;
// the fake is opened by Run.
func (h *harness) start() {
	h.t.Helper()
	w := newTestWriter(h.t)
	log := slog.New(slog.NewTextHandler(io.MultiWriter(w, &h.logs), &slog.HandlerOptions{Level: slog.LevelDebug}))
	var out pipeline.Deliverer = h.fake
	ctx := context.Background()
	if h.fake == nil {
		h.proc = child.New(hosttest.BuildHost(h.t), h.def.LibraryPath(""), child.Options{Logger: log, Stderr: w})
		cfg, err := h.def.OpenConfig()
		if err != nil {
			h.t.Fatal(err)
		}
		inst, err := h.proc.Open(ctx, string(cfg), log)
		if err != nil {
			h.t.Fatal(err)
		}
		out = inst
	}
	brokers := h.brokers
	if brokers == nil {
		brokers = h.kf.ListenAddrs()
	}
	clientOpts := []kgo.Opt{kgo.FetchMaxWait(50 * time.Millisecond)}
	if h.derivedFetch {
		clientOpts = nil
	}
	h.sink = pipeline.New(h.def, out, pipeline.Config{Brokers: brokers, Logger: log, Backoff: h.backoff.wait, Observer: &h.seen,
		OpenBackoff: h.openBackoff.wait, DecodeBackoff: h.decodeBackoff.wait, Decoders: h.decoders, ShutdownTimeout: h.shutdownTimeout, Budget: h.budget, ClientOpts: clientOpts})
	runCtx, cancel := context.WithCancel(ctx)
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.sink.Run(runCtx) }()
	h.t.Cleanup(func() { h.stop() })
}

// lines returns the batches the plugin wrote, in order: the test plugin's
// record file, or what the fake kept, in the same form.
func (h *harness) lines() []line {
	h.t.Helper()
	if h.fake == nil {
		return readLines(h.t, h.records)
	}
	var out []line
	for _, b := range h.fake.Written() {
		l := line{Topic: b.Topic, Partition: b.Partition, Schema: b.Schema, Attempt: b.Attempt}
		for _, r := range b.Records {
			var rec lineRecord
			rec.Offset, rec.Payload = r.Offset, r.Payload
			if r.Key != nil {
				k := base64.StdEncoding.EncodeToString(r.Key)
				rec.Key = &k
			}
			for _, hd := range r.Headers {
				rec.Headers = append(rec.Headers, [2]string{hd.Key, string(hd.Value)})
			}
			l.Records = append(l.Records, rec)
		}
		out = append(out, l)
	}
	return out
}

// stop is SIGTERM: it cancels Run, waits for it and closes the plugin.
func (h *harness) stop() error {
	if h.cancel == nil {
		return nil
	}
	h.cancel()
	h.cancel = nil
	err := h.wait(30 * time.Second)
	if h.proc != nil {
		h.proc.Close()
	}
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

// duplicates counts the records of topic in lines for offsets 0 to
// total-1: each offset missing fails the test as lost, and it returns how
// many records were delivered more than once.
func duplicates(t *testing.T, lines []line, topic string, total int) int {
	t.Helper()
	count := map[uint64]int{}
	for _, o := range offsets(lines, topic) {
		count[o]++
	}
	dups := 0
	for o := range uint64(total) {
		switch n := count[o]; {
		case n == 0:
			t.Errorf("offset %d lost", o)
		case n > 1:
			dups += n - 1
		}
	}
	return dups
}

// oneBatch is a harness of p on topic "a" of a new cluster, with
// batch_length n and n records in "a": one batch due at once. Not started.
func oneBatch(t *testing.T, p plug, n int) (*kfake.Cluster, *harness) {
	t.Helper()
	kf := cluster(t, "a")
	h := newHarness(t, kf, fmt.Sprintf("[[topics]]\ntopics = [\"a\"]\nschema = \"json\"\nbatch_length = %d\n", n), p)
	produce(t, kf, "a", jsonPayloads(0, n)...)
	return kf, h
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

// script is the fake's answer to the test plugin's fail_mode = "retry" or
// "fatal" (code), fail_topic (topic, "" for all) and fail_attempts
// (attempts, 0 for all), with its error text.
func script(code hostclient.Status, topic string, attempts int) *fakeplugin.Plugin {
	return &fakeplugin.Plugin{Decide: func(b hostclient.Batch, _ int) fakeplugin.Result {
		if (topic != "" && b.Topic != topic) || (attempts > 0 && int(b.Attempt) > attempts) {
			return fakeplugin.Result{}
		}
		return fakeplugin.Result{Code: code, Message: fmt.Sprintf("test plugin: asked to fail topic %s partition %d attempt %d with %s",
			b.Topic, b.Partition, b.Attempt, code)}
	}}
}

// rejecting is the fake's answer to the test plugin's reject_prefix: the
// records whose payload starts with prefix are rejected (the batch fails
// FATAL when it does not accept rejections), with the test plugin's text.
func rejecting(prefix string) *fakeplugin.Plugin {
	return &fakeplugin.Plugin{Decide: func(b hostclient.Batch, _ int) fakeplugin.Result {
		var r fakeplugin.Result
		for i, rec := range b.Records {
			if strings.HasPrefix(string(rec.Payload), prefix) {
				r.Reject = append(r.Reject, hostclient.Rejection{Index: i, Reason: hostclient.RejectValue,
					Message: fmt.Sprintf("test plugin: record at topic %q offset %d starts with %q", b.Topic, rec.Offset, prefix)})
			}
		}
		return r
	}}
}
