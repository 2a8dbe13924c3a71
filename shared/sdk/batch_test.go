package sdk_test

import (
	"bytes"
	"testing"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

func TestCloneOwnsItsMemory(t *testing.T) {
	payload, key, hk, hv := []byte("payload"), []byte("key"), []byte("h"), []byte("v")
	b := &sdk.Batch{Topic: "t", Records: []sdk.Record{
		{Offset: 1, Key: key, Payload: payload, Headers: []sdk.Header{{Key: hk, Value: hv}}},
		{Offset: 2, Key: nil, Payload: []byte{}},
	}}
	c := b.Clone()
	for _, p := range [][]byte{payload, key, hk, hv} {
		for i := range p {
			p[i] = 0xA5
		}
	}
	r := c.Records[0]
	if string(r.Payload) != "payload" || string(r.Key) != "key" || string(r.Headers[0].Key) != "h" || string(r.Headers[0].Value) != "v" {
		t.Fatalf("clone shares memory: %+v", r)
	}
	if c.Records[1].Key != nil || c.Records[1].Payload == nil {
		t.Fatalf("absent key / empty payload not preserved: %+v", c.Records[1])
	}
	// Appending to one cloned slice must not overwrite its neighbour.
	_ = append(c.Records[0].Key, 'X')
	if !bytes.Equal(c.Records[0].Payload, []byte("payload")) {
		t.Fatal("clone slices overlap")
	}
}

func TestBatchOffsets(t *testing.T) {
	b := &sdk.Batch{}
	if b.FirstOffset() != 0 || b.LastOffset() != 0 {
		t.Fatal("empty batch offsets")
	}
	b.Records = []sdk.Record{{Offset: 5, Payload: []byte("ab")}, {Offset: 9, Payload: []byte("c")}}
	if b.FirstOffset() != 5 || b.LastOffset() != 9 || b.PayloadBytes() != 3 {
		t.Fatal("offsets")
	}
}
