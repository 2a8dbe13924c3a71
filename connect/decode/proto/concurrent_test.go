package protodec_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
	protodec "github.com/picomq/heavy-sinks/connect/decode/proto"
)

// One Codec decodes on several goroutines at once (the batches of several
// partitions): every goroutine gets, for every payload, what one goroutine
// alone got. Run with -race; the first use of each message type (the
// writer's plan, built lazily) races too.
func TestConcurrentDecoding(t *testing.T) {
	var reg registryFile
	readJSON(t, "registry.json", &reg)
	var vectors []vector
	readJSON(t, "vectors.json", &vectors)
	// The registry codec, so that the goroutines use several message
	// types; the plain vectors are message [0], shop.v1.Order.
	payloads := [][]byte{{0x02, 0x0f}} // [1] with a bad payload: a record error
	for _, v := range reg.Vectors {
		payloads = append(payloads, v.Payload)
	}
	for _, v := range vectors {
		if v.Message == "shop.v1.Order" {
			payloads = append(payloads, append([]byte{0x00}, v.Payload...))
		}
	}
	newCodec := func() decode.Codec {
		c, err := protodec.FromSchema(reg.Schema, reg.Refs)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	want := make([][]byte, len(payloads))
	alone := newCodec()
	for i, p := range payloads {
		want[i], _ = alone.AppendJSON(nil, p)
	}
	c := newCodec()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			var dst []byte
			for round := range 50 {
				for i := range payloads {
					i := (i + g + round) % len(payloads) // each goroutine in its own order
					got, err := c.AppendJSON(dst[:0], payloads[i])
					if err != nil && !decode.IsRecordError(err) {
						t.Errorf("payload %d: %v", i, err)
						return
					}
					if (err != nil) != (want[i] == nil) || err == nil && !bytes.Equal(got, want[i]) {
						t.Errorf("payload %d: got %s, %v; want %s", i, got, err, want[i])
						return
					}
					dst = got
				}
			}
		})
	}
	wg.Wait()
}
