package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
)

// probeConfig configures probeSink, a sink that does what the test asks.
type probeConfig struct {
	Mode     string `config:"mode" doc:"what Consume does"`
	Password string `config:"password,secret"`
	DSN      string `config:"dsn"`
}

type probeSink struct {
	cfg    probeConfig
	host   *sdk.Host
	mu     sync.Mutex
	seen   []string
	closed bool
	// entered is closed when a blocking Consume has started, so a test
	// closes the instance while it runs, not before it began.
	entered chan struct{}
}

var (
	probesMu sync.Mutex
	probes   = map[string]*probeSink{} // by sink key, so tests can look inside
)

func init() {
	sdk.Register(sdk.Plugin[probeConfig]{Name: "probe_sink", New: func() sdk.Sink[probeConfig] { return &probeSink{} }})
}

func (p *probeSink) Open(ctx context.Context, cfg *probeConfig, host *sdk.Host) error {
	p.cfg, p.host = *cfg, host
	p.entered = make(chan struct{})
	if cfg.DSN != "" {
		// A plugin that finds a password inside another value registers it.
		if _, pw, ok := strings.Cut(cfg.DSN, ":"); ok {
			host.Redact(pw)
		}
	}
	switch cfg.Mode {
	case "open_fails":
		return sdk.BadConfigf("cannot use password %s with dsn %s", cfg.Password, cfg.DSN)
	case "open_panics":
		panic("open exploded")
	case "log_after_close":
		// A goroutine the SDK does not know about outlives Close.
		go func() {
			<-ctx.Done()
			time.Sleep(10 * time.Millisecond)
			host.Logger.Info("goroutine still here after close")
		}()
	}
	probesMu.Lock()
	probes[host.Key] = p
	probesMu.Unlock()
	host.Logger.Info("opened", "password", cfg.Password)
	return nil
}

func (p *probeSink) Consume(ctx context.Context, b *sdk.Batch) error {
	switch p.cfg.Mode {
	case "retry":
		return fmt.Errorf("plain error mentioning %s", p.cfg.Password)
	case "fatal":
		return sdk.Fatalf("cannot fit offset %d", b.LastOffset())
	case "panic":
		var m map[string]int
		m["x"]++ // nil map write: a runtime panic
	case "wrapped_panic":
		var g sdk.Group
		g.Go(func() error { panic("upload exploded") })
		return sdk.Retry(fmt.Errorf("upload: %w", g.Wait()))
	case "block":
		close(p.entered)
		<-ctx.Done()
		return fmt.Errorf("gave up: %w", ctx.Err())
	case "block_fatal":
		// Slow to notice the cancellation, and marks it FATAL.
		close(p.entered)
		<-ctx.Done()
		time.Sleep(100 * time.Millisecond)
		p.mu.Lock()
		p.seen = append(p.seen, "returned")
		p.mu.Unlock()
		return sdk.Fatalf("gave up: %w", ctx.Err())
	case "reject", "reject_then_retry":
		// Rejects payloads starting with "bad"; without a host that
		// accepts rejections, fails the batch as ABI 1.0 says.
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, r := range b.Records {
			if strings.HasPrefix(string(r.Payload), `"bad`) {
				err := fmt.Errorf("offset %d is bad (password %s)", r.Offset, p.cfg.Password)
				if !b.Reject(i, sdk.RejectValue, err) {
					return sdk.Fatal(err)
				}
				continue
			}
			p.seen = append(p.seen, string(r.Payload))
		}
		if p.cfg.Mode == "reject_then_retry" {
			return sdk.Retryf("store unreachable")
		}
		return nil
	case "skip_first", "skip_then_retry":
		// The destination already had the first record (a replay).
		b.Skipped(1)
		if p.cfg.Mode == "skip_then_retry" {
			return sdk.Retryf("store unreachable")
		}
		return nil
	case "background_panic":
		done := make(chan struct{})
		p.host.Go(func(context.Context) { defer close(done); panic("bg boom") })
		<-done
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range b.Records {
		p.seen = append(p.seen, string(r.Payload))
	}
	return nil
}

func (p *probeSink) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	if p.cfg.Mode == "close_fails" {
		return sdk.Retryf("flush failed for %s", p.cfg.Password)
	}
	return nil
}

func (p *probeSink) Metrics() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return map[string]any{"seen": len(p.seen), "dsn": p.cfg.DSN}
}

func definition(key string, cfg map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"key": key, "name": "n", "version": 3, "plugin_config": cfg})
	return b
}

func open(t *testing.T, key string, cfg map[string]any, logs *sdktest.Logs) uint64 {
	t.Helper()
	var fn sdk.LogFunc
	if logs != nil {
		fn = logs.Log
	}
	h, err := sdk.Open(definition(key, cfg), fn)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = sdk.Close(h) })
	return h
}

func jsonBatch(payloads ...string) *sdk.Batch {
	b := &sdk.Batch{Topic: "orders.eu", Schema: "json", Attempt: 1}
	for i, p := range payloads {
		b.Records = append(b.Records, sdk.Record{Offset: uint64(10 + i), Timestamp: 1000, Payload: []byte(p)})
	}
	return b
}

func TestOpenConsumeMetricsClose(t *testing.T) {
	logs := &sdktest.Logs{}
	h := open(t, "happy", map[string]any{"password": "pa55word"}, logs)
	if err := sdk.Consume(h, jsonBatch(`{"a":1}`, `[2]`)); err != nil {
		t.Fatal(err)
	}
	if err := sdk.Consume(h, jsonBatch(`"x"`)); err != nil {
		t.Fatal(err)
	}
	raw, err := sdk.Metrics(h)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m["batches"] != 2.0 || m["records"] != 3.0 || m["bytes"] != 13.0 || m["failures"] != 0.0 || m["last_error_time"] != nil {
		t.Fatalf("metrics %s", raw)
	}
	if sink := m["sink"].(map[string]any); sink["seen"] != 3.0 {
		t.Fatalf("sink metrics %s", raw)
	}
	if err := sdk.Close(h); err != nil {
		t.Fatal(err)
	}
	if !probes["happy"].closed {
		t.Fatal("sink Close not called")
	}
	if got := logs.String(); !strings.Contains(got, "INFO opened password=[REDACTED]") || strings.Contains(got, "pa55word") {
		t.Fatalf("logs %q", got)
	}
}

func TestCallsOnClosedOrUnknownHandlesFail(t *testing.T) {
	h := open(t, "closed", nil, nil)
	if err := sdk.Close(h); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"consume": sdk.Consume(h, jsonBatch(`1`)),
		"close":   sdk.Close(h),
		"unknown": sdk.Consume(12345, jsonBatch(`1`)),
	} {
		if sdk.StatusOf(err) != sdk.StatusFatal || !strings.Contains(err.Error(), "unknown instance") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := sdk.Metrics(h); sdk.StatusOf(err) != sdk.StatusFatal {
		t.Errorf("metrics: %v", err)
	}
}

func TestErrorsMapToStatusesAndAreRedacted(t *testing.T) {
	cases := []struct {
		mode   string
		status sdk.Status
		want   string
	}{
		{"retry", sdk.StatusRetry, "plain error mentioning [REDACTED]"},
		{"fatal", sdk.StatusFatal, "cannot fit offset 10"},
		{"panic", sdk.StatusFatal, "panic: assignment to entry in nil map"},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			h := open(t, "err_"+tc.mode, map[string]any{"mode": tc.mode, "password": "topsecret"}, nil)
			err := sdk.Consume(h, jsonBatch(`{}`))
			if sdk.StatusOf(err) != tc.status || err.Error() != tc.want {
				t.Fatalf("got %v (%v), want %v %q", err, sdk.StatusOf(err), tc.status, tc.want)
			}
			raw, _ := sdk.Metrics(h)
			if !strings.Contains(string(raw), `"failures":1`) || !strings.Contains(string(raw), `"last_error":"`+tc.want) || strings.Contains(string(raw), "topsecret") {
				t.Fatalf("metrics %s", raw)
			}
		})
	}
}

func TestOpenFailures(t *testing.T) {
	_, err := sdk.Open(definition("of", map[string]any{"mode": "open_fails", "password": "hunter22", "dsn": "user:dsnpass"}), nil)
	if sdk.StatusOf(err) != sdk.StatusBadConfig || err.Error() != "cannot use password [REDACTED] with dsn user:[REDACTED]" {
		t.Fatalf("%v", err)
	}
	_, err = sdk.Open(definition("op", map[string]any{"mode": "open_panics"}), nil)
	if sdk.StatusOf(err) != sdk.StatusFatal || !strings.Contains(err.Error(), "open exploded") {
		t.Fatalf("%v", err)
	}
	_, err = sdk.Open([]byte(`{"key":`), nil)
	if sdk.StatusOf(err) != sdk.StatusBadConfig {
		t.Fatalf("%v", err)
	}
	_, err = sdk.Open([]byte(`{"name":"no key"}`), nil)
	if sdk.StatusOf(err) != sdk.StatusBadConfig || !strings.Contains(err.Error(), `"key" is required`) {
		t.Fatalf("%v", err)
	}
	_, err = sdk.Open(definition("wt", map[string]any{"mode": 5}), nil)
	if sdk.StatusOf(err) != sdk.StatusBadConfig || !strings.Contains(err.Error(), `"mode"`) {
		t.Fatalf("%v", err)
	}
}

func TestPayloadsAreCheckedBySchema(t *testing.T) {
	h := open(t, "payloads", nil, nil)
	err := sdk.Consume(h, jsonBatch(`{"ok":1}`, `{not json`))
	if sdk.StatusOf(err) != sdk.StatusFatal || err.Error() != `topic "orders.eu" offset 11: payload is not a JSON value (schema json)` {
		t.Fatalf("%v", err)
	}
	text := &sdk.Batch{Topic: "t", Schema: "text", Records: []sdk.Record{{Offset: 4, Payload: []byte{0xff, 'a'}}}}
	if err := sdk.Consume(h, text); sdk.StatusOf(err) != sdk.StatusFatal || !strings.Contains(err.Error(), "offset 4: payload is not valid UTF-8") {
		t.Fatalf("%v", err)
	}
	raw := &sdk.Batch{Topic: "t", Schema: "raw", Records: []sdk.Record{{Offset: 4, Payload: []byte{0xff}}}}
	if err := sdk.Consume(h, raw); err != nil {
		t.Fatal(err)
	}
	if got := probes["payloads"].seen; len(got) != 1 {
		t.Fatalf("sink saw %q; a failed batch must not reach it", got)
	}
}

func TestBackgroundPanicPoisonsInstance(t *testing.T) {
	logs := &sdktest.Logs{}
	h := open(t, "bg", map[string]any{"mode": "background_panic"}, logs)
	if err := sdk.Consume(h, jsonBatch(`1`)); err != nil {
		t.Fatal(err)
	}
	// The goroutine's own defers (the probe's close) run before the SDK's
	// recover, so the first Consume can return before the panic was
	// handled: wait for the line, which the SDK logs after poisoning.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "ERROR background goroutine panicked") {
		if time.Now().After(deadline) {
			t.Fatalf("logs %q", logs.String())
		}
		time.Sleep(time.Millisecond)
	}
	err := sdk.Consume(h, jsonBatch(`1`))
	if sdk.StatusOf(err) != sdk.StatusFatal || !strings.Contains(err.Error(), "bg boom") {
		t.Fatalf("%v", err)
	}
}

func TestNothingIsLoggedAfterClose(t *testing.T) {
	logs := &sdktest.Logs{}
	h, err := sdk.Open(definition("lac", map[string]any{"mode": "log_after_close"}), logs.Log)
	if err != nil {
		t.Fatal(err)
	}
	if err := sdk.Close(h); err != nil {
		t.Fatal(err)
	}
	before := logs.String()
	time.Sleep(30 * time.Millisecond)
	if after := logs.String(); after != before || strings.Contains(after, "after close") {
		t.Fatalf("logged after close: %q", after)
	}
}

func TestCloseErrorStillInvalidatesHandle(t *testing.T) {
	h, err := sdk.Open(definition("cf", map[string]any{"mode": "close_fails", "password": "closepw1"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = sdk.Close(h)
	if sdk.StatusOf(err) != sdk.StatusRetry || err.Error() != "flush failed for [REDACTED]" {
		t.Fatalf("%v", err)
	}
	if err := sdk.Consume(h, jsonBatch(`1`)); !strings.Contains(fmt.Sprint(err), "unknown instance") {
		t.Fatalf("%v", err)
	}
}

func TestManyInstancesConcurrently(t *testing.T) {
	const instances, batches = 8, 200
	var wg sync.WaitGroup
	errs := make(chan error, instances)
	for i := range instances {
		key := fmt.Sprintf("conc%d", i)
		h := open(t, key, nil, nil)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range batches {
				if err := sdk.Consume(h, jsonBatch(fmt.Sprint(j))); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() { // metrics never waits for or races with consume
			defer wg.Done()
			for range batches {
				if _, err := sdk.Metrics(h); err != nil {
					errs <- err
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
	for i := range instances {
		if n := len(probes[fmt.Sprintf("conc%d", i)].seen); n != batches {
			t.Fatalf("instance %d saw %d batches", i, n)
		}
	}
}

func TestDescribe(t *testing.T) {
	raw, err := sdk.Describe()
	if err != nil {
		t.Fatal(err)
	}
	var d sdk.Description
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if d.Name != "probe_sink" || d.ABIVersion != "1.5" || !strings.HasPrefix(d.GoVersion, "go") || d.Version == "" || len(d.Config) != 3 || !d.Config[1].Secret {
		t.Fatalf("%s", raw)
	}
}

func TestStatusOf(t *testing.T) {
	base := errors.New("x")
	cases := map[string]struct {
		err  error
		want sdk.Status
	}{
		"nil":            {nil, sdk.StatusOK},
		"plain":          {base, sdk.StatusRetry},
		"retry":          {sdk.Retry(base), sdk.StatusRetry},
		"fatal":          {sdk.Fatal(base), sdk.StatusFatal},
		"bad config":     {sdk.BadConfig(base), sdk.StatusBadConfig},
		"wrapped fatal":  {fmt.Errorf("ctx: %w", sdk.Fatal(base)), sdk.StatusFatal},
		"outermost wins": {sdk.Retry(sdk.Fatal(base)), sdk.StatusRetry},
		"canceled":       {context.Canceled, sdk.StatusRetry},
	}
	for name, tc := range cases {
		if got := sdk.StatusOf(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
	if sdk.Fatal(nil) != nil {
		t.Error("Fatal(nil) is not nil")
	}
}

func TestPanicsAreFatalEvenWhenWrappedAndPoisonTheInstance(t *testing.T) {
	h := open(t, "wrapped_panic", map[string]any{"mode": "wrapped_panic"}, nil)
	err := sdk.Consume(h, jsonBatch(`1`))
	if sdk.StatusOf(err) != sdk.StatusFatal || !strings.Contains(err.Error(), "upload exploded") {
		t.Fatalf("%v (%v)", err, sdk.StatusOf(err))
	}
	err = sdk.Consume(h, jsonBatch(`1`))
	if sdk.StatusOf(err) != sdk.StatusFatal || !strings.Contains(err.Error(), "instance is unusable") {
		t.Fatalf("second consume: %v", err)
	}
}

func TestCloseCancelsAStuckConsume(t *testing.T) {
	h, err := sdk.Open(definition("stuck", map[string]any{"mode": "block"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- sdk.Consume(h, jsonBatch(`1`)) }()
	<-probes["stuck"].entered
	closed := make(chan error)
	go func() { closed <- sdk.Close(h) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "context canceled") {
			t.Fatalf("stuck consume returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("close did not cancel the stuck consume")
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

func TestCloseWaitsForTheCancelledConsumeWhichReturnsRetry(t *testing.T) {
	h := open(t, "stuck_fatal", map[string]any{"mode": "block_fatal"}, nil)
	p := probes["stuck_fatal"]
	done := make(chan error)
	go func() { done <- sdk.Consume(h, jsonBatch(`1`)) }()
	<-p.entered
	if err := sdk.Close(h); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	seen, closed := p.seen, p.closed
	p.mu.Unlock()
	if len(seen) != 1 || !closed {
		t.Fatalf("close returned before the cancelled consume did: seen %q, closed %v", seen, closed)
	}
	err := <-done
	if sdk.StatusOf(err) != sdk.StatusRetry || !strings.Contains(err.Error(), "consume cancelled by close: gave up: context canceled") {
		t.Fatalf("cancelled consume: %v (%v)", err, sdk.StatusOf(err))
	}
}

func TestOpenEnvReadsTheGivenEnvironment(t *testing.T) {
	t.Setenv("PICOMQ_CONNECTORS_SINK_ENVD_PLUGIN_CONFIG_PASSWORD", "from-os-environ")
	var logs sdktest.Logs
	h, err := sdk.OpenEnv(definition("envd", map[string]any{"password": "from-json"}), logs.Log, []string{
		"PICOMQ_CONNECTORS_SINK_ENVD_PLUGIN_CONFIG_DSN=user:given-pw",
		sdk.LogLevelEnv + "=warn",
	})
	if err != nil {
		t.Fatal(err)
	}
	p := probes["envd"]
	if p.cfg.Password != "from-json" || p.cfg.DSN != "user:given-pw" {
		t.Fatalf("config %+v: not the given environment", p.cfg)
	}
	if err := sdk.Close(h); err != nil {
		t.Fatal(err)
	}
	if all := logs.String(); strings.Contains(all, "INFO") {
		t.Fatalf("%s=warn from the given environment ignored:\n%s", sdk.LogLevelEnv, all)
	}
	_, err = sdk.OpenEnv(definition("envd", nil), nil, []string{"PICOMQ_CONNECTORS_SINK_ENVD_PLUGIN_CONFIG_PASWORD=x"})
	if sdk.StatusOf(err) != sdk.StatusBadConfig || !strings.Contains(err.Error(), `did you mean PICOMQ_CONNECTORS_SINK_ENVD_PLUGIN_CONFIG_PASSWORD (key "password")?`) {
		t.Fatalf("unknown override: %v", err)
	}
}

func TestRejections(t *testing.T) {
	h := open(t, "reject", map[string]any{"mode": "reject", "password": "topsecret"}, nil)
	// A 1.0 host: no rejections, the batch fails FATAL.
	err := sdk.Consume(h, jsonBatch(`{}`, `"bad"`, `{}`))
	if sdk.StatusOf(err) != sdk.StatusFatal || !strings.Contains(err.Error(), "offset 11 is bad (password [REDACTED])") {
		t.Fatalf("1.0 host: %v", err)
	}
	b := jsonBatch(`{}`, `"bad"`, `{}`, `"bad2"`)
	b.AcceptRejections()
	if err := sdk.Consume(h, b); err != nil {
		t.Fatal(err)
	}
	rej := b.Rejections()
	if len(rej) != 2 || rej[0].Index != 1 || rej[1].Index != 3 || rej[0].Reason != sdk.RejectValue ||
		rej[0].Err.Error() != "offset 11 is bad (password [REDACTED])" {
		t.Fatalf("rejections %+v", rej)
	}
	raw, _ := sdk.Metrics(h)
	if !strings.Contains(string(raw), `"rejected":2`) || !strings.Contains(string(raw), `"records":2`) {
		t.Fatalf("metrics %s", raw)
	}

	// A failed consume forgets its rejections: the batch did not happen.
	h2 := open(t, "reject_retry", map[string]any{"mode": "reject_then_retry"}, nil)
	b = jsonBatch(`"bad"`, `{}`)
	b.AcceptRejections()
	if err := sdk.Consume(h2, b); sdk.StatusOf(err) != sdk.StatusRetry {
		t.Fatalf("got %v, want RETRY", err)
	}
	if rej := b.Rejections(); rej != nil {
		t.Fatalf("rejections after RETRY: %+v", rej)
	}
}

// Records a sink reports as skipped (already written) count as skipped,
// not records; a failed consume counts neither.
func TestSkipped(t *testing.T) {
	h := open(t, "skip", map[string]any{"mode": "skip_first"}, nil)
	if err := sdk.Consume(h, jsonBatch(`{}`, `{}`, `{}`)); err != nil {
		t.Fatal(err)
	}
	var m struct{ Batches, Records, Skipped int }
	raw, _ := sdk.Metrics(h)
	if err := json.Unmarshal(raw, &m); err != nil || m.Batches != 1 || m.Records != 2 || m.Skipped != 1 {
		t.Fatalf("metrics %s", raw)
	}
	h2 := open(t, "skip_retry", map[string]any{"mode": "skip_then_retry"}, nil)
	if err := sdk.Consume(h2, jsonBatch(`{}`, `{}`)); sdk.StatusOf(err) != sdk.StatusRetry {
		t.Fatalf("got %v, want RETRY", err)
	}
	raw, _ = sdk.Metrics(h2)
	if err := json.Unmarshal(raw, &m); err != nil || m.Batches != 0 || m.Records != 0 || m.Skipped != 0 {
		t.Fatalf("metrics after RETRY %s", raw)
	}
}

// describe() declares the SDK's metrics (ABI 1.2).
func TestDescribeDeclaresMetrics(t *testing.T) {
	raw, err := sdk.Describe()
	if err != nil {
		t.Fatal(err)
	}
	var d sdk.Description
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Metrics) != len(sdk.CommonMetrics) {
		t.Fatalf("metrics %+v", d.Metrics)
	}
	h := open(t, "declared", nil, nil)
	raw, _ = sdk.Metrics(h)
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatal(err)
	}
	delete(fields, "sink") // the probe's own, which it does not declare
	sdktest.CheckDeclared(t, fields, d.Metrics)
}

func TestMetricCheck(t *testing.T) {
	ok := sdk.Metric{Field: "sink.x_ms", Name: "sink_x_seconds_total", Type: sdk.Counter, Unit: sdk.UnitSeconds, Scale: 0.001, Help: "h"}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	// 13 ms is the double nearest 0.013 s, as 13/1000 gives it.
	if got := ok.Apply(13); got != 13.0/1000 {
		t.Errorf("Apply(13) = %v, want %v", got, 13.0/1000)
	}
	if got := (sdk.Metric{}).Apply(7); got != 7 {
		t.Errorf("no scale: Apply(7) = %v", got)
	}
	for _, c := range []struct {
		name string
		edit func(m *sdk.Metric)
		want string
	}{
		{"counter without _total", func(m *sdk.Metric) { m.Name = "sink_x_seconds" }, "does not end in _total"},
		{"gauge with _total", func(m *sdk.Metric) { m.Type = sdk.Gauge }, "a counter's suffix"},
		{"unit without suffix", func(m *sdk.Metric) { m.Name = "sink_x_total" }, "without the name suffix _seconds"},
		{"suffix without unit", func(m *sdk.Metric) { m.Unit = sdk.UnitNone }, "without unit"},
		{"bytes suffix, seconds unit", func(m *sdk.Metric) { m.Name = "sink_x_bytes_total" }, "_seconds"},
		{"unknown unit", func(m *sdk.Metric) { m.Unit = "ms" }, "is not seconds, bytes or none"},
		{"unknown type", func(m *sdk.Metric) { m.Type = "histogram" }, "is not counter or gauge"},
		{"bad name", func(m *sdk.Metric) { m.Name = "Sink-X_total" }, "is not lowercase"},
		{"bad field", func(m *sdk.Metric) { m.Field = "sink..x" }, "is not a path"},
		{"negative scale", func(m *sdk.Metric) { m.Scale = -1 }, "not a positive number"},
		{"no help", func(m *sdk.Metric) { m.Help = "" }, "no help"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := ok
			c.edit(&m)
			if err := m.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Check(%+v) = %v, want %q", m, err, c.want)
			}
		})
	}
}
