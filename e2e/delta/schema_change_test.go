package delta_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// Another writer adds a column while the sink runs: the next batch is
// rebuilt against the new schema (no failure) and the new column is filled.
func TestColumnAddedByAnotherWriter(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "events"))
	py(t, createEvents, uri)
	inst := newHarness(t).open("ev", map[string]any{"table_uri": uri})
	consume(t, inst, jsonBatch("ev", 0, `{"id":1,"body":"before","extra":"dropped: no such column yet"}`))
	py(t, `
from deltalake.schema import Field, PrimitiveType
DeltaTable(uri).alter.add_columns([Field("extra", PrimitiveType("string"), nullable=True)])
`, uri)
	consume(t, inst, jsonBatch("ev", 1, `{"id":2,"body":"after","extra":"kept"}`))
	rows := readRows(t, uri, "id")
	if len(rows) != 2 || rows[0]["extra"] != nil || rows[1]["extra"] != "kept" {
		t.Fatalf("rows %v", rows)
	}
	var rebuilt bool
	for _, l := range inst.Logs() {
		if strings.Contains(l.Message, "rebuilding it against the new snapshot") {
			rebuilt = true
		}
	}
	if !rebuilt {
		t.Fatal("no rebuild logged: the schema change was not noticed through the commit conflict")
	}
}

// A feature this writer must refuse appears while it runs: the batch fails
// naming it, and nothing is written.
func TestProtocolGainsUnsupportedFeature(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "events"))
	py(t, createEvents, uri)
	inst := newHarness(t).open("ev", map[string]any{"table_uri": uri})
	consume(t, inst, events("ev", 0, 1))
	py(t, `DeltaTable(uri).alter.add_constraint({"non_negative_id": "id >= 0"})`, uri)
	err := inst.Consume(events("ev", 1, 1))
	wantStatus(t, err, hostclient.StatusFatal, `table feature "checkConstraints"`)
	wantIDs(t, uri, "0")
}
