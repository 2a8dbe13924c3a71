package deltalog_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// Conformance: every table in shared/testdata/delta-tables loads with the
// version, schema, partition columns, protocol and txns its log implies.
// Expected values were read off the logs by hand and cross-checked with
// delta-rs (python deltalake 1.x: version(), protocol(), metadata(),
// transaction_version()); the tests themselves need no Python.

type tableWant struct {
	name           string
	version        int64
	checkpoint     int64 // -1: loaded without a checkpoint
	reader, writer int32
	readerFeatures []string
	writerFeatures []string
	partitionCols  []string
	schema         string
	txns           map[string]int64
	// refusedBy is the feature (or "") CheckWritable names for the table.
	refusedBy string
}

var conformanceTables = []tableWant{
	{name: "app-txn-checkpoint", version: 1, checkpoint: 1, reader: 1, writer: 2,
		partitionCols: []string{"modified"}, schema: "struct<id:string,value:integer,modified:string>",
		txns: map[string]int64{"my-app": 3, "my-app2": 2}},
	{name: "app-txn-no-checkpoint", version: 1, checkpoint: -1, reader: 1, writer: 2,
		partitionCols: []string{"modified"}, schema: "struct<id:string,value:integer,modified:string>",
		txns: map[string]int64{"my-app": 3, "my-app2": 2}},
	// Retention "interval 1 days": with today's clock only the txn without
	// lastUpdated survives (TestTxnRetention covers other clocks).
	{name: "app-txn-with-last-updated", version: 3, checkpoint: -1, reader: 1, writer: 2,
		schema: "struct<a:long,b:long>", txns: map[string]int64{"new_app_0": 1}},
	{name: "basic-decimal-table", version: 0, checkpoint: -1, reader: 1, writer: 2,
		partitionCols: []string{"part"},
		schema:        "struct<part:decimal(12,5),col1:decimal(5,2),col2:decimal(10,5),col3:decimal(20,10)>"},
	{name: "basic_partitioned", version: 1, checkpoint: -1, reader: 1, writer: 2,
		partitionCols: []string{"letter"}, schema: "struct<letter:string,number:long,a_float:double>"},
	// crc-full's .crc lists txns and domains that are not in its log; the
	// log is authoritative and .crc files are ignored.
	{name: "crc-full", version: 0, checkpoint: -1, reader: 3, writer: 7,
		readerFeatures: []string{"deletionVectors"},
		writerFeatures: []string{"domainMetadata", "clustering", "deletionVectors", "rowTracking"},
		schema:         "struct<id:long>", refusedBy: "rowTracking"},
	{name: "data-reader-timestamp_ntz", version: 1, checkpoint: -1, reader: 3, writer: 7,
		readerFeatures: []string{"timestampNtz"}, writerFeatures: []string{"timestampNtz"},
		partitionCols: []string{"tsNtzPartition"},
		schema:        "struct<id:integer,tsNtz:timestamp_ntz,tsNtzPartition:timestamp_ntz>"},
	{name: "mixed-nulls", version: 0, checkpoint: -1, reader: 1, writer: 2,
		partitionCols: []string{"part"}, schema: "struct<id:long,part:long,value:string,n:string>"},
	{name: "partition_cm/id", version: 0, checkpoint: -1, reader: 3, writer: 7,
		readerFeatures: []string{"columnMapping"}, writerFeatures: []string{"columnMapping"},
		partitionCols: []string{"category"}, schema: "struct<value:integer,category:string>",
		refusedBy: "columnMapping"},
	{name: "partition_cm/name", version: 0, checkpoint: -1, reader: 3, writer: 7,
		readerFeatures: []string{"columnMapping"}, writerFeatures: []string{"columnMapping"},
		partitionCols: []string{"category"}, schema: "struct<value:integer,category:string>",
		refusedBy: "columnMapping"},
	{name: "partition_cm/none", version: 0, checkpoint: -1, reader: 1, writer: 1,
		partitionCols: []string{"category"}, schema: "struct<value:integer,category:string>"},
	{name: "partitioned_with_materialize_feature", version: 1, checkpoint: -1, reader: 3, writer: 7,
		writerFeatures: []string{"materializePartitionColumns"},
		partitionCols:  []string{"letter"}, schema: "struct<letter:string,number:long,a_float:double>",
		refusedBy: "materializePartitionColumns"},
	{name: "stats-writing-all-types/delta", version: 1, checkpoint: -1, reader: 3, writer: 7,
		readerFeatures: []string{"timestampNtz", "columnMapping"},
		writerFeatures: []string{"timestampNtz", "columnMapping"},
		schema: "struct<byte_col:byte,short_col:short,int_col:integer,long_col:long,float_col:float," +
			"double_col:double,date_col:date,timestamp_col:timestamp,timestamp_ntz_col:timestamp_ntz," +
			"string_col:string,decimal_col:decimal(10,2),boolean_col:boolean,binary_col:binary," +
			"array_col:array<integer>,map_col:map<string,integer>," +
			"nested_struct:struct<inner_int:integer,inner_string:string,inner_double:double>>",
		refusedBy: "columnMapping"},
	{name: "table-with-dv-small", version: 1, checkpoint: -1, reader: 3, writer: 7,
		readerFeatures: []string{"deletionVectors"}, writerFeatures: []string{"deletionVectors"},
		schema: "struct<value:integer>"},
	{name: "timestamp-truncation-stats", version: 2, checkpoint: -1, reader: 1, writer: 2,
		schema: "struct<id:long,ts_col:timestamp>"},
	{name: "type-widening", version: 2, checkpoint: -1, reader: 3, writer: 7,
		readerFeatures: []string{"timestampNtz", "typeWidening-preview"},
		writerFeatures: []string{"timestampNtz", "typeWidening-preview", "appendOnly", "invariants"},
		schema: "struct<byte_long:long,int_long:long,float_double:double,byte_double:double,short_double:double," +
			"int_double:double,decimal_decimal_same_scale:decimal(20,2),decimal_decimal_greater_scale:decimal(20,5)," +
			"byte_decimal:decimal(4,1),short_decimal:decimal(6,1),int_decimal:decimal(11,1)," +
			"long_decimal:decimal(21,1),date_timestamp_ntz:timestamp_ntz>"},
	{name: "v1-multi-part-partitioned-struct-stats-only", version: 5, checkpoint: 5, reader: 3, writer: 7,
		readerFeatures: []string{"deletionVectors"}, writerFeatures: []string{"deletionVectors", "appendOnly", "invariants"},
		partitionCols: []string{"part"}, schema: "struct<id:long,value:string,part:integer>"},
	{name: "v1-multi-part-struct-stats-only", version: 5, checkpoint: 5, reader: 3, writer: 7,
		readerFeatures: []string{"deletionVectors"}, writerFeatures: []string{"deletionVectors", "appendOnly", "invariants"},
		schema: "struct<id:long,value:string>"},
	{name: "v1-single-part-struct-stats-only", version: 5, checkpoint: 5, reader: 3, writer: 7,
		readerFeatures: []string{"deletionVectors"}, writerFeatures: []string{"deletionVectors", "appendOnly", "invariants"},
		schema: "struct<id:long,value:string>"},
	{name: "v2-classic-parquet-struct-stats-only", version: 5, checkpoint: 5, reader: 3, writer: 7,
		readerFeatures: []string{"deletionVectors"}, writerFeatures: []string{"deletionVectors", "appendOnly", "invariants"},
		schema: "struct<id:long,value:string>"},
	{name: "v2-json-sidecars-struct-stats-only", version: 5, checkpoint: 5, reader: 3, writer: 7,
		readerFeatures: []string{"deletionVectors", "v2Checkpoint"},
		writerFeatures: []string{"deletionVectors", "v2Checkpoint", "appendOnly", "invariants"},
		schema:         "struct<id:long,value:string>"},
	{name: "v2-parquet-sidecars-struct-stats-only", version: 5, checkpoint: 5, reader: 3, writer: 7,
		readerFeatures: []string{"deletionVectors", "v2Checkpoint"},
		writerFeatures: []string{"deletionVectors", "v2Checkpoint", "appendOnly", "invariants"},
		schema:         "struct<id:long,value:string>"},
	{name: "void-column", version: 0, checkpoint: -1, reader: 1, writer: 2,
		schema: "struct<id:long,void_col:void>"},
	{name: "with_checkpoint_no_last_checkpoint", version: 3, checkpoint: 2, reader: 1, writer: 2,
		schema: "struct<letter:string,int:long,date:date>"},
	// Compressed tables.
	{name: "compacted-log-files-table", version: 25, checkpoint: -1, reader: 3, writer: 7,
		readerFeatures: []string{"deletionVectors"}, writerFeatures: []string{"deletionVectors", "changeDataFeed"},
		schema: "struct<id:integer,comment:string>"},
	{name: "timestamp-partitioned-table", version: 0, checkpoint: -1, reader: 3, writer: 7,
		readerFeatures: []string{"deletionVectors"}, writerFeatures: []string{"deletionVectors", "invariants", "appendOnly"},
		partitionCols: []string{"time"}, schema: "struct<id:long,x:double,s:string,time:timestamp>"},
	{name: "v2-checkpoints-json-with-last-checkpoint", version: 0, checkpoint: 0, reader: 3, writer: 7,
		readerFeatures: []string{"v2Checkpoint"}, writerFeatures: []string{"v2Checkpoint", "appendOnly", "invariants"},
		schema: "struct<id:long>"},
	{name: "v2-checkpoints-json-with-sidecars", version: 6, checkpoint: 6, reader: 3, writer: 7,
		readerFeatures: []string{"v2Checkpoint"}, writerFeatures: []string{"v2Checkpoint", "appendOnly", "invariants"},
		schema: "struct<id:long>"},
	{name: "v2-checkpoints-json-without-sidecars", version: 2, checkpoint: 2, reader: 3, writer: 7,
		readerFeatures: []string{"v2Checkpoint"}, writerFeatures: []string{"v2Checkpoint", "appendOnly", "invariants"},
		schema: "struct<id:long>", txns: map[string]int64{"app-1": 2}},
	{name: "v2-checkpoints-parquet-with-last-checkpoint", version: 0, checkpoint: 0, reader: 3, writer: 7,
		readerFeatures: []string{"v2Checkpoint"}, writerFeatures: []string{"v2Checkpoint", "appendOnly", "invariants"},
		schema: "struct<id:long>"},
	{name: "v2-checkpoints-parquet-with-sidecars", version: 6, checkpoint: 6, reader: 3, writer: 7,
		readerFeatures: []string{"v2Checkpoint"}, writerFeatures: []string{"v2Checkpoint", "appendOnly", "invariants"},
		schema: "struct<id:long>"},
	{name: "v2-checkpoints-parquet-without-sidecars", version: 2, checkpoint: 2, reader: 3, writer: 7,
		readerFeatures: []string{"v2Checkpoint"}, writerFeatures: []string{"v2Checkpoint", "appendOnly", "invariants"},
		schema: "struct<id:long>", txns: map[string]int64{"app-1": 2}},
	{name: "v2-classic-checkpoint-json", version: 1, checkpoint: 1, reader: 3, writer: 7,
		readerFeatures: []string{"v2Checkpoint"}, writerFeatures: []string{"v2Checkpoint", "appendOnly", "invariants"},
		schema: "struct<id:long>"},
	{name: "v2-classic-checkpoint-parquet", version: 1, checkpoint: 1, reader: 3, writer: 7,
		readerFeatures: []string{"v2Checkpoint"}, writerFeatures: []string{"v2Checkpoint", "appendOnly", "invariants"},
		schema: "struct<id:long>"},
	{name: "300k-add-files-100-col-partitioned", version: 4, checkpoint: -1, reader: 1, writer: 2,
		partitionCols: []string{"partition_col"}, schema: schema300k()},
}

func schema300k() string {
	s := "struct<partition_col:string"
	for i := range 99 { // 100 columns in all
		s += ",col_" + itoa(i) + ":long"
	}
	return s + ">"
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func TestConformanceTables(t *testing.T) {
	for _, w := range conformanceTables {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			store := tableStore(t, w.name)
			snap, err := deltalog.Load(context.Background(), store, nil)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if snap.Version != w.version {
				t.Errorf("Version = %d, want %d", snap.Version, w.version)
			}
			if snap.CheckpointVersion != w.checkpoint {
				t.Errorf("CheckpointVersion = %d, want %d", snap.CheckpointVersion, w.checkpoint)
			}
			p := snap.Protocol
			if p.MinReaderVersion != w.reader || p.MinWriterVersion != w.writer {
				t.Errorf("protocol = %d/%d, want %d/%d", p.MinReaderVersion, p.MinWriterVersion, w.reader, w.writer)
			}
			if !slices.Equal(p.ReaderFeatures, w.readerFeatures) && len(p.ReaderFeatures)+len(w.readerFeatures) > 0 {
				t.Errorf("readerFeatures = %q, want %q", p.ReaderFeatures, w.readerFeatures)
			}
			if !slices.Equal(p.WriterFeatures, w.writerFeatures) && len(p.WriterFeatures)+len(w.writerFeatures) > 0 {
				t.Errorf("writerFeatures = %q, want %q", p.WriterFeatures, w.writerFeatures)
			}
			if !slices.Equal(snap.PartitionColumns, w.partitionCols) && len(snap.PartitionColumns)+len(w.partitionCols) > 0 {
				t.Errorf("PartitionColumns = %q, want %q", snap.PartitionColumns, w.partitionCols)
			}
			if got := snap.Schema.String(); got != w.schema {
				t.Errorf("schema =\n  %s\nwant\n  %s", got, w.schema)
			}
			got := map[string]int64{}
			for id, txn := range snap.Txns {
				got[id] = txn.Version
			}
			if !maps.Equal(got, w.txns) && len(got)+len(w.txns) > 0 {
				t.Errorf("txns = %v, want %v", got, w.txns)
			}
			for id, v := range w.txns {
				if gv, ok := snap.TxnVersion(id); !ok || gv != v {
					t.Errorf("TxnVersion(%q) = %d, %v; want %d", id, gv, ok, v)
				}
			}

			werr := snap.Writable()
			if err := deltalog.CheckWritable(snap.Protocol, snap.Metadata); (err == nil) != (werr == nil) {
				t.Errorf("CheckWritable = %v but Snapshot.Writable = %v", err, werr)
			}
			var fe *deltalog.UnsupportedFeatureError
			switch {
			case w.refusedBy == "" && werr != nil:
				t.Errorf("table refused: %v", werr)
			case w.refusedBy != "" && !errors.As(werr, &fe):
				t.Errorf("want refusal by %q, got %v", w.refusedBy, werr)
			case w.refusedBy != "" && fe.Feature != w.refusedBy:
				t.Errorf("refused by %q, want %q (%v)", fe.Feature, w.refusedBy, werr)
			case w.refusedBy != "" && !errors.Is(werr, deltalog.ErrNotWritable):
				t.Errorf("refusal %v does not match ErrNotWritable", werr)
			}
		})
	}
}

// TestTxnRetention: delta.setTransactionRetentionDuration = "interval 1 days"
// expires txns whose lastUpdated is at least a day before the clock.
func TestTxnRetention(t *testing.T) {
	store := tableStore(t, "app-txn-with-last-updated")
	cases := []struct {
		now  time.Time
		want []string
	}{
		// lastUpdated values: new_app_1=1000, new_app_2=1002, old_app=1747935650 (ms).
		{time.UnixMilli(1000 + 86_400_000 - 1), []string{"new_app_0", "new_app_1", "new_app_2", "old_app"}},
		{time.UnixMilli(1001 + 86_400_000), []string{"new_app_0", "new_app_2", "old_app"}},
		{time.UnixMilli(1747935650 + 86_400_000), []string{"new_app_0"}},
		{time.UnixMilli(1747935650 + 86_400_000 - 1), []string{"new_app_0", "old_app"}},
	}
	for _, c := range cases {
		snap, err := deltalog.Load(context.Background(), store, &deltalog.LoadOptions{Now: func() time.Time { return c.now }})
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Sorted(maps.Keys(snap.Txns))
		if !slices.Equal(got, c.want) {
			t.Errorf("now=%d: live txns %v, want %v", c.now.UnixMilli(), got, c.want)
		}
	}
}
