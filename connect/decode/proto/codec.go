package protodec

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/picomq/heavy-sinks/connect/decode"
)

// unmarshal reads a payload into a dynamic message. Unknown fields (a
// producer on a newer schema) are dropped: the JSON has the reader's fields
// only, as protojson would write them. Missing proto2 required fields are
// refused by the JSON writer, which visits every field anyway: the
// runtime's own check (AllowPartial false) walks the message a second time
// and cost a fifth of the decoding. Merge: the message is always new, and
// the Reset that Unmarshal does first would only allocate its maps again.
var unmarshal = proto.UnmarshalOptions{DiscardUnknown: true, AllowPartial: true, Merge: true}

// Message decodes plain protobuf payloads of one message type (no header):
// the schema given in the definition by proto_descriptor_set_path and
// proto_message.
type Message struct {
	desc   protoreflect.MessageDescriptor
	enc    *encoder
	schema []byte // ValueSchema (delta.go)
}

// FromDescriptorSet compiles the message named message (full name, such as
// "shop.v1.Order") of a FileDescriptorSet: the bytes of the file that
// `protoc --include_imports --descriptor_set_out` writes. Every import of
// the message's file must be in the set.
func FromDescriptorSet(set []byte, message string) (*Message, error) {
	var fds descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(set, &fds); err != nil {
		return nil, fmt.Errorf("protobuf descriptor set: %w", err)
	}
	files, err := protodesc.NewFiles(&fds)
	if err != nil {
		return nil, fmt.Errorf("protobuf descriptor set (compiled with --include_imports?): %w", err)
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(message))
	if err != nil {
		return nil, fmt.Errorf("protobuf descriptor set: message %q: %w", message, err)
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, fmt.Errorf("protobuf descriptor set: %q is not a message", message)
	}
	return &Message{desc: md, enc: newEncoder(files), schema: valueSchema(md)}, nil
}

// AppendJSON implements decode.Codec: the payload is the message's bytes.
func (c *Message) AppendJSON(dst, payload []byte) ([]byte, error) {
	return c.enc.decode(dst, c.desc, payload)
}

// decode appends the JSON of payload, a message of md: by the wire fast
// path when it takes the record (fast.go), else by the reference path. On
// an error dst comes back as it was given.
func (e *encoder) decode(dst []byte, md protoreflect.MessageDescriptor, payload []byte) ([]byte, error) {
	if out, ok := e.fast(dst, md, payload); ok {
		return out, nil
	}
	return e.reference(dst, md, payload)
}

// reference unmarshals payload as a message of md with the official
// runtime and appends its JSON: the decoding the fast path must equal.
func (e *encoder) reference(dst []byte, md protoreflect.MessageDescriptor, payload []byte) (out []byte, err error) {
	// The runtime's reflective path, the one dynamic messages take, panics
	// on some malformed input (google.golang.org/protobuf v1.36.12: a map
	// entry whose key comes twice, the second time with the wrong wire
	// type, found by FuzzAppendJSON): bad bytes are the record's problem,
	// never the process's.
	defer func() {
		if p := recover(); p != nil {
			out, err = dst, decode.Recordf("protobuf %s: undecodable payload (%v)", md.FullName(), p)
		}
	}()
	m := dynamicpb.NewMessage(md)
	if err := unmarshal.Unmarshal(payload, m); err != nil {
		return dst, decode.Recordf("protobuf %s: %v", md.FullName(), err)
	}
	if out, err = e.message(dst, e.plans.of(md), m); err != nil {
		return dst, decode.Recordf("protobuf %s: %v", md.FullName(), err)
	}
	return out, nil
}

// newEncoder returns the JSON writer for messages of files: files resolve
// the type URLs of google.protobuf.Any values.
func newEncoder(files *protoregistry.Files) *encoder {
	return &encoder{types: dynamicpb.NewTypes(files)}
}
