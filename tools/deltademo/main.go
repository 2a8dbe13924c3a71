// Command deltademo is `make demo`: it creates a local partitioned Delta
// table with delta-rs, streams sample order records through the real Delta
// sink library loaded in the C host (as the connector runtime would),
// replays one batch to show that nothing is written twice, and prints the
// table's versions and row count as delta-rs reads them.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

var dir = flag.String("table", "", "table directory (default: a new temporary directory)")

const create = `
import sys, pyarrow as pa
from deltalake import write_deltalake
schema = pa.schema([("order_id", pa.int64()), ("customer", pa.string()), ("amount", pa.float64()),
                    ("created_at", pa.timestamp("us", tz="UTC")), ("region", pa.string())])
write_deltalake(sys.argv[1], pa.Table.from_pylist([], schema=schema), partition_by=["region"])
`

const report = `
import sys, os
from deltalake import DeltaTable
dt = DeltaTable(sys.argv[1])
print("versions (delta-rs history, newest first):")
for h in dt.history():
    print("  version %-3s %-12s %s" % (h["version"], h["operation"], h.get("operationParameters", "")))
t = dt.to_pyarrow_table()
print("rows: %d" % t.num_rows)
for region in sorted(set(t.column("region").to_pylist())):
    print("  region=%s: %d" % (region, sum(1 for r in t.column("region").to_pylist() if r == region)))
sys.stdout.flush(); os._exit(0)
`

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	out, err := exec.Command(filepath.Join(root, "buildscripts", "pyenv.sh")).Output()
	if err != nil {
		return fmt.Errorf("python env: %w", err)
	}
	python := strings.TrimSpace(string(out))
	table := *dir
	if table == "" {
		if table, err = os.MkdirTemp("", "picomq-demo-"); err != nil {
			return err
		}
		table = filepath.Join(table, "orders")
	}
	if msg, err := exec.Command(python, "-c", create, table).CombinedOutput(); err != nil {
		return fmt.Errorf("create table: %v\n%s", err, msg)
	}
	fmt.Printf("created Delta table file://%s (partitioned by region) with delta-rs\n", table)

	dist, err := testenv.DistDir()
	if err != nil {
		return err
	}
	host, err := hostclient.Start(context.Background(), filepath.Join(dist, "picomq-host"))
	if err != nil {
		return err
	}
	defer host.Close()
	lib, err := host.Load(filepath.Join(dist, "libpicomq_connector_delta_sink.so"))
	if err != nil {
		return err
	}
	def, _ := json.Marshal(map[string]any{"key": "orders_delta", "name": "Orders to Delta Lake", "version": 0,
		"plugin_config": map[string]any{"table_uri": "file://" + table}})
	inst, err := lib.Open(string(def))
	if err != nil {
		return err
	}
	regions := []string{"eu", "us", "apac"}
	base := time.Date(2026, 9, 3, 21, 15, 4, 0, time.UTC)
	batch := func(n int) hostclient.Batch {
		b := hostclient.Batch{Attempt: 1, Topic: "orders.web", Schema: "json"}
		for i := range 100 {
			off := n*100 + i
			ts := base.Add(time.Duration(off) * time.Second)
			b.Records = append(b.Records, hostclient.Record{Offset: uint64(off), TimestampMs: ts.UnixMilli(), Payload: []byte(fmt.Sprintf(
				`{"order_id":%d,"customer":"customer-%d","amount":%d.%02d,"created_at":"%s","region":"%s"}`,
				off, off%17, 10+off%90, off%100, ts.Format(time.RFC3339), regions[off%3]))})
		}
		return b
	}
	for n := range 5 {
		if err := inst.Consume(batch(n)); err != nil {
			return err
		}
		fmt.Printf("consume(): batch %d, offsets %d..%d -> OK\n", n, n*100, n*100+99)
	}
	if err := inst.Consume(batch(4)); err != nil {
		return err
	}
	fmt.Println("consume(): batch 4 again (a replay after a crash) -> OK, nothing written twice")
	if m, err := inst.Metrics(); err == nil {
		fmt.Println("metrics():", m)
	}
	if err := inst.Close(); err != nil {
		return err
	}
	cmd := exec.Command(python, "-c", report, table)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
