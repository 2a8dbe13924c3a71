package abi_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// distDir is where buildscripts/build.sh put the libraries (testenv.DistDir),
// checked to hold the test plugin. A missing build fails the test; it never
// skips.
func distDir(t testing.TB) string {
	t.Helper()
	testenv.Library(t, "test/libpicomq_connector_test_a_sink.so")
	dir, err := testenv.DistDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func testPlugin(t testing.TB, which string) string {
	return filepath.Join(distDir(t), "test", "libpicomq_connector_test_"+which+"_sink.so")
}

func allLibraries(t testing.TB) []string {
	dir := distDir(t)
	libs, _ := filepath.Glob(filepath.Join(dir, "*.so"))
	test, _ := filepath.Glob(filepath.Join(dir, "test", "*.so"))
	return append(libs, test...)
}

func startHost(t *testing.T, opts ...hostclient.Option) *hostclient.Host {
	t.Helper()
	return hosttest.StartTest(t, hosttest.BuildHost(t), opts...)
}

func definition(t testing.TB, key string, cfg map[string]any) string {
	b, err := json.Marshal(map[string]any{"key": key, "name": "test " + key, "version": 1, "plugin_config": cfg})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
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

// recordedBatch mirrors one line of the test plugin's record file.
type recordedBatch struct {
	Topic     string `json:"topic"`
	Partition uint32 `json:"partition"`
	Schema    string `json:"schema"`
	Attempt   uint32 `json:"attempt"`
	Records   []struct {
		Offset    uint64      `json:"offset"`
		Timestamp int64       `json:"timestamp"`
		Key       *string     `json:"key"`
		Headers   [][2]string `json:"headers"`
		Payload   string      `json:"payload"`
	} `json:"records"`
	ValueSchema *string `json:"value_schema"` // ABI 1.3
	RangeLast   uint64  `json:"range_last"`   // ABI 1.5
	Follows     *uint64 `json:"follows"`
	Pred        *uint64 `json:"pred"` // RangeLast of the sdk.Batch.Pred the sink saw
}

func readRecorded(t testing.TB, path string) []recordedBatch {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []recordedBatch
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var b recordedBatch
		if err := json.Unmarshal(sc.Bytes(), &b); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, b)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// allowedRuntimeSymbol matches the Go/cgo runtime's own exports, the only
// ones allowed without the project prefix.
var allowedRuntimeSymbol = regexp.MustCompile(`^(_cgo_|x_cgo_|_cgoexp_|crosscall|x_crosscall2_ptr$|fatalf$)`)

func TestExportedSymbolsCarryThePrefix(t *testing.T) {
	libs := allLibraries(t)
	if len(libs) < 2 {
		t.Fatalf("found only %v", libs)
	}
	for _, lib := range libs {
		out, err := exec.Command("nm", "-D", "--defined-only", lib).Output()
		if err != nil {
			t.Fatalf("nm %s: %v", lib, err)
		}
		sawInit := false
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			sym := fields[len(fields)-1]
			switch {
			case sym == "picomq_sink_plugin_init":
				sawInit = true
			case strings.HasPrefix(sym, "picomq_"), allowedRuntimeSymbol.MatchString(sym):
			default:
				t.Errorf("%s exports %q without the picomq_ prefix", filepath.Base(lib), sym)
			}
		}
		if !sawInit {
			t.Errorf("%s does not export picomq_sink_plugin_init", filepath.Base(lib))
		}
	}
}

func TestDescribeEveryLibrary(t *testing.T) {
	h := startHost(t)
	for _, path := range allLibraries(t) {
		lib, err := h.Load(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		doc, err := lib.Describe()
		if err != nil {
			t.Fatalf("%s: describe: %v", path, err)
		}
		var d struct {
			Name, Version, ABIVersion, GoVersion string
			Config                               []struct {
				Key, Type        string
				Required, Secret bool
				Default          *string
				Description      string
			} `json:"plugin_config"`
		}
		if err := json.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatalf("%s: describe is not JSON: %v\n%s", path, err, doc)
		}
		var raw map[string]any
		_ = json.Unmarshal([]byte(doc), &raw)
		if d.Name == "" || d.Version == "" || raw["abi_version"] != "1.5" || !strings.HasPrefix(raw["go_version"].(string), "go") || len(d.Config) == 0 {
			t.Fatalf("%s: incomplete describe: %s", path, doc)
		}
		// ABI 1.4: the shipped sinks take redrive batches; the test
		// plugin does not declare it.
		if redrive, _ := raw["redrive"].(bool); redrive == strings.Contains(path, "/test/") {
			t.Fatalf("%s: describe redrive = %v", path, raw["redrive"])
		}
		if strings.Contains(path, "/test/") {
			if d.Config[1].Key != "token" || !d.Config[1].Secret || d.Config[0].Key != "record_path" || !d.Config[0].Required {
				t.Fatalf("test plugin schema: %s", doc)
			}
		}
	}
}

func TestABIVersionMismatchIsRefused(t *testing.T) {
	h := startHost(t)
	_, err := h.Load(testPlugin(t, "a"), hosttest.ABI(2, 0))
	wantStatus(t, err, hostclient.StatusABIMismatch)
	_, err = h.Load(testPlugin(t, "a"), hosttest.ABI(0, 9))
	wantStatus(t, err, hostclient.StatusABIMismatch)
	// A newer minor version of the same major is accepted.
	lib, err := h.Load(testPlugin(t, "a"), hosttest.ABI(1, 7))
	if err != nil {
		t.Fatal(err)
	}
	if major, minor := lib.ABI(); major != 1 || minor != 5 {
		t.Fatalf("plugin ABI %d.%d", major, minor)
	}
}

func TestBadConfigNamesTheKey(t *testing.T) {
	h := startHost(t)
	lib, err := h.Load(testPlugin(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	cases := []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{}, `plugin_config key "record_path" is required`},
		{map[string]any{"record_path": rec, "max_batch": "ten"}, `plugin_config key "max_batch": expected int, got string`},
		{map[string]any{"record_path": rec, "delay": "forever"}, `plugin_config key "delay"`},
		{map[string]any{"record_path": rec, "max_batch": 0}, `plugin_config key "max_batch" must be above 0`},
		{map[string]any{"record_path": "/nonexistent/dir/x"}, `plugin_config key "record_path"`},
	}
	for _, tc := range cases {
		_, err := lib.Open(definition(t, "bad", tc.cfg))
		wantStatus(t, err, hostclient.StatusBadConfig, tc.want)
	}
	_, err = lib.Open(`{"key": "x", "plugin_config": `)
	wantStatus(t, err, hostclient.StatusBadConfig, "sink definition is not valid JSON")
}

func TestBatchCrossesTheABIIntact(t *testing.T) {
	h := startHost(t)
	lib, _ := h.Load(testPlugin(t, "a"))
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	inst, err := lib.Open(definition(t, "roundtrip", map[string]any{"record_path": rec}))
	if err != nil {
		t.Fatal(err)
	}
	binary := []byte{0, 1, 2, 0xff, 0xfe}
	b := hostclient.Batch{Attempt: 3, Partition: 0, Topic: "orders.eu", Schema: "raw", Records: []hostclient.Record{
		{Offset: 41, TimestampMs: 1767225600123, Key: nil, Payload: binary},
		{Offset: 42, TimestampMs: -1, Key: []byte{}, Payload: []byte{}},
		{Offset: 43, TimestampMs: 7, Key: []byte("k\x00ey"), Headers: []hostclient.Header{{Key: "trace", Value: []byte("abc")}, {Key: "", Value: []byte{}}}, Payload: []byte("x")},
	}}
	if err := inst.Consume(b); err != nil {
		t.Fatal(err)
	}
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	got := readRecorded(t, rec)
	if len(got) != 1 {
		t.Fatalf("%d batches recorded", len(got))
	}
	g := got[0]
	if g.Topic != "orders.eu" || g.Schema != "raw" || g.Attempt != 3 || len(g.Records) != 3 {
		t.Fatalf("%+v", g)
	}
	r0, r1, r2 := g.Records[0], g.Records[1], g.Records[2]
	if r0.Offset != 41 || r0.Timestamp != 1767225600123 || r0.Key != nil || r0.Payload != base64.StdEncoding.EncodeToString(binary) {
		t.Fatalf("record 0: %+v", r0)
	}
	if r1.Key == nil || *r1.Key != "" || r1.Timestamp != -1 || r1.Payload != "" {
		t.Fatalf("record 1 (empty key must stay present): %+v", r1)
	}
	if *r2.Key != base64.StdEncoding.EncodeToString([]byte("k\x00ey")) || len(r2.Headers) != 2 || r2.Headers[0] != [2]string{"trace", "abc"} {
		t.Fatalf("record 2: %+v", r2)
	}
}

func TestPayloadSchemaChecks(t *testing.T) {
	h := startHost(t)
	lib, _ := h.Load(testPlugin(t, "a"))
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	inst, err := lib.Open(definition(t, "schemas", map[string]any{"record_path": rec}))
	if err != nil {
		t.Fatal(err)
	}
	bad := hostclient.Batch{Attempt: 1, Topic: "t", Schema: "json", Records: []hostclient.Record{
		{Offset: 1, Payload: []byte(`{"ok":true}`)}, {Offset: 2, Payload: []byte(`{"broken":`)},
	}}
	wantStatus(t, inst.Consume(bad), hostclient.StatusFatal, `topic "t" offset 2: payload is not a JSON value`)
	text := hostclient.Batch{Attempt: 1, Topic: "t", Schema: "text", Records: []hostclient.Record{{Offset: 5, Payload: []byte{'a', 0xc3}}}}
	wantStatus(t, inst.Consume(text), hostclient.StatusFatal, "offset 5: payload is not valid UTF-8")
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readRecorded(t, rec); len(got) != 0 {
		t.Fatalf("failed batches reached the sink: %+v", got)
	}
}

func TestEnvOverridesAndSecretRedaction(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	const token = "tok-3f9a7c1e-secret"
	h := startHost(t, hostclient.Env(
		"PICOMQ_CONNECTORS_SINK_ENV_SINK_PLUGIN_CONFIG_RECORD_PATH="+rec,
		"PICOMQ_CONNECTORS_SINK_ENV_SINK_PLUGIN_CONFIG_TOKEN="+token,
		"PICOMQ_CONNECTORS_SINK_ENV_SINK_PLUGIN_CONFIG_FAIL_MODE=retry",
		"PICOMQ_CONNECTORS_SINK_ENV_SINK_PLUGIN_CONFIG_FAIL_TOPIC=failing",
		"PICOMQ_CONNECTORS_SINK_ENV_SINK_PLUGIN_CONFIG_VERBOSE=true",
	))
	lib, _ := h.Load(testPlugin(t, "a"))
	// The JSON names another file and no token: the environment wins.
	inst, err := lib.Open(definition(t, "env-sink", map[string]any{"record_path": "/nonexistent/x", "token": "json-token-value"}))
	if err != nil {
		t.Fatal(err)
	}
	ok := hostclient.Batch{Attempt: 1, Topic: "fine", Schema: "json", Records: []hostclient.Record{{Offset: 1, Payload: []byte(`1`)}}}
	if err := inst.Consume(ok); err != nil {
		t.Fatal(err)
	}
	failing := ok
	failing.Topic = "failing"
	consumeErr := inst.Consume(failing)
	wantStatus(t, consumeErr, hostclient.StatusRetry, "asked to fail", "(token [REDACTED])")
	metrics, err := inst.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := lib.Describe()
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readRecorded(t, rec); len(got) != 1 || got[0].Topic != "fine" {
		t.Fatalf("record file from the env override: %+v", got)
	}
	var logs []string
	for _, l := range inst.Logs() {
		logs = append(logs, l.Message)
	}
	all := strings.Join(logs, "\n")
	for _, want := range []string{
		"test sink opened record_path=" + rec + " token=[REDACTED]",
		"batch recorded topic=fine records=1 last_offset=1",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("logs lack %q:\n%s", want, all)
		}
	}
	for name, text := range map[string]string{"logs": all, "metrics": metrics, "describe": doc, "error": consumeErr.Error(), "stderr": h.Stderr()} {
		if strings.Contains(text, token) || strings.Contains(text, "json-token-value") {
			t.Errorf("%s leaks the secret: %s", name, text)
		}
	}
	if !strings.Contains(metrics, `"last_error":"test plugin: asked to fail`) {
		t.Errorf("metrics: %s", metrics)
	}
}

func TestPanicsBecomeFatalErrors(t *testing.T) {
	h := startHost(t)
	lib, _ := h.Load(testPlugin(t, "a"))
	dir := t.TempDir()
	_, err := lib.Open(definition(t, "panic-open", map[string]any{"record_path": filepath.Join(dir, "o"), "fail_mode": "panic_open"}))
	wantStatus(t, err, hostclient.StatusFatal, "panic: test plugin: panic in open")

	b := hostclient.Batch{Attempt: 1, Topic: "t", Schema: "json", Records: []hostclient.Record{{Offset: 1, Payload: []byte(`{}`)}}}
	for mode, want := range map[string]string{
		"panic":           "panic: test plugin: panic in consume",
		"panic_goroutine": "panic: test plugin: panic in a goroutine",
	} {
		inst, err := lib.Open(definition(t, mode, map[string]any{"record_path": filepath.Join(dir, mode), "fail_mode": mode}))
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, inst.Consume(b), hostclient.StatusFatal, want)
		if err := inst.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A panic in a background goroutine does not fail the call that started
	// it, but poisons the instance.
	inst, err := lib.Open(definition(t, "bg", map[string]any{"record_path": filepath.Join(dir, "bg"), "fail_mode": "panic_background"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.Consume(b); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, inst.Consume(b), hostclient.StatusFatal, "instance is unusable", "panic in a background goroutine")
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	// The host survived all of it.
	inst, err = lib.Open(definition(t, "after", map[string]any{"record_path": filepath.Join(dir, "after")}))
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.Consume(b); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, lib.Instance(inst.Handle()+1).Consume(b), hostclient.StatusFatal, "unknown instance")
}

func TestHandlesAreNotSharedBetweenLibraries(t *testing.T) {
	h := startHost(t)
	a, _ := h.Load(testPlugin(t, "a"))
	b, _ := h.Load(testPlugin(t, "b"))
	inst, err := a.Open(definition(t, "owner", map[string]any{"record_path": filepath.Join(t.TempDir(), "r")}))
	if err != nil {
		t.Fatal(err)
	}
	batch := hostclient.Batch{Attempt: 1, Topic: "t", Schema: "raw", Records: []hostclient.Record{{Offset: 1, Payload: []byte("x")}}}
	wantStatus(t, b.Instance(inst.Handle()).Consume(batch), hostclient.StatusFatal, "unknown instance")
	if err := inst.Consume(batch); err != nil {
		t.Fatal(err)
	}
}

// TestSoakTwoLibrariesManyThreads loads two Go plugin libraries (two Go
// runtimes) into one host process and drives several instances of each from
// several host threads at once, with the Go collectors under pressure.
// Every batch must be recorded exactly once, with its content intact.
func TestSoakTwoLibrariesManyThreads(t *testing.T) {
	const (
		workers      = 8
		perLibrary   = 3
		batchesPer   = 2000
		recordsPer   = 20
		metricsEvery = 10
	)
	h := startHost(t, hostclient.Workers(workers), hostclient.Env("GOGC=5"))
	dir := t.TempDir()
	type target struct {
		inst *hostclient.Instance
		path string
	}
	var targets []target
	for _, which := range []string{"a", "b"} {
		lib, err := h.Load(testPlugin(t, which))
		if err != nil {
			t.Fatal(err)
		}
		for i := range perLibrary {
			path := filepath.Join(dir, fmt.Sprintf("%s%d.jsonl", which, i))
			inst, err := lib.Open(definition(t, fmt.Sprintf("soak_%s_%d", which, i), map[string]any{"record_path": path}))
			if err != nil {
				t.Fatal(err)
			}
			targets = append(targets, target{inst, path})
		}
	}
	start := time.Now()
	var calls atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(targets))
	for ti, tg := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range batchesPer {
				b := hostclient.Batch{Attempt: 1, Topic: fmt.Sprintf("soak.%d", ti), Schema: "json"}
				for r := range recordsPer {
					off := uint64(n*recordsPer + r)
					b.Records = append(b.Records, hostclient.Record{
						Offset: off, TimestampMs: int64(off), Key: []byte(fmt.Sprint(off)),
						Payload: []byte(fmt.Sprintf(`{"target":%d,"offset":%d,"pad":"%s"}`, ti, off, strings.Repeat("x", int(off%97)))),
					})
				}
				// Spread calls over every host thread, not one per instance.
				if err := tg.inst.ConsumeOn((ti+n)%workers, b); err != nil {
					errs <- fmt.Errorf("target %d batch %d: %w", ti, n, err)
					return
				}
				calls.Add(1)
				if n%metricsEvery == 0 {
					if _, err := tg.inst.Metrics(); err != nil {
						errs <- err
						return
					}
					calls.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	for ti, tg := range targets {
		m, err := tg.inst.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`"batches":%d`, batchesPer)
		if !strings.Contains(m, want) || !strings.Contains(m, fmt.Sprintf(`"records":%d`, batchesPer*recordsPer)) {
			t.Fatalf("target %d metrics %s", ti, m)
		}
		if err := tg.inst.Close(); err != nil {
			t.Fatal(err)
		}
		got := readRecorded(t, tg.path)
		if len(got) != batchesPer {
			t.Fatalf("target %d: %d batches recorded, want %d", ti, len(got), batchesPer)
		}
		next := uint64(0)
		for _, b := range got {
			for _, r := range b.Records {
				payload, _ := base64.StdEncoding.DecodeString(r.Payload)
				want := fmt.Sprintf(`{"target":%d,"offset":%d,"pad":"%s"}`, ti, next, strings.Repeat("x", int(next%97)))
				if r.Offset != next || string(payload) != want {
					t.Fatalf("target %d: record %d is %d %q", ti, next, r.Offset, payload)
				}
				next++
			}
		}
	}
	t.Logf("soak: %d calls (%d consumes of %d records) over %d instances in 2 libraries on %d host threads in %v (%.0f calls/s)",
		calls.Load(), len(targets)*batchesPer, recordsPer, len(targets), workers, elapsed.Round(time.Millisecond), float64(calls.Load())/elapsed.Seconds())
}

// ABI 1.1 through the real Go library: under a 1.1 host that accepts
// rejections the bad records come back rejected and only the others are
// written; under a 1.0 host (the batch without the 1.1 fields) the same
// batch fails FATAL as ABI 1.0 says and nothing is written.
func TestRejectedRecordsBothWays(t *testing.T) {
	h := startHost(t)
	lib, err := h.Load(testPlugin(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if major, minor := lib.ABI(); major != 1 || minor != 5 {
		t.Fatalf("plugin ABI %d.%d, want 1.5", major, minor)
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	inst, err := lib.Open(definition(t, "rejects", map[string]any{"record_path": rec, "reject_prefix": "BAD", "token": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	b := hostclient.Batch{Attempt: 1, Topic: "orders", Schema: "raw"}
	for i, p := range []string{"a", "BAD1", "b", "c", "BAD2"} {
		b.Records = append(b.Records, hostclient.Record{Offset: uint64(100 + i), Payload: []byte(p)})
	}

	_, err = inst.ConsumeResult(b, hosttest.Batch1_0())
	wantStatus(t, err, hostclient.StatusFatal, `offset 101 starts with "BAD"`)
	if got := readRecorded(t, rec); len(got) != 0 {
		t.Fatalf("1.0 host: %d batches written", len(got))
	}

	b.AcceptRejections = true
	rej, err := inst.ConsumeResult(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(rej) != 2 || rej[0].Index != 1 || rej[1].Index != 4 || rej[0].Reason != hostclient.RejectValue ||
		rej[1].Message != `test plugin: record at topic "orders" offset 104 starts with "BAD"` {
		t.Fatalf("rejections %+v", rej)
	}
	got := readRecorded(t, rec)
	if len(got) != 1 || len(got[0].Records) != 3 || got[0].Records[0].Offset != 100 || got[0].Records[1].Offset != 102 || got[0].Records[2].Offset != 103 {
		t.Fatalf("written %+v", got)
	}
	m, err := inst.Metrics()
	if err != nil || !strings.Contains(m, `"rejected":2`) || !strings.Contains(m, `"records":3`) {
		t.Fatalf("metrics %s %v", m, err)
	}
}

// ABI 1.3 through the real Go library: a 1.3 host's value_schema reaches the
// plugin (sdk.Batch.ValueSchema, an empty one as present); a 1.2 host's
// batch (struct_size ending at reject_ctx, the rest poisoned) gives it none
// and its rejections still work.
func TestValueSchemaBothWays(t *testing.T) {
	h := startHost(t)
	lib, err := h.Load(testPlugin(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	inst, err := lib.Open(definition(t, "vs", map[string]any{"record_path": rec, "reject_prefix": "BAD"}))
	if err != nil {
		t.Fatal(err)
	}
	const vs = `{"type":"struct","fields":[{"name":"a","type":"long","nullable":false,"metadata":{}}]}`
	b := hostclient.Batch{Attempt: 1, Topic: "orders", Schema: "raw", ValueSchema: []byte(vs),
		Records: []hostclient.Record{{Offset: 1, Payload: []byte(`{"a":1}`)}, {Offset: 2, Payload: []byte("BAD")}}}
	b.AcceptRejections = true
	if _, err := inst.ConsumeResult(b); err != nil {
		t.Fatal(err)
	}
	if _, err := inst.ConsumeResult(b, hosttest.Batch1_2()); err != nil {
		t.Fatal(err)
	}
	b.ValueSchema = []byte{}
	if _, err := inst.ConsumeResult(b); err != nil {
		t.Fatal(err)
	}
	got := readRecorded(t, rec)
	if len(got) != 3 || got[0].ValueSchema == nil || *got[0].ValueSchema != vs || got[1].ValueSchema != nil ||
		got[2].ValueSchema == nil || *got[2].ValueSchema != "" || len(got[1].Records) != 1 {
		t.Fatalf("recorded %+v", got)
	}
}

// ABI 1.4 through the real Go library: a plugin that does not declare
// redrive (the test plugin) refuses a redrive batch FATAL, naming it, and
// writes nothing; the same batch from a 1.3 host (struct_size ending at
// value_schema, the redrive fields poisoned) is an ordinary batch to it,
// which is why a host sends redrive batches only to a plugin that declares
// them.
func TestRedriveBothWays(t *testing.T) {
	h := startHost(t)
	lib, err := h.Load(testPlugin(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	inst, err := lib.Open(definition(t, "rd", map[string]any{"record_path": rec}))
	if err != nil {
		t.Fatal(err)
	}
	b := hostclient.Batch{Attempt: 1, Topic: "orders", Schema: "raw",
		Records: []hostclient.Record{{Offset: 1, Payload: []byte("a")}, {Offset: 2, Payload: []byte("b")}},
		Redrive: &hostclient.Redrive{Topic: "orders.dlq", Partition: 0, Offsets: []uint64{40, 41}}}
	_, err = inst.ConsumeResult(b)
	wantStatus(t, err, hostclient.StatusFatal, "does not declare redrive")
	if got := readRecorded(t, rec); len(got) != 0 {
		t.Fatalf("a refused redrive wrote %d batches", len(got))
	}
	if _, err := inst.ConsumeResult(b, hosttest.Batch1_3()); err != nil {
		t.Fatal(err)
	}
	if got := readRecorded(t, rec); len(got) != 1 || len(got[0].Records) != 2 {
		t.Fatalf("recorded %+v", got)
	}
}
