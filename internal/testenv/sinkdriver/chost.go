package sinkdriver

import (
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// CHost runs the library at the path library returns (for instance
// testenv.Library) in the C host (shared/hostclient), one host process per
// Runtime. opts configure each host.
func CHost(library func(testing.TB) string, opts ...hostclient.Option) Driver {
	return cHost{library: library, opts: opts}
}

type cHost struct {
	library func(testing.TB) string
	opts    []hostclient.Option
}

func (cHost) Name() string { return "c-host" }

func (d cHost) Start(t *testing.T, secrets ...string) Runtime {
	t.Helper()
	h := hosttest.StartTest(t, hosttest.BuildHost(t), d.opts...)
	lib, err := h.Load(d.library(t))
	if err != nil {
		t.Fatal(err)
	}
	// No plugin may log for an instance after its close returned.
	t.Cleanup(func() {
		var lines []string
		for _, l := range h.Logs() {
			if l.Late {
				t.Errorf("log line after close: %s", l)
			}
			lines = append(lines, l.Message)
		}
		checkSecrets(t, lines, secrets)
	})
	return &cHostRuntime{host: h, lib: lib}
}

type cHostRuntime struct {
	host *hostclient.Host
	lib  *hostclient.Lib
}

func (rt *cHostRuntime) Describe() (string, error) { return rt.lib.Describe() }

func (rt *cHostRuntime) Logs() []string {
	var out []string
	for _, l := range rt.host.Logs() {
		out = append(out, l.Level.String()+" "+l.Message)
	}
	return out
}

func (rt *cHostRuntime) Open(def Definition) (Instance, error) {
	inst, err := rt.lib.Open(string(def.JSON()))
	if err != nil {
		return nil, err
	}
	return cHostInstance{inst}, nil
}

type cHostInstance struct{ *hostclient.Instance }

func (i cHostInstance) Consume(b Batch) error    { return i.Instance.Consume(b) }
func (i cHostInstance) Metrics() (string, error) { return i.Instance.Metrics() }
func (i cHostInstance) Close() error             { return i.Instance.Close() }

func (i cHostInstance) Logs() []string {
	var out []string
	for _, l := range i.Instance.Logs() {
		out = append(out, l.Level.String()+" "+l.Message)
	}
	return out
}
