// Package preflight checks sink definitions against the plugin libraries
// they name, without opening a sink: picomq-connect --check. Each library
// is loaded once in a picomq-host child, its describe() read and the child
// stopped; each definition's plugin_config, with the environment overrides
// the plugin would read at open, is then checked by the SDK's own rules
// (sdk.CheckConfig): unknown keys, values of the wrong type, required keys
// missing. Each block of a binary schema (avro, proto, flatbuffer) has its
// decoder built as the start builds it (connect/decode/build): a schema
// file its format refuses, or a format the build lacks, is a problem; the
// plugin gets such a block's batches as json, which every plugin takes. A
// block with max_in_flight above 1 whose plugin does not
// declare concurrent_consume is warned about (correct, but the batches
// wait for each other in the plugin). Nothing connects anywhere: what only the plugin's open can judge
// (a table that does not exist, an endpoint, a URI the plugin parses) is
// left to open.
//
// File map: preflight.go.
package preflight
