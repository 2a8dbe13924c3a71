package source_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/audit"
	"github.com/picomq/heavy-sinks/connect/audit/source"
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/plugins/delta"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// A table partitioned by pico_partition, without pico_topic (one topic):
// the partition comes from each add's partition values; a row written
// twice is a copy, a row without pico_offset a note, and a row of a
// partition the sink does not consume another.
func TestDeltaScanPartitionColumn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	pyenv.Run(t, `
import sys, pyarrow as pa
from deltalake import write_deltalake
rows = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 2), (1, 2), (1, None), (5, 0)]
t = pa.table({"id": pa.array(range(len(rows)), pa.int64()),
    "pico_partition": pa.array([p for p, _ in rows], pa.int32()),
    "pico_offset": pa.array([o for _, o in rows], pa.int64())})
write_deltalake(sys.argv[1], t, partition_by=["pico_partition"])
`, dir)
	cfg, err := delta.NewAudit(context.Background(), json.RawMessage(`{"table_uri":"file://`+dir+`","metadata_columns":true}`), "k", sdk.Env{})
	if err != nil {
		t.Fatal(err)
	}
	tp0, tp1 := audit.TP{Topic: "a", Partition: 0}, audit.TP{Topic: "a", Partition: 1}
	out, notes, err := (&source.Delta{Key: "k", Cfg: cfg}).Scan(context.Background(), []audit.TP{tp0, tp1})
	if err != nil {
		t.Fatal(err)
	}
	if w := out[tp0]; w.Proof != audit.ProofRows || !slices.Equal(w.Rows.Once.Ranges(), []audit.Range{{From: 0, To: 3}}) || w.Rows.Copies != 0 {
		t.Errorf("partition 0: %+v", w)
	}
	if w := out[tp1]; !slices.Equal(w.Rows.Once.Ranges(), []audit.Range{{From: 0, To: 1}, {From: 2, To: 3}}) ||
		!slices.Equal(w.Rows.Extra.Ranges(), []audit.Range{{From: 2, To: 3}}) || w.Rows.Copies != 1 {
		t.Errorf("partition 1: %+v", w)
	}
	all := strings.Join(notes, "\n")
	if !strings.Contains(all, "1 row(s) without pico_offset") || !strings.Contains(all, "1 row(s) of topic-partitions this sink does not consume") {
		t.Errorf("notes: %q", notes)
	}

	// Without metadata_columns only the txn versions count.
	cfg, err = delta.NewAudit(context.Background(), json.RawMessage(`{"table_uri":"file://`+dir+`"}`), "k", sdk.Env{})
	if err != nil {
		t.Fatal(err)
	}
	out, notes, err = (&source.Delta{Key: "k", Cfg: cfg}).Scan(context.Background(), []audit.TP{tp0})
	if err != nil || out[tp0].Proof != audit.ProofTxn || out[tp0].Txn != -1 || !strings.Contains(strings.Join(notes, "\n"), "metadata_columns is false") {
		t.Errorf("txn only: %+v %q %v", out[tp0], notes, err)
	}

	// An upsert table keeps each key's last change only: its rows prove
	// nothing about the changes before, so only the txn versions count.
	cfg, err = delta.NewAudit(context.Background(), json.RawMessage(`{"table_uri":"file://`+dir+`","metadata_columns":true,"write_mode":"upsert","key_columns":"id"}`), "k", sdk.Env{})
	if err != nil {
		t.Fatal(err)
	}
	out, notes, err = (&source.Delta{Key: "k", Cfg: cfg}).Scan(context.Background(), []audit.TP{tp0})
	if err != nil || out[tp0].Proof != audit.ProofTxn || !strings.Contains(strings.Join(notes, "\n"), `write_mode = "upsert"`) {
		t.Errorf("upsert: %+v %q %v", out[tp0], notes, err)
	}
}

// Files written before metadata_columns was turned on have no pico_*
// columns: their rows count as rows without offsets (a note), the others
// as usual.
func TestDeltaScanFilesBeforeMetadataColumns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	pyenv.Run(t, `
import sys, pyarrow as pa
from deltalake import write_deltalake
write_deltalake(sys.argv[1], pa.table({"id": pa.array([10, 11], pa.int64())}))
write_deltalake(sys.argv[1], pa.table({"id": pa.array([0, 1, 2], pa.int64()),
    "pico_partition": pa.array([0, 0, 0], pa.int32()),
    "pico_offset": pa.array([0, 1, 2], pa.int64())}), mode="append", schema_mode="merge")
`, dir)
	cfg, err := delta.NewAudit(context.Background(), json.RawMessage(`{"table_uri":"file://`+dir+`","metadata_columns":true}`), "k", sdk.Env{})
	if err != nil {
		t.Fatal(err)
	}
	tp0 := audit.TP{Topic: "a", Partition: 0}
	out, notes, err := (&source.Delta{Key: "k", Cfg: cfg}).Scan(context.Background(), []audit.TP{tp0})
	if err != nil {
		t.Fatal(err)
	}
	if w := out[tp0]; w.Proof != audit.ProofRows || !slices.Equal(w.Rows.Once.Ranges(), []audit.Range{{From: 0, To: 3}}) {
		t.Errorf("partition 0: %+v", w)
	}
	if all := strings.Join(notes, "\n"); !strings.Contains(all, "2 row(s) without pico_offset") {
		t.Errorf("notes: %q", notes)
	}
}

// Under the rows proof the commits' rejections are not read (the rows
// decide; one GET per commit would be wasted): a log cleaned up behind a
// checkpoint is no concern then.
func TestDeltaScanRowsReadsNoCommits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t")
	pyenv.Run(t, `
import os, sys, pyarrow as pa
from deltalake import DeltaTable, write_deltalake
for offs in ([0, 1], [2]):
    write_deltalake(sys.argv[1], pa.table({"pico_partition": pa.array([0] * len(offs), pa.int32()),
        "pico_offset": pa.array(offs, pa.int64())}), mode="append")
DeltaTable(sys.argv[1]).create_checkpoint()
os.remove(os.path.join(sys.argv[1], "_delta_log", "00000000000000000000.json"))
`, dir)
	cfg, err := delta.NewAudit(context.Background(), json.RawMessage(`{"table_uri":"file://`+dir+`","metadata_columns":true}`), "k", sdk.Env{})
	if err != nil {
		t.Fatal(err)
	}
	tp0 := audit.TP{Topic: "a", Partition: 0}
	out, notes, err := (&source.Delta{Key: "k", Cfg: cfg}).Scan(context.Background(), []audit.TP{tp0})
	if err != nil {
		t.Fatal(err)
	}
	if w := out[tp0]; w.Proof != audit.ProofRows || !slices.Equal(w.Rows.Once.Ranges(), []audit.Range{{From: 0, To: 3}}) {
		t.Errorf("partition 0: %+v", w)
	}
	if all := strings.Join(notes, "\n"); strings.Contains(all, "cleaned up") {
		t.Errorf("notes: %q", notes)
	}
}
