// Package avro compiles an Avro schema into a decode.Codec: one plain Avro
// binary datum (no header, no Confluent prefix) in, one JSON value out,
// following the conventions of docs/decode.md ("JSON produced from each
// format", "Avro").
//
// Use Compile: for a schema given in a definition (avro_schema_json) with
// no references and no reader schema, and from the registry helper with each
// schema id's writer schema, its resolved references and the block's
// optional reader schema.
//
// Decoding is hamba/avro's: its parser and named-type cache read the
// schemas, its SchemaCompatibility checks and resolves writer against
// reader, and its Reader reads every varint, float and length-prefixed
// value. What this package adds is a plan compiled once per schema (plan.go)
// that walks hamba's resolved schema and writes JSON straight into the
// caller's buffer: keys in the schema's field order, logical types exactly,
// no map[string]any per record (hamba's generic decoding costs several
// times more, see the benchmark).
//
// File map: compile.go (Compile: parsing, references,
// resolution), plan.go (the node tree built from a resolved schema),
// defaults.go (the JSON of a reader field's default),
// decode.go (the Codec: walking a datum), format.go (JSON text: decimals,
// dates and times; strings, floats and base64 are connect/internal/jsonw's),
// delta.go (ValueSchema: the type of the JSON, from the same node tree).
package avro
