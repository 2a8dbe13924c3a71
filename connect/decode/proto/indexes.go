package protodec

import (
	"encoding/binary"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/picomq/heavy-sinks/connect/decode"
)

// messageAt reads the message indexes at the start of payload and returns
// the message of file they name and the bytes after them.
//
// The encoding is Confluent's (Schema Registry docs, "Wire format":
// https://docs.confluent.io/platform/current/schema-registry/fundamentals/serdes-develop/index.html#wire-format;
// the serializers' source: Java io.confluent.kafka.schemaregistry.protobuf.MessageIndexes,
// Python confluent_kafka/schema_registry/common/serde.py SchemaId._read_index_array
// and _encode_varints): a zigzag varint count, then that many zigzag
// varint indexes, the path from the file's top-level messages down through
// nested ones ([1, 0] is the first message nested in the second top-level
// message). The common case [0], the file's first message, is written as
// the single byte 0, that is a count of zero.
func messageAt(file protoreflect.FileDescriptor, payload []byte) (protoreflect.MessageDescriptor, []byte, error) {
	count, n := binary.Varint(payload) // encoding/binary's Varint is zigzag
	if n <= 0 {
		return nil, nil, decode.Recordf("protobuf message indexes: truncated or overlong count")
	}
	payload = payload[n:]
	messages := file.Messages()
	if count == 0 {
		if messages.Len() == 0 {
			return nil, nil, decode.Recordf("protobuf message indexes [0]: the schema has no message")
		}
		return messages.Get(0), payload, nil
	}
	// Each index takes at least one byte: a larger count is garbage, and
	// is refused before any loop runs on it.
	if count < 0 || count > int64(len(payload)) {
		return nil, nil, decode.Recordf("protobuf message indexes: invalid count %d", count)
	}
	var md protoreflect.MessageDescriptor
	for i := int64(0); i < count; i++ {
		index, n := binary.Varint(payload)
		if n <= 0 {
			return nil, nil, decode.Recordf("protobuf message indexes: truncated or overlong index")
		}
		payload = payload[n:]
		if index < 0 || index >= int64(messages.Len()) {
			if md == nil {
				return nil, nil, decode.Recordf("protobuf message index %d (at depth %d): the schema has %d top-level message(s)", index, i, messages.Len())
			}
			return nil, nil, decode.Recordf("protobuf message index %d (at depth %d): %s has %d nested message(s)", index, i, md.FullName(), messages.Len())
		}
		md = messages.Get(int(index))
		messages = md.Messages()
	}
	return md, payload, nil
}
