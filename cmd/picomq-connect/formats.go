package main

import (
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/decode/avro"
	"github.com/picomq/heavy-sinks/connect/decode/build"
	"github.com/picomq/heavy-sinks/connect/decode/flatbuf"
	protodec "github.com/picomq/heavy-sinks/connect/decode/proto"
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/registry"
)

// formats are the binary schemas this build decodes, each block's decoder
// made from its definition by connect/decode/build at start (and by
// --check). A schema missing from it is refused at start, naming the
// block, rather than handing the plugin bytes it cannot read.
var formats = build.Formats{
	definition.SchemaAvro: {
		Static: func(b build.Block) (decode.Codec, error) { return avro.Compile(b.AvroSchema, nil, "") },
		// With a registry, avro_schema_* is the optional reader schema.
		Registry: func(b build.Block) (decode.Decoder, error) {
			return registryDecoder(b, sr.TypeAvro, func(s registry.Schema) (decode.Codec, error) {
				return avro.Compile(s.Text, s.References, b.AvroSchema)
			})
		},
	},
	definition.SchemaProto: {
		Static: func(b build.Block) (decode.Codec, error) {
			return protodec.FromDescriptorSet(b.ProtoDescriptorSet, b.ProtoMessage)
		},
		Registry: func(b build.Block) (decode.Decoder, error) {
			return registryDecoder(b, sr.TypeProtobuf, func(s registry.Schema) (decode.Codec, error) {
				return protodec.FromSchema(s.Text, s.References)
			})
		},
	},
	definition.SchemaFlatbuffer: {
		Static: func(b build.Block) (decode.Codec, error) {
			return flatbuf.Compile(b.FlatbufferSchema, b.FlatbufferRootType)
		},
	},
}

// registryDecoder is the decoder of a block with schema_registry_url: the
// Confluent wire format, each schema id fetched once and compiled.
func registryDecoder(b build.Block, typ sr.SchemaType, compile registry.Compile) (decode.Decoder, error) {
	r := b.Registry
	cfg := registry.Config{URLs: r.URLs, BearerToken: string(r.BearerToken), TLS: r.TLS, Timeout: r.Timeout}
	if r.User != "" || r.Password != "" {
		cfg.BasicAuth = r.User + ":" + string(r.Password)
	}
	client, err := registry.New(cfg)
	if err != nil {
		return nil, err
	}
	return registry.NewDecoder(client, typ, compile), nil
}
