package main

import (
	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/decode/avro"
	"github.com/picomq/heavy-sinks/connect/decode/build"
	protodec "github.com/picomq/heavy-sinks/connect/decode/proto"
	"github.com/picomq/heavy-sinks/connect/definition"
)

// formats are the binary schemas this build decodes, each block's decoder
// made from its definition by connect/decode/build at start (and by
// --check). The format packages (connect/decode/avro, connect/decode/proto,
// connect/decode/flatbuf, and connect/registry for schema_registry_url)
// plug in here; a schema missing from it is refused at start, naming the
// block, rather than handing the plugin bytes it cannot read.
var formats = build.Formats{
	definition.SchemaAvro: {
		Static: func(b build.Block) (decode.Codec, error) { return avro.Compile(b.AvroSchema, nil, "") },
	},
	definition.SchemaProto: {
		Static: func(b build.Block) (decode.Codec, error) {
			return protodec.FromDescriptorSet(b.ProtoDescriptorSet, b.ProtoMessage)
		},
	},
}
