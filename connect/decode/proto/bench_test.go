package protodec_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	protodec "github.com/picomq/heavy-sinks/connect/decode/proto"
)

// BenchmarkPageView decodes the 12-field PageView record of vectors.json
// (strings, int64, Timestamp, double, bool, enum, repeated string: 223
// bytes) into a reused buffer, as the pipeline does per record: "plain"
// takes the wire fast path (fast.go). "unmarshal" is the official
// runtime's part alone of the reference path (dynamicpb, as the codec
// calls it), BenchmarkPageViewReference (fast_test.go) that whole path.
func BenchmarkPageView(b *testing.B) {
	var vectors []vector
	readJSON(b, "vectors.json", &vectors)
	var payload []byte
	for _, v := range vectors {
		if v.Name == "pageview" {
			payload = v.Payload
		}
	}
	c, err := protodec.FromDescriptorSet(descriptorSet(b), "shop.v1.PageView")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("plain", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		var dst []byte
		for b.Loop() {
			if dst, err = c.AppendJSON(dst[:0], payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		var set descriptorpb.FileDescriptorSet
		if err := proto.Unmarshal(descriptorSet(b), &set); err != nil {
			b.Fatal(err)
		}
		files, err := protodesc.NewFiles(&set)
		if err != nil {
			b.Fatal(err)
		}
		d, err := files.FindDescriptorByName("shop.v1.PageView")
		if err != nil {
			b.Fatal(err)
		}
		md := d.(protoreflect.MessageDescriptor)
		opts := proto.UnmarshalOptions{DiscardUnknown: true, AllowPartial: true}
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		for b.Loop() {
			if err := opts.Unmarshal(payload, dynamicpb.NewMessage(md)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
