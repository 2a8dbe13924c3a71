// Package registry decodes payloads written in the Confluent wire format
// (magic byte 0, a 4-byte big-endian schema id, then the format's bytes)
// with schemas fetched from a Schema Registry, over franz-go's pkg/sr.
//
// Use it for a [[topics]] block with schema_registry_url: New makes the
// Client from a Config (URLs, basic auth or a bearer token, a CA bundle, a
// per-request timeout), NewDecoder the decode.Decoder, given the block's
// schema type and the format's Compile (connect/decode/avro,
// connect/decode/proto). The wiring in connect/pipeline does both.
//
// Each schema id is fetched once, with its references resolved
// transitively, compiled once and cached; concurrent records of a new id
// wait for one fetch. What is the record's problem (a *decode.RecordError:
// no header, an unknown id once its grace has passed, a schema of the
// wrong type or that does not compile) and what is transient (the
// registry does not answer, answers 5xx, 429, 401 or 403, or a 404 that is
// not the registry's "not found"; an unknown id for Config.UnknownIDGrace
// after the Decoder first saw it unknown, as a lagging registry replica
// may not have it yet) is decided here, in Client.SchemaByID and
// Decoder.AppendJSON: docs/decode.md "Schema Registry" has the table.
//
// File map: config.go (Config, its redaction and validation, the HTTP
// client with the timeout and CA), client.go (Client: schema by id,
// references, error classification), decoder.go (Decoder: the wire
// header, the per-id cache, Compile).
package registry
