package transform_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/connect/transform"
)

// record is a 12-field order, about the workload's record.
const record = `{"order_id":"ord-000123456","customer_id":987654,"status":"paid","amount":"1234.50","currency":"EUR",` +
	`"quantity":3,"created_at":"2026-09-03T21:15:04.123Z","updated_at":"2026-09-03T21:16:00.000Z","country":"DE",` +
	`"channel":"web","discount":0.15,"internal_note":"check stock"}`

// BenchmarkChain3 is the cost per record of three transforms: a field
// added from the record's timestamp, one deleted, one renamed.
func BenchmarkChain3(b *testing.B) {
	c := chainOf(b,
		transform.Spec{Type: transform.AddFields, Fields: []transform.Field{{Name: "ingested_at", Compute: "timestamp_rfc3339"}}},
		transform.Spec{Type: transform.DeleteFields, Paths: []string{"internal_note"}},
		transform.Spec{Type: transform.UpdateFields, Field: "customer_id", RenameTo: "customer"},
	)
	payload := []byte(record)
	var dst []byte
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, _, err = c.Apply(dst[:0], payload, &meta); err != nil {
			b.Fatal(err)
		}
	}
}
