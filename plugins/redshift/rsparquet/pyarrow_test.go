package rsparquet_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsparquet"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
)

// pyarrowDump reads a Parquet file with pyarrow and reports its schema, its
// column chunk metadata and its rows (bytes as lists of ints).
const pyarrowDump = `
import json, sys
import pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
md = f.metadata
cols = []
for i, field in enumerate(f.schema_arrow):
    cc = md.row_group(0).column(i)
    cols.append({"name": field.name, "type": str(field.type), "nullable": field.nullable,
                 "physical": cc.physical_type, "compression": cc.compression,
                 "encodings": sorted(cc.encodings)})
rows = []
for r in f.read().to_pylist():
    rows.append({k: (list(v) if isinstance(v, bytes) else v) for k, v in r.items()})
json.dump({"row_groups": md.num_row_groups, "columns": cols, "rows": rows}, sys.stdout)
`

func TestPyarrowReadsTheFile(t *testing.T) {
	for _, payload := range []rsql.PayloadFormat{rsql.PayloadVarbyte, rsql.PayloadText} {
		t.Run(payload.String(), func(t *testing.T) {
			l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true, Payload: payload})
			c := sampleChunk()
			if payload == rsql.PayloadVarbyte {
				c.Records[2].Payload = []byte{0xff, 0x00, 0xfe} // not text: varbyte keeps bytes
			}
			data, err := rsparquet.NewEncoder(l).Encode(c)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "chunk.parquet")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			// pyarrow, from the project's pinned virtualenv
			// (buildscripts/pyenv.sh), is the independent reader.
			out := pyenv.Run(t, pyarrowDump, path)
			var got struct {
				RowGroups int `json:"row_groups"`
				Columns   []struct {
					Name        string   `json:"name"`
					Type        string   `json:"type"`
					Nullable    bool     `json:"nullable"`
					Physical    string   `json:"physical"`
					Compression string   `json:"compression"`
					Encodings   []string `json:"encodings"`
				} `json:"columns"`
				Rows []map[string]any `json:"rows"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got.RowGroups != 1 {
				t.Errorf("%d row groups", got.RowGroups)
			}
			payloadType := "binary"
			if payload == rsql.PayloadText {
				payloadType = "string"
			}
			wantTypes := []string{"id string", "pico_offset string", "pico_timestamp string", "pico_topic string",
				"pico_partition int64", "pico_key string", "payload " + payloadType, "created_at string"}
			for i, c := range got.Columns {
				if i >= len(wantTypes) || c.Name+" "+c.Type != wantTypes[i] {
					t.Errorf("column %d is %s %s, want %s", i, c.Name, c.Type, wantTypes[i])
				}
				if c.Nullable != (c.Name == "pico_key") {
					t.Errorf("%s nullable = %v", c.Name, c.Nullable)
				}
				if c.Compression != "ZSTD" {
					t.Errorf("%s compression %s", c.Name, c.Compression)
				}
				for _, e := range c.Encodings {
					if e != "PLAIN" && e != "RLE" && e != "RLE_DICTIONARY" {
						t.Errorf("%s encoding %s", c.Name, e)
					}
				}
			}
			if len(got.Columns) != len(wantTypes) {
				t.Errorf("%d columns, want %d", len(got.Columns), len(wantTypes))
			}
			if len(got.Rows) != len(c.Records) {
				t.Fatalf("%d rows", len(got.Rows))
			}
			r0, r1, r2 := got.Rows[0], got.Rows[1], got.Rows[2]
			if r0["id"] != "orders.eu:0:0" || r0["pico_offset"] != "0" || r0["pico_timestamp"] != "1732878480123" ||
				r0["pico_topic"] != "orders.eu" || r0["pico_partition"] != 0.0 || r0["pico_key"] != "b3JkZXItNDI=" ||
				r0["created_at"] != createdAt {
				t.Errorf("row 0: %v", r0)
			}
			if r1["pico_key"] != nil {
				t.Errorf("row 1 key %v, want NULL", r1["pico_key"])
			}
			if r2["id"] != "orders.eu:0:18446744073709551615" || r2["pico_timestamp"] != "-1" || r2["pico_key"] != "" {
				t.Errorf("row 2: %v", r2)
			}
			if payload == rsql.PayloadText {
				if got.Rows[3]["payload"] != "größe ✓" {
					t.Errorf("row 3 payload %v", got.Rows[3]["payload"])
				}
			} else if b, _ := json.Marshal(r2["payload"]); string(b) != "[255,0,254]" {
				t.Errorf("row 2 payload %s", b)
			}
		})
	}
}

// The staging file of write_mode = "upsert": key columns, a NULL payload
// for each delete (runs of deletes and upserts across a page of levels),
// and the change columns, read back by pyarrow.
func TestPyarrowReadsAnUpsertFile(t *testing.T) {
	l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true, Payload: rsql.PayloadText,
		KeyColumns: []string{"key_tenant", "key_id"}}).Staging()
	c := rsparquet.Chunk{Topic: "orders", Partition: 3, CreatedAt: createdAt}
	for i := range 10 {
		r := rsparquet.Record{Offset: uint64(100 + i), Timestamp: 1, Change: rsql.OpUpsert,
			Payload: fmt.Appendf(nil, `{"id":%d}`, i), KeyValues: [][]byte{[]byte("t"), fmt.Appendf(nil, "%d", i)}}
		if i%3 == 1 || i == 2 {
			r.Change, r.Payload = rsql.OpDelete, nil
		}
		c.Records = append(c.Records, r)
	}
	data, err := rsparquet.NewEncoder(l).Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "upsert.parquet")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Columns []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			Nullable bool   `json:"nullable"`
		} `json:"columns"`
		Rows []map[string]any `json:"rows"`
	}
	out := pyenv.Run(t, pyarrowDump, path)
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var names []string
	for _, c := range got.Columns {
		names = append(names, c.Name+" "+c.Type)
		if c.Nullable != (c.Name == "pico_key" || c.Name == "payload") {
			t.Errorf("%s nullable = %v", c.Name, c.Nullable)
		}
	}
	want := "id string, pico_offset string, pico_timestamp string, pico_topic string, pico_partition int64, pico_key string, payload string, " +
		"created_at string, key_tenant string, key_id string, pico_op string, pico_change_topic string, pico_change_partition int64, pico_change_offset int64"
	if strings.Join(names, ", ") != want {
		t.Fatalf("columns %s\nwant    %s", strings.Join(names, ", "), want)
	}
	for i, r := range got.Rows {
		del := i%3 == 1 || i == 2
		wantOp, wantPayload := "u", any(fmt.Sprintf(`{"id":%d}`, i))
		if del {
			wantOp, wantPayload = "d", nil
		}
		if r["pico_op"] != wantOp || r["payload"] != wantPayload || r["key_tenant"] != "t" || r["key_id"] != fmt.Sprint(i) ||
			r["pico_change_topic"] != "orders" || r["pico_change_partition"] != 3.0 || r["pico_change_offset"] != float64(100+i) {
			t.Errorf("row %d: %v", i, r)
		}
	}
	if len(got.Rows) != 10 {
		t.Fatalf("%d rows", len(got.Rows))
	}
}
