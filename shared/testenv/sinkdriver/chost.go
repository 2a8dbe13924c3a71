package sinkdriver

import (
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostdriver"
)

// CHost runs the library at the path library returns (for instance
// testenv.Library) in shared/hostdriver's C host, one host process per
// Runtime. opts configure each host.
func CHost(library func(testing.TB) string, opts ...hostdriver.Option) Driver {
	return cHost{library: library, opts: opts}
}

type cHost struct {
	library func(testing.TB) string
	opts    []hostdriver.Option
}

func (cHost) Name() string { return "c-host" }

func (d cHost) Start(t *testing.T, secrets ...string) Runtime {
	t.Helper()
	h := hostdriver.StartTest(t, hostdriver.BuildHost(t), d.opts...)
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
	host *hostdriver.Host
	lib  *hostdriver.Lib
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

type cHostInstance struct{ *hostdriver.Instance }

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
