package redshift_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// pyarrowPayload prints the row count of a Parquet file and the length and
// SHA-256 of its first payload, read with pyarrow.
const pyarrowPayload = `
import hashlib, sys
import pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
p = t.column("payload")[0].as_py()
p = p.encode() if isinstance(p, str) else p
print(t.num_rows, len(p), hashlib.sha256(p).hexdigest())
`

// One record of the largest size a payload column holds (VARBYTE's 16 MiB),
// incompressible, through the real library in a host process of its own:
// the uploaded file is at most 1.05 times the record (no statistics or page
// index carry copies of it), and the host's peak resident set grows by at
// most three times the record over its level after open and a small
// warm-up batch: the host's own copy of the record, the file, and the rest.
// The peak is VmHWM, reset to the current RSS right before the batch, so
// earlier garbage and GC timing do not enter the measurement. pyarrow and
// the emulator's COPY read the file back.
//
// A text record holds at most 65535 bytes, where fixed costs of about a MiB
// (HTTP, SDK, runtime) would dominate; the text case is one chunk of 256
// such records instead, 16 MiB again, held to the same factors.
func TestLargestRecordMemoryAndFileSize(t *testing.T) {
	for _, tc := range []struct {
		name    string
		format  string
		size    int // bytes per record
		records int // in one batch and one chunk
	}{
		{"varbyte", "varbyte", rsql.VarbyteMax, 1},
		{"text", "text", rsql.VarcharMax, 256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t) // a host process of its own
			table := "largest_" + tc.name
			prefix := "largest/" + tc.name
			inst := w.open(table, w.config(map[string]any{"target_table": table, "payload_format": tc.format,
				"archive": true, "s3_prefix": prefix, "batch_size": tc.records}))
			warm := batch("orders.eu", 0, 3)
			warm.Schema = "raw"
			consume(t, inst, warm)

			total := tc.size * tc.records
			big := hostclient.Batch{Attempt: 1, Topic: "orders.eu", Schema: "raw"}
			for i := range tc.records {
				payload := make([]byte, tc.size)
				if _, err := rand.Read(payload); err != nil {
					t.Fatal(err)
				}
				if tc.format == "text" {
					for i, b := range payload { // random printable ASCII: valid text
						payload[i] = ' ' + b%95
					}
				}
				big.Records = append(big.Records, hostclient.Record{Offset: uint64(100 + i), TimestampMs: 1767225600000,
					Key: []byte("k"), Payload: payload})
			}

			pid := w.host.Pid()
			if err := hosttest.ResetPeakMemory(pid); err != nil {
				t.Fatalf("reset the host's peak RSS: %v", err)
			}
			baseKB, _ := hosttest.ProcessMemory(pid)
			consume(t, inst, big)
			_, peakKB := hosttest.ProcessMemory(pid)
			growth := (peakKB - baseKB) * 1024
			t.Logf("%s, %d record(s) of %d bytes: host RSS %d KiB after open and warm-up, peak %d KiB during the batch: growth %.1f MiB = %.2fx the records",
				tc.name, tc.records, tc.size, baseKB, peakKB, float64(growth)/(1<<20), float64(growth)/float64(total))
			if baseKB == 0 || peakKB == 0 {
				t.Fatalf("no memory figures for host %d", pid)
			}

			// The file, as MinIO holds it.
			var key string
			var size int64
			for _, k := range w.objects(prefix + "/archive/") {
				head, err := w.s3.HeadObject(w.ctx, &s3.HeadObjectInput{Bucket: aws.String(w.bucket), Key: aws.String(k)})
				if err != nil {
					t.Fatal(err)
				}
				if n := aws.ToInt64(head.ContentLength); n > size {
					key, size = k, n
				}
			}
			t.Logf("%s: file %s is %d bytes = %.4fx the records", tc.name, key, size, float64(size)/float64(total))
			if limit := int64(total) + int64(total)/20; size > limit {
				t.Errorf("the file is %d bytes for %d bytes of records, want at most %d (1.05x)", size, total, limit)
			}
			if limit := int64(3 * total); growth > limit {
				t.Errorf("the host's peak RSS grew by %d bytes for %d bytes of records, want at most %d (3x)", growth, total, limit)
			}

			// pyarrow reads the file; COPY loaded the rows.
			out := strings.Fields(pyenv.Run(t, pyarrowPayload, w.download(key, t.TempDir())))
			payload := big.Records[0].Payload
			sum := sha256.Sum256(payload)
			if want := []string{fmt.Sprint(tc.records), fmt.Sprint(tc.size), hex.EncodeToString(sum[:])}; strings.Join(out, " ") != strings.Join(want, " ") {
				t.Errorf("pyarrow reads rows, first payload's length, sha256 %v, want %v", out, want)
			}
			col := "payload"
			if tc.format == "text" {
				col = "convert_to(payload, 'UTF8')"
			}
			var got []byte
			if err := w.pg.QueryRow(context.Background(), "SELECT "+col+" FROM "+table+" WHERE id = 'orders.eu:0:100'").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, payload) {
				t.Errorf("the table holds a %d-byte payload that differs from the record", len(got))
			}
			if n := w.count(table); n != 3+tc.records {
				t.Errorf("%s holds %d rows, want %d", table, n, 3+tc.records)
			}
		})
	}
}
