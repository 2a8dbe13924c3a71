package delta_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostdriver"
	"github.com/picomq/heavy-sinks/shared/testenv"
	"github.com/picomq/heavy-sinks/shared/testenv/pyenv"
)

// harness is one C host with the Delta sink library loaded.
type harness struct {
	t    *testing.T
	host *hostdriver.Host
	lib  *hostdriver.Lib
}

func newHarness(t *testing.T, opts ...hostdriver.Option) *harness {
	t.Helper()
	h := hostdriver.StartTest(t, hostdriver.BuildHost(t), opts...)
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

func (h *harness) open(key string, cfg map[string]any) *hostdriver.Instance {
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

func wantStatus(t *testing.T, err error, code hostdriver.Status, contains ...string) {
	t.Helper()
	var se *hostdriver.StatusError
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
func jsonBatch(topic string, first uint64, payloads ...string) hostdriver.Batch {
	b := hostdriver.Batch{Attempt: 1, Topic: topic, Schema: "json"}
	for i, p := range payloads {
		b.Records = append(b.Records, hostdriver.Record{Offset: first + uint64(i), TimestampMs: 1767225600000 + int64(i), Payload: []byte(p)})
	}
	return b
}

func consume(t *testing.T, inst *hostdriver.Instance, b hostdriver.Batch) {
	t.Helper()
	if err := inst.Consume(b); err != nil {
		t.Fatalf("consume %s offsets %d..: %v", b.Topic, b.Records[0].Offset, err)
	}
}

// py runs a delta-rs script; the first argument is the table URI, storage
// options come from PICOMQ_S3_* in the script's environment when set.
func py(t *testing.T, script string, args ...string) string {
	t.Helper()
	return pyenv.Run(t, pyPrelude+script, args...)
}

// pyPrelude gives scripts `uri`, `opts` (storage options) and `dump`.
const pyPrelude = `
import json, os, sys, datetime, decimal
import pyarrow as pa
import deltalake
from deltalake import DeltaTable, write_deltalake
uri = sys.argv[1] if len(sys.argv) > 1 else None
opts = None
if os.environ.get("PICOMQ_S3_ENDPOINT"):
    opts = {"AWS_ENDPOINT_URL": os.environ["PICOMQ_S3_ENDPOINT"], "AWS_ACCESS_KEY_ID": os.environ["PICOMQ_S3_ACCESS_KEY"],
            "AWS_SECRET_ACCESS_KEY": os.environ["PICOMQ_S3_SECRET_KEY"], "AWS_REGION": os.environ["PICOMQ_S3_REGION"],
            "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
def default(o):
    if isinstance(o, (datetime.datetime, datetime.date)): return o.isoformat()
    if isinstance(o, decimal.Decimal): return str(o)
    if isinstance(o, bytes): return o.hex()
    raise TypeError(type(o))
def dump(x): print(json.dumps(x, default=default, sort_keys=True))
`

// readRows returns the table's rows sorted by the given column, as delta-rs
// reads them.
func readRows(t *testing.T, uri, sortBy string) []map[string]any {
	t.Helper()
	out := py(t, `
dt = DeltaTable(uri, storage_options=opts)
rows = dt.to_pyarrow_table().to_pylist()
rows.sort(key=lambda r: (r[sys.argv[2]] is None, r[sys.argv[2]]))
dump(rows)
`, uri, sortBy)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return rows
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

func fileURI(dir string) string { return "file://" + dir }

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// writeConcurrently has `writers` sink instances (distinct keys, so distinct
// application transactions) append `batches` batches of `per` records each
// to the table of cfg at the same time, from several host threads, and
// returns the ids the table must then hold, in order.
func writeConcurrently(t *testing.T, cfg map[string]any, writers, batches, per int) string {
	t.Helper()
	h := newHarness(t, hostdriver.Workers(4))
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
