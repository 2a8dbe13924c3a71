package redshift_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
)

// pyarrowDump reads Parquet files with pyarrow and prints, per file, its
// schema, column chunk metadata and rows (bytes as lists of ints).
const pyarrowDump = `
import json, sys
import pyarrow.parquet as pq
out = []
for path in sys.argv[1:]:
    f = pq.ParquetFile(path)
    md = f.metadata
    cols = []
    for i, field in enumerate(f.schema_arrow):
        cc = md.row_group(0).column(i)
        cols.append({"name": field.name, "type": str(field.type), "nullable": field.nullable,
                     "physical": cc.physical_type, "compression": cc.compression})
    rows = [{k: (list(v) if isinstance(v, bytes) else v) for k, v in r.items()} for r in f.read().to_pylist()]
    out.append({"row_groups": md.num_row_groups, "columns": cols, "rows": rows})
json.dump(out, sys.stdout)
`

type pqFile struct {
	RowGroups int `json:"row_groups"`
	Columns   []struct {
		Name        string `json:"name"`
		Type        string `json:"type"`
		Nullable    bool   `json:"nullable"`
		Physical    string `json:"physical"`
		Compression string `json:"compression"`
	} `json:"columns"`
	Rows []map[string]any `json:"rows"`
}

// The files the library uploads are read by an independent reader,
// pyarrow: one row group, zstd, the types of the spec's columns, and the
// columns in exactly the order of the COPY column list, which is how
// Redshift maps them. Their rows are the rows that landed in the table.
// archive = true keeps the files to read.
func TestParquetFilesReadByPyarrow(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	copyCols := regexp.MustCompile(`^COPY "([^"]+)" \(([^)]*)\) FROM 's3://[^/]+/([^']+)'`)
	for _, tc := range []struct {
		table string
		opts  map[string]any
		types string // name:arrow type, nullable marked with ?
	}{
		{"pq_default", nil,
			"id:string pico_offset:string pico_timestamp:string pico_topic:string pico_partition:int64 pico_key:string? payload:binary created_at:string"},
		{"pq_text_bare", map[string]any{"payload_format": "text", "include_metadata": false, "include_key": false},
			"id:string payload:string created_at:string"},
		{"pq_no_key", map[string]any{"include_key": false, "payload_format": "json"},
			"id:string pico_offset:string pico_timestamp:string pico_topic:string pico_partition:int64 payload:string created_at:string"},
	} {
		cfg := w.config(map[string]any{"target_table": tc.table, "archive": true, "batch_size": 4, "s3_prefix": "pq/" + tc.table})
		for k, v := range tc.opts {
			cfg[k] = v
		}
		inst := w.open(tc.table, cfg)
		w.emu.ResetStatements()
		b := batch("orders.eu", 10, 6) // two files: 4 and 2 rows
		if tc.opts["payload_format"] == nil {
			b.Schema = "raw"
			b.Records[1].Payload = []byte{0xff, 0x00, 0xfe}
		}
		consume(t, inst, b)

		// The COPY statements name the files and the column list.
		var copyList []string
		files := map[string]string{} // archive key -> original key
		for _, s := range w.emu.Statements() {
			m := copyCols.FindStringSubmatch(s)
			if m == nil {
				continue
			}
			list := strings.Split(m[2], ", ")
			if copyList != nil && strings.Join(copyList, ",") != strings.Join(list, ",") {
				t.Errorf("%s: COPY column lists differ: %v and %v", tc.table, copyList, list)
			}
			copyList = list
			files["pq/"+tc.table+"/archive/messages/"+filepath.Base(m[3])] = m[3]
		}
		if len(files) != 2 {
			t.Fatalf("%s: %d COPY statements, want 2: %v", tc.table, len(files), w.emu.Statements())
		}
		dir := t.TempDir()
		var paths []string
		for _, key := range w.objects("pq/" + tc.table + "/") {
			if _, ok := files[key]; !ok {
				t.Errorf("%s: object %s was not COPYed", tc.table, key)
				continue
			}
			paths = append(paths, w.download(key, dir))
		}
		if len(paths) != 2 {
			t.Fatalf("%s: archived files %v", tc.table, paths)
		}

		var got []pqFile
		out := pyenv.Run(t, pyarrowDump, paths...)
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		tableRows := map[string]row{}
		for _, r := range w.rows(tc.table) {
			tableRows[r["id"].(string)] = r
		}
		total := 0
		for _, f := range got {
			var types, names []string
			for _, c := range f.Columns {
				ty := c.Name + ":" + c.Type
				if c.Nullable {
					ty += "?"
				}
				types = append(types, ty)
				names = append(names, c.Name)
				if c.Compression != "ZSTD" {
					t.Errorf("%s: column %s compression %s", tc.table, c.Name, c.Compression)
				}
			}
			if strings.Join(types, " ") != tc.types {
				t.Errorf("%s: Parquet schema\n%s\nwant\n%s", tc.table, strings.Join(types, " "), tc.types)
			}
			if strings.Join(names, ", ") != strings.Join(copyList, ", ") {
				t.Errorf("%s: Parquet columns %v are not in the COPY column list's order %v", tc.table, names, copyList)
			}
			if f.RowGroups != 1 {
				t.Errorf("%s: %d row groups", tc.table, f.RowGroups)
			}
			// Each file row is the table row with the same id, column by
			// column: the position mapping put every value where it belongs.
			for _, fr := range f.Rows {
				total++
				tr, ok := tableRows[fmt.Sprint(fr["id"])]
				if !ok {
					t.Errorf("%s: file row %v is not in the table", tc.table, fr)
					continue
				}
				for col, fv := range fr {
					if !sameValue(fv, tr[col]) {
						t.Errorf("%s: %s column %s: file %#v, table %#v", tc.table, fr["id"], col, fv, tr[col])
					}
				}
			}
		}
		if total != 6 || len(tableRows) != 6 {
			t.Errorf("%s: %d rows in the files, %d in the table, want 6", tc.table, total, len(tableRows))
		}
	}
}

// sameValue compares a value pyarrow printed as JSON with one pgx read.
func sameValue(file, table any) bool {
	switch tv := table.(type) {
	case nil:
		return file == nil
	case string:
		return file == tv
	case int64:
		f, ok := file.(float64)
		return ok && int64(f) == tv
	case []byte:
		if s, ok := file.(string); ok { // a string column read back as bytes
			return s == string(tv)
		}
		list, ok := file.([]any)
		if !ok || len(list) != len(tv) {
			return false
		}
		for i, v := range list {
			if f, ok := v.(float64); !ok || byte(f) != tv[i] {
				return false
			}
		}
		return true
	}
	return false
}

// download copies an object of the world's bucket into dir.
func (w *world) download(key, dir string) string {
	w.t.Helper()
	out, err := w.s3.GetObject(w.ctx, &s3.GetObjectInput{Bucket: aws.String(w.bucket), Key: aws.String(key)})
	if err != nil {
		w.t.Fatalf("get %s: %v", key, err)
	}
	defer out.Body.Close()
	p := filepath.Join(dir, filepath.Base(key))
	f, err := os.Create(p)
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, out.Body); err != nil {
		w.t.Fatal(err)
	}
	return p
}
