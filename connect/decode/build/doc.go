// Package build makes each [[topics]] block's decode.Decoder from its
// definition: the seam between the runtime and the format packages. Use
// Formats.Decoders at start, after the definitions are checked and before
// any sink runs: it reads the schema files the block names, looks up the
// registry's secrets in the environment, and hands them, as a Block, to the
// constructor of the block's schema. A schema file the format refuses is
// refused here, naming the file, the block and the key, so that a bad
// schema stops the start (and --check), not the first record.
//
// The package knows no format: the shipped binary (cmd/picomq-connect)
// fills a Formats with the constructors of connect/decode/avro,
// connect/decode/proto, connect/decode/flatbuf and connect/registry. A
// schema with no constructor is refused at start, so a build without a
// format says so instead of passing binary payloads on.
//
// File map: build.go (Block, Registry, Format, Formats, Decoders).
package build
