package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	decoding "github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/definition"
)

// numberCodec is a Codec that allocates nothing: the payload's bytes as a
// JSON array of numbers.
type numberCodec struct{}

func (numberCodec) AppendJSON(dst, payload []byte) ([]byte, error) {
	dst = append(dst, '[')
	for i, c := range payload {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(c), 10)
	}
	return append(dst, ']'), nil
}

func binaryRecords(n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "a", Offset: int64(i), Timestamp: time.UnixMilli(1), Value: []byte(fmt.Sprintf("record %d", i))}
	}
	return recs
}

// Decoding a batch into scratch buffers that have grown to a batch's size
// allocates nothing of the runtime's own: the decoded payloads share one
// buffer, reused batch after batch, and the batch's records slice too.
func TestBinaryDecodeAllocatesNothing(t *testing.T) {
	recs := binaryRecords(500)
	var sc scratch
	var dec decoding.Decoder = decoding.Static{Codec: numberCodec{}} // once, as the consumer holds it
	run := func() {
		b, _, _, _, err := decode(context.Background(), definition.SchemaAvro, dec, recs, false, false, nil, &sc)
		if err != nil || len(b.Records) != len(recs) || b.Schema != "json" || string(b.Records[1].Payload) != "[114,101,99,111,114,100,32,49]" {
			t.Fatalf("decode: %v %d %q", err, len(b.Records), b.Records[1].Payload)
		}
	}
	run() // the buffers grow once
	if n := testing.AllocsPerRun(20, run); n != 0 {
		t.Errorf("%v allocations per batch of %d", n, len(recs))
	}
}

// BenchmarkDecodeBinary is decode()'s cost per record for a binary-format
// block whose codec does almost nothing (numberCodec, included in the
// figure): an upper bound on what the decode stage adds around a real
// codec.
func BenchmarkDecodeBinary(b *testing.B) {
	recs := binaryRecords(1000)
	var sc scratch
	var dec decoding.Decoder = decoding.Static{Codec: numberCodec{}} // once, as the consumer holds it
	for b.Loop() {
		if _, _, _, _, err := decode(context.Background(), definition.SchemaAvro, dec, recs, false, false, nil, &sc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}
