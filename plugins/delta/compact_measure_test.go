package delta_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/proccpu"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// TestCompactionMeasure measures compaction next to a steady append load,
// when PICOMQ_COMPACTION_MEASURE gives a record count (e.g. 1000000):
// 1000-record batches into benchLog's table on file://, the partition
// value moving on every 50 batches as an hour partition would, with
// compaction = true, compaction_idle = 2s. It reports the live files per
// partition value at the end and the compactor's CPU as a share of the
// rest of the process's (the append path: encoding, uploads, commits,
// checkpoints). Not part of the normal run.
func TestCompactionMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PICOMQ_COMPACTION_MEASURE"))
	if n <= 0 {
		t.Skip("set PICOMQ_COMPACTION_MEASURE to a record count to measure")
	}
	uri := benchTable(t)
	def, _ := json.Marshal(map[string]any{"key": "measure", "plugin_config": map[string]any{
		"table_uri": uri, "compaction": true, "compaction_idle": "2s"}})
	h, err := sdk.Open(def, nil)
	if err != nil {
		t.Fatal(err)
	}
	batches := make([]*sdk.Batch, 20)
	for i := range batches {
		batches[i] = benchBatch(i, 1000)
	}
	const perPartition = 50
	cpu0, start := processCPU(t), time.Now()
	next := uint64(0)
	for b := range n / 1000 {
		batch := batches[b%len(batches)]
		hour := fmt.Sprintf("h%03d", b/perPartition)
		for j := range batch.Records {
			r := &batch.Records[j]
			r.Offset = next
			next++
			i := strings.LastIndex(string(r.Payload), `"region":"`)
			r.Payload = append(r.Payload[:i], `"region":"`+hour+`"}`...)
		}
		if err := sdk.Consume(h, batch); err != nil {
			t.Fatal(err)
		}
	}
	appendWall := time.Since(start)
	partitions := (n/1000 + perPartition - 1) / perPartition
	deadline := time.Now().Add(2 * time.Minute)
	for sink(t, h)["compactions"] < float64(partitions) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	cpu := processCPU(t) - cpu0
	m := sink(t, h)
	sdk.Close(h)

	store, _ := objstore.NewLocal(strings.TrimPrefix(uri, "file://"))
	st, err := deltalog.LoadState(context.Background(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]int{}
	for a := range st.Files() {
		files[*a.PartitionValues["region"]]++
	}
	maxFiles := 0
	for _, k := range files {
		maxFiles = max(maxFiles, k)
	}
	compCPU := time.Duration(m["compaction_cpu_ms"]) * time.Millisecond
	t.Logf("%d records in %d batches in %v (append wall); process CPU %v; compaction CPU %v = %.1f%% of the rest (%v); "+
		"checkpoint CPU %vms; compactions %v, files removed %v, added %v, bytes read %v, written %v, compaction wall %vms",
		n, n/1000, appendWall.Round(time.Millisecond), cpu.Round(time.Millisecond), compCPU,
		100*float64(compCPU)/float64(cpu-compCPU), (cpu - compCPU).Round(time.Millisecond), m["checkpoint_cpu_ms"],
		m["compactions"], m["compaction_files_removed"], m["compaction_files_added"], m["compaction_bytes_read"],
		m["compaction_bytes_written"], m["compaction_ms"])
	t.Logf("live data files per partition value: %d partition values, at most %d files each (%v)", len(files), maxFiles, files)
}

func processCPU(t *testing.T) time.Duration {
	t.Helper()
	d, err := proccpu.Self()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func sink(t *testing.T, h uint64) map[string]float64 {
	out, err := sdk.Metrics(h)
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Sink map[string]float64 }
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m.Sink
}
