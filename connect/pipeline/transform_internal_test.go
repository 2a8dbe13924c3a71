package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/transform"
)

// BenchmarkDecode is decode()'s cost per record of a batch of 1000
// 12-field JSON records: the json check alone, and three transforms (which
// replace the check: they parse the payload anyway).
func BenchmarkDecode(b *testing.B) {
	const rec = `{"order_id":"ord-000123456","customer_id":987654,"status":"paid","amount":"1234.50","currency":"EUR",` +
		`"quantity":3,"created_at":"2026-09-03T21:15:04.123Z","updated_at":"2026-09-03T21:16:00.000Z","country":"DE",` +
		`"channel":"web","discount":0.15,"internal_note":"check stock"}`
	recs := make([]*kgo.Record, 1000)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "orders", Offset: int64(i), Timestamp: time.UnixMilli(1788470104123), Key: []byte("k"), Value: []byte(rec),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}
	}
	chain, _, err := transform.Compile([]transform.Spec{
		{Type: transform.AddFields, Fields: []transform.Field{{Name: "ingested_at", Compute: "timestamp_rfc3339"}}},
		{Type: transform.DeleteFields, Paths: []string{"internal_note"}},
		{Type: transform.UpdateFields, Field: "customer_id", RenameTo: "customer"},
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		xf   *transform.Chain
	}{{"check", nil}, {"transforms3", chain}} {
		b.Run(c.name, func(b *testing.B) {
			var sc scratch
			for b.Loop() {
				if _, _, _, _, err := decode(context.Background(), definition.SchemaJSON, nil, recs, false, false, c.xf, &sc); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
		})
	}
}
