package sinkdriver

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// Batch is the batch a test sends: the host's description of a
// picomq_batch, which both drivers take as it is.
type Batch = hostclient.Batch

// Record is one record of a Batch.
type Record = hostclient.Record

// Driver starts runtimes of one plugin.
type Driver interface {
	// Name is "in-process" or "c-host": for messages and skips.
	Name() string
	// Start starts a runtime that lives until the end of the test. At the
	// end of the test it fails the test if a log line of any instance
	// carries one of secrets.
	Start(t *testing.T, secrets ...string) Runtime
}

// Runtime is one connector runtime (one process for the C host).
type Runtime interface {
	// Open opens an instance. A plugin's refusal is a
	// *hostclient.StatusError with Op "open".
	Open(def Definition) (Instance, error)
	// Describe returns the plugin's describe() document.
	Describe() (string, error)
	// Logs returns every log line of the runtime's instances so far as
	// "LEVEL message", those of opens that failed included.
	Logs() []string
}

// Definition is the sink definition the runtime passes to open.
type Definition struct {
	Key    string
	Name   string
	Config map[string]any // plugin_config
}

// JSON is the definition as the runtime sends it.
func (d Definition) JSON() []byte {
	b, err := json.Marshal(map[string]any{"key": d.Key, "name": d.Name, "version": 0, "plugin_config": d.Config})
	if err != nil {
		panic(fmt.Sprintf("sinkdriver: definition of %s: %v", d.Key, err))
	}
	return b
}

// Instance is one open sink instance.
type Instance interface {
	// Consume delivers b; a status other than OK is a *hostclient.StatusError
	// with Op "consume".
	Consume(b Batch) error
	// Metrics returns the instance's metrics JSON.
	Metrics() (string, error)
	// Logs returns the instance's log lines so far as "LEVEL message",
	// those of its open included.
	Logs() []string
	// Close closes the instance; it is invalid afterwards.
	Close() error
}

// WithEnv returns d with "NAME=value" entries added to the environment each
// of its runtimes opens instances with (for instance the
// PICOMQ_CONNECTORS_SINK_<KEY>_PLUGIN_CONFIG_<FIELD> overrides): the C
// host's process environment, or the one the in-process driver passes to
// sdk.OpenEnv. They win over the test process's own; the test process's
// environment is not changed, so parallel tests may differ.
func WithEnv(d Driver, kv ...string) Driver {
	switch d := d.(type) {
	case inProcess:
		d.env = append(append([]string(nil), d.env...), kv...)
		return d
	case cHost:
		d.opts = append(append([]hostclient.Option(nil), d.opts...), hostclient.Env(kv...))
		return d
	}
	panic(fmt.Sprintf("sinkdriver: WithEnv does not know driver %T", d))
}

// SinkMetrics returns the "sink" section of inst's metrics, the plugin's own
// counters.
func SinkMetrics(t testing.TB, inst Instance) map[string]float64 {
	t.Helper()
	raw, err := inst.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Sink map[string]float64 `json:"sink"`
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return m.Sink
}

// Metrics returns the numbers at the top level of inst's metrics, the
// SDK's counters (batches, records, rejected, skipped, ...).
func Metrics(t testing.TB, inst Instance) map[string]float64 {
	t.Helper()
	raw, err := inst.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	out := map[string]float64{}
	for k, v := range m {
		if f, ok := v.(float64); ok {
			out[k] = f
		}
	}
	return out
}

// checkSecrets fails t for each line that carries one of secrets.
func checkSecrets(t *testing.T, lines []string, secrets []string) {
	for _, l := range lines {
		for _, s := range secrets {
			if s != "" && strings.Contains(l, s) {
				t.Errorf("log line carries a secret: %s", l)
			}
		}
	}
}

// ConsumeConcurrently delivers batches to inst all at once, each from a
// goroutine of its own, as a host with several consume calls in flight for
// one instance does (batches of different topic-partitions, as
// picomq-connect's max_in_flight sends them), and returns each call's
// result in the order of batches. The C host runs at most as
// many at a time as it has worker threads.
func ConsumeConcurrently(inst Instance, batches []Batch) []error {
	errs := make([]error, len(batches))
	var wg sync.WaitGroup
	for i, b := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = inst.Consume(b)
		}()
	}
	wg.Wait()
	return errs
}
