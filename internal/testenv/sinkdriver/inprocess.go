package sinkdriver

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
)

// InProcess runs the plugin the test binary registered through the SDK's Go
// API, the calls the C shim makes.
func InProcess() Driver { return inProcess{} }

type inProcess struct {
	env []string // added before os.Environ, so they win (WithEnv)
}

func (inProcess) Name() string { return "in-process" }

func (d inProcess) Start(t *testing.T, secrets ...string) Runtime {
	rt := &inProcessRuntime{env: d.env}
	t.Cleanup(func() {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		for _, l := range rt.logs {
			checkSecrets(t, l.Lines(), secrets)
		}
	})
	return rt
}

type inProcessRuntime struct {
	env  []string
	mu   sync.Mutex
	logs []*sdktest.Logs
}

func (rt *inProcessRuntime) Open(def Definition) (Instance, error) {
	logs := &sdktest.Logs{}
	rt.mu.Lock()
	rt.logs = append(rt.logs, logs)
	rt.mu.Unlock()
	// The first entry of a name wins (sdk.EnvFrom), as with getenv(3).
	h, err := sdk.OpenEnv(def.JSON(), logs.Log, append(append([]string(nil), rt.env...), os.Environ()...))
	if err != nil {
		return nil, status("open", err)
	}
	return &inProcessInstance{h: h, logs: logs}, nil
}

func (rt *inProcessRuntime) Describe() (string, error) {
	raw, err := sdk.Describe()
	return string(raw), status("describe", err)
}

func (rt *inProcessRuntime) Logs() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var out []string
	for _, l := range rt.logs {
		out = append(out, l.Lines()...)
	}
	return out
}

type inProcessInstance struct {
	h    uint64
	logs *sdktest.Logs
}

// Consume fails, as the C host's does, when the plugin rejected records of
// a batch that accepts rejections: a test must not pass while records were
// quietly set aside.
func (i *inProcessInstance) Consume(b Batch) error {
	sb := toSDK(b)
	if err := sdk.Consume(i.h, sb); err != nil {
		return status("consume", err)
	}
	if rej := sb.Rejections(); len(rej) > 0 {
		return fmt.Errorf("sinkdriver: consume: the plugin rejected %d record(s)", len(rej))
	}
	return nil
}

func (i *inProcessInstance) Metrics() (string, error) {
	raw, err := sdk.Metrics(i.h)
	return string(raw), status("metrics", err)
}

func (i *inProcessInstance) Logs() []string { return i.logs.Lines() }

func (i *inProcessInstance) Close() error { return status("close", sdk.Close(i.h)) }

// status gives an SDK error the shape the C host gives it.
func status(op string, err error) error {
	if err == nil {
		return nil
	}
	return &hostclient.StatusError{Op: op, Code: hostclient.Status(sdk.StatusOf(err)), Message: err.Error()}
}

func toSDK(b Batch) *sdk.Batch {
	out := &sdk.Batch{Topic: b.Topic, Partition: b.Partition, Schema: b.Schema, Attempt: b.Attempt, ValueSchema: b.ValueSchema,
		Records: make([]sdk.Record, len(b.Records))}
	for i, r := range b.Records {
		rec := sdk.Record{Offset: r.Offset, Timestamp: r.TimestampMs, Key: r.Key, Payload: r.Payload}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, sdk.Header{Key: []byte(h.Key), Value: h.Value})
		}
		out.Records[i] = rec
	}
	if b.AcceptRejections {
		out.AcceptRejections()
	}
	if r := b.Redrive; r != nil {
		out.Redrive = &sdk.Redrive{Topic: r.Topic, Partition: r.Partition, Offsets: r.Offsets}
	}
	return out
}
