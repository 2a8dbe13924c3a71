package delta_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// A table with in-commit timestamps: every commit of ours carries one, and
// they increase; delta-rs keeps reading the table.
func TestInCommitTimestamps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ict")
	uri := fileURI(dir)
	// delta-rs 1.6 cannot create such a table, so the first commit is
	// written by hand, as Spark would write it.
	py(t, `
import pathlib, time
log = pathlib.Path(sys.argv[1]) / "_delta_log"
log.mkdir(parents=True)
schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                       {"name": "body", "type": "string", "nullable": True, "metadata": {}}]}
now = int(time.time() * 1000) - 60000
actions = [
    {"commitInfo": {"timestamp": now, "inCommitTimestamp": now, "operation": "CREATE TABLE"}},
    {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["inCommitTimestamp", "appendOnly", "invariants"]}},
    {"metaData": {"id": "ict-test", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(schema),
                  "partitionColumns": [], "configuration": {"delta.enableInCommitTimestamps": "true",
                  "delta.inCommitTimestampEnablementVersion": "0", "delta.inCommitTimestampEnablementTimestamp": str(now)},
                  "createdTime": now}},
]
(log / ("%020d.json" % 0)).write_text("".join(json.dumps(a) + "\n" for a in actions))
`, dir)
	inst := newHarness(t).open("ict", map[string]any{"table_uri": uri})
	for n := range 3 {
		consume(t, inst, events("ict", n*2, 2))
	}
	wantIDs(t, uri, "0,1,2,3,4,5")
	out := py(t, `
import glob
ts = []
for f in sorted(glob.glob(sys.argv[1] + "/_delta_log/*.json")):
    first = json.loads(open(f).readline())
    ts.append(first.get("commitInfo", {}).get("inCommitTimestamp"))
dump(ts)
`, dir)
	var ts []*int64
	if err := json.Unmarshal([]byte(out), &ts); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(ts) != 4 {
		t.Fatalf("commits %s", out)
	}
	for i := 1; i < len(ts); i++ {
		if ts[i] == nil || ts[i-1] == nil || *ts[i] <= *ts[i-1] {
			t.Fatalf("inCommitTimestamps not increasing (commitInfo must come first): %s", out)
		}
	}
}

// A table delta-rs checkpointed, with change data feed on and a txn of
// another application: the sink loads it from the checkpoint and appends.
func TestCheckpointedTableWithOtherFeatures(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cp")
	uri := fileURI(dir)
	py(t, `
from deltalake import CommitProperties, Transaction
schema = pa.schema([("id", pa.int64()), ("body", pa.string())])
write_deltalake(uri, pa.Table.from_pylist([{"id": -2, "body": "a"}], schema=schema),
    configuration={"delta.enableChangeDataFeed": "true"})
for i in range(3):
    write_deltalake(uri, pa.Table.from_pylist([{"id": -10 - i, "body": "b"}], schema=schema), mode="append",
        commit_properties=CommitProperties(app_transactions=[Transaction(app_id="someone-else", version=i)]))
DeltaTable(uri).create_checkpoint()
`, uri)
	inst := newHarness(t).open("cp", map[string]any{"table_uri": uri})
	consume(t, inst, events("cp", 0, 3))
	consume(t, inst, events("cp", 0, 3)) // replay: skipped
	wantIDs(t, uri, "-12,-11,-10,-2,0,1,2")
	out := py(t, `
dt = DeltaTable(uri)
dump({"version": dt.version(), "txn": dt.transaction_version("someone-else") if hasattr(dt, "transaction_version") else None})
`, uri)
	if !strings.Contains(out, `"version": 4`) {
		t.Fatalf("%s", out)
	}
}
