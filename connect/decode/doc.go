// Package decode is the runtime's decode stage, between the Kafka consumer
// and the plugin: it turns one record's payload, written in the block's
// schema (avro, proto, flatbuffer), into the JSON object the plugins take.
// The plugins never see the binary formats: a batch decoded here reaches
// consume() as schema "json".
//
// Use it through Decoder. A format package (connect/decode/avro,
// connect/decode/proto, connect/decode/flatbuf) compiles one schema into a
// Codec; a Decoder picks the Codec for each payload: always the same one
// for a schema given in the definition (Static), or the one of the schema
// id in the payload's Confluent wire-format header (connect/registry).
//
// Errors come in two kinds, decided here once: a *RecordError is that
// record's problem (wrong magic byte, an id the registry does not know,
// truncated or undecodable bytes) and goes to the dead-letter topic under
// errors_tolerance = "all", or stops the consumer naming the offset; any
// other error (a registry that does not answer) says nothing about the
// record, and the pipeline delivers the batch again later.
//
// A Codec that is Described (or PayloadDescribed) also says the type of the
// JSON it writes (its value schema, the neutral form the ABI carries with a
// batch); the
// pipeline asks the Decoder (a Describer) per record and MergeSchemas a
// batch decoded with several.
//
// File map: decode.go (Codec, Decoder, Static, RecordError), describe.go
// (Described, Describer, Type, MergeSchemas: value schemas).
package decode
