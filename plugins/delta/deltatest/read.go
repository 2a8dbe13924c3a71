package deltatest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
)

// Py runs a delta-rs script after Prelude; the first argument is the table
// URI, storage options come from PICOMQ_S3_* in the script's environment
// when set, or from PICOMQ_DELTA_STORAGE_OPTIONS (JSON) for another store.
func Py(t *testing.T, script string, args ...string) string {
	t.Helper()
	return py(t, nil, script, args...)
}

// py is Py with env added to the script's environment (Store.Py).
func py(t *testing.T, env []string, script string, args ...string) string {
	t.Helper()
	return pyenv.RunEnv(t, env, Prelude+script, args...)
}

// Prelude gives scripts `uri`, `opts` (storage options) and `dump`.
const Prelude = `
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
if os.environ.get("PICOMQ_DELTA_STORAGE_OPTIONS"):  # another store (Azurite, fake-gcs), as delta-rs storage_options JSON
    opts = json.loads(os.environ["PICOMQ_DELTA_STORAGE_OPTIONS"])
def default(o):
    if isinstance(o, (datetime.datetime, datetime.date)): return o.isoformat()
    if isinstance(o, decimal.Decimal): return str(o)
    if isinstance(o, bytes): return o.hex()
    raise TypeError(type(o))
def dump(x): print(json.dumps(x, default=default, sort_keys=True))
`

// ReadRows returns the table's rows sorted by the given column, as delta-rs
// reads them.
func ReadRows(t *testing.T, uri, sortBy string) []map[string]any {
	t.Helper()
	return readRows(t, nil, uri, sortBy)
}

func readRows(t *testing.T, env []string, uri, sortBy string) []map[string]any {
	t.Helper()
	out := py(t, env, `
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

// CreateEvents is a script creating an empty events table (id long, body
// string) at uri.
const CreateEvents = `
schema = pa.schema([("id", pa.int64()), ("body", pa.string())])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), storage_options=opts)
`

// IDs returns the id column of an events table, sorted.
func IDs(t *testing.T, uri string) []int {
	t.Helper()
	return ids(t, nil, uri)
}

func ids(t *testing.T, env []string, uri string) []int {
	t.Helper()
	var out []int
	for _, r := range readRows(t, env, uri, "id") {
		out = append(out, int(r["id"].(float64)))
	}
	return out
}

// WantIDs checks the events table holds exactly the ids of want ("0,1,2").
func WantIDs(t *testing.T, uri string, want string) {
	t.Helper()
	wantIDs(t, nil, uri, want)
}

func wantIDs(t *testing.T, env []string, uri string, want string) {
	t.Helper()
	got := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(ids(t, env, uri))), ","), "[]")
	if got != want {
		t.Fatalf("ids %s, want %s", got, want)
	}
}

// History returns the table's versions, newest first, with their
// operation, as delta-rs lists them.
func History(t *testing.T, uri string) []map[string]any {
	t.Helper()
	return history(t, nil, uri)
}

func history(t *testing.T, env []string, uri string) []map[string]any {
	t.Helper()
	out := py(t, env, `
dt = DeltaTable(uri, storage_options=opts)
dump([{"version": h.get("version"), "operation": h.get("operation")} for h in dt.history()])
`, uri)
	var h []map[string]any
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return h
}

// Span is the ids from through to, as WantIDs takes them ("3,4,5").
func Span(from, to int) string {
	var s []string
	for i := from; i <= to; i++ {
		s = append(s, fmt.Sprint(i))
	}
	return strings.Join(s, ",")
}

// TableFacts is what delta-rs says of a table's protocol, metadata and
// history.
type TableFacts struct {
	Reader, Writer int
	ReaderFeatures []string `json:"reader_features"`
	WriterFeatures []string `json:"writer_features"`
	Partitions     []string
	Columns        []string // "name type"
	Versions       []int    // oldest first
	Operations     []string // of Versions
}

// Facts returns what delta-rs says of the table at uri.
func Facts(t *testing.T, uri string) TableFacts {
	t.Helper()
	return facts(t, nil, uri)
}

func facts(t *testing.T, env []string, uri string) TableFacts {
	t.Helper()
	out := py(t, env, `
dt = DeltaTable(uri, storage_options=opts)
p, m = dt.protocol(), dt.metadata()
h = sorted(dt.history(), key=lambda c: c["version"])
dump({"Reader": p.min_reader_version, "Writer": p.min_writer_version,
      "reader_features": p.reader_features, "writer_features": p.writer_features,
      "Partitions": m.partition_columns,
      "Columns": [f.name + " " + str(f.type.type if hasattr(f.type, "type") else f.type) for f in dt.schema().fields],
      "Versions": [c["version"] for c in h], "Operations": [c.get("operation") for c in h]})
`, uri)
	var f TableFacts
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return f
}
