// Package protodec decodes Protobuf payloads into the JSON object the
// plugins take, with the official Go runtime (google.golang.org/protobuf,
// dynamic messages): the reference. Only the JSON writing is this
// package's, over protoreflect, because the proto3 JSON mapping writes
// 64-bit integers as strings and a Delta long column takes a number
// (docs/decode.md "Protobuf" says every rule).
//
// A plain record (no map, no field twice, no unknown field...) takes a
// fast path instead: its wire bytes read with the runtime's own primitives
// (protowire) and written by the same writer, about five times cheaper.
// It hands every other record to the reference path, and FuzzFastPath
// proves it writes what the reference writes (fast.go).
//
// Why dynamicpb as the reference, at about 4 µs per 223-byte record (the
// fast path: 0.8 µs), and not Buf's hyperpb, measured at 1.2 µs behind
// this same codec: hyperpb v0.1.3 crashed the
// process (SIGSEGV, no recover) on a 10-byte record, read 64-bit oneof
// members as 32 bits, accepted bytes the official runtime refuses, and
// links package testing into the binary (docs/decode.md "Cost").
//
// Two kinds of Codec (connect/decode):
//   - FromDescriptorSet: a FileDescriptorSet file and a message name, as
//     the definition's proto_descriptor_set_path and proto_message give
//     them; each payload is the message's plain bytes.
//   - FromSchema: a Schema Registry schema (.proto text, compiled with
//     github.com/bufbuild/protocompile, and its references); each payload
//     is the Confluent wire format's remainder after the schema id: the
//     message indexes, then the message's bytes.
//
// File map: codec.go (Message, FromDescriptorSet, the unmarshalling: fast
// path or reference), fast.go (the wire fast path and its plans),
// schema.go (Schema, FromSchema: compiling registry schemas), builtin.go
// (the files a registry treats as built in: google/type, confluent), indexes.go
// (Confluent message indexes), json.go (the JSON writer), plan.go (what
// the writer works out once per message type), wkt.go (the well-known
// types' JSON), decimal.go (confluent.type.Decimal's JSON and type),
// delta.go (ValueSchema: the type of the JSON).
package protodec
