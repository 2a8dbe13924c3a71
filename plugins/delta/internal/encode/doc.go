// Package encode turns batches of JSON records into Parquet data files for
// an existing Delta table: the Delta sink's hot path, between the runtime's
// payloads and the object store.
//
// Use it once per table: build an Encoder from the table's schema and
// partition columns (and a new one when either changes), Add every record
// of a batch, then Flush. Flush writes one snappy Parquet file per
// partition value tuple and returns, per file, what an add action needs:
// path, partition values, size, record count and stats. Uploading the files
// and committing belong to the caller (the sink, with deltalog).
//
//	enc, err := encode.New(snap.Schema, snap.PartitionColumns, encode.Options{Configuration: conf})
//	for _, r := range batch {
//		if err := enc.Add(r.Payload, r.Offset); err != nil { enc.Reset(); return err }
//	}
//	files, err := enc.Flush(func(t *encode.Target) (io.Writer, error) { return bufFor(t.Path), nil })
//
// # How
//
// Records are decoded schema-driven, in one pass, straight into per-leaf
// column buffers (definition/repetition levels plus typed values), with the
// sink's coercions applied on the way; nothing becomes a map[string]any.
// Flush hands each file's slice of the buffers to parquet-go's column
// writers and feeds deltalog's StatsCollector from the same buffers.
// Buffers are kept across batches.
//
// # Coercions (the spec's table, and the decisions where it is silent)
//
//   - string: a JSON string as decoded; any other value as its JSON text,
//     whitespace between tokens removed, everything else as sent
//     (`{ "a" : 1.50 }` becomes `{"a":1.50}`).
//   - timestamp, timestamp_ntz: RFC 3339 with a zone ('T', 't' or ' '
//     before the time, 'Z'/'z' or ±HH:MM) is converted to UTC microseconds;
//     the same without a zone ("2026-09-03 21:15:04[.f…]" or
//     "2026-09-03T21:15:04[.f…]") is read as UTC, both separators giving
//     the same instant; fractions beyond microseconds are truncated, and
//     the columns whose values lost a non-zero digit are listed by
//     Encoder.Truncated for the caller to count and report; an
//     integer is kept as microseconds (integral forms like 1.5e6 too);
//     anything else fails with `cannot parse "…" as a timestamp`. Both
//     types follow the same rules.
//   - long, integer, short, byte: JSON numbers only, range checked; an
//     integral number written with a fraction or exponent (5.0, 1e3) is
//     accepted, a fractional one (5.5) is a type mismatch, a string is a
//     type mismatch.
//   - float, double: JSON numbers, parsed exactly as strconv does; a
//     number beyond the type's range fails. JSON has no NaN or Infinity:
//     the strings "NaN", "Infinity" and "-Infinity" (Spark's and delta-rs'
//     spellings, exactly) are taken for them, any other string fails.
//     Stats leave such a column's min/max out (deltalog.StatsCollector).
//   - boolean: true/false only.
//   - binary: a base64 string, standard or URL alphabet, padding optional.
//   - date: "YYYY-MM-DD", or an integer number of days since 1970-01-01.
//   - decimal(p,s): a JSON number or a numeric string ([+-]digits[.digits]
//     [e±n]), converted exactly (never through a float) and never rounded:
//     nonzero digits beyond scale s fail (ErrInexact), trailing zeros
//     beyond it are exact ("1.2340" into scale 3 is 1.234); more than p
//     digits fails (ErrOutOfRange). Both name the field and the value.
//   - struct: a JSON object walked the same way. array: a JSON array,
//     elements walked. map: a JSON object, one entry per member, keys
//     parsed as the key type (map keys must be primitive).
//   - null is never coerced: null, or a missing field, in a non-nullable
//     position fails naming it; in a nullable one it is null.
//   - Columns the encoder fills (Options.Metadata, Options.Derive; see
//     fill.go) take no value from the payload: a payload field of that name
//     is skipped like one the table lacks.
//   - Fields the table lacks are skipped (still validated as JSON); so are
//     values of void columns, which Delta never writes. Field names match
//     exactly (case-sensitive); Matched reports a record none of whose
//     top-level fields named a column.
//   - Duplicate keys in an object: the last one wins, as in encoding/json
//     and serde_json. In a map column duplicate keys are kept as separate
//     entries, in order.
//   - Strict RFC 8259 JSON: invalid UTF-8 is an error, a lone UTF-16
//     surrogate escape decodes to U+FFFD, nesting is limited to 1000.
//
// # Errors
//
// Add returns a *RecordError (errors.Is(err, ErrInvalidRecord)) naming the
// record (its index in the batch and its offset) and the field path
// ("a.b", "tags[2]", "attrs[k]"); offending values are quoted and cut at 64
// bytes. A failed record leaves nothing buffered. When a record both breaks
// a type rule and is not valid JSON, the JSON error is reported.
//
// # Files
//
// Parquet v1 data pages, snappy, PLAIN encoding (RLE_DICTIONARY for strings
// and binary with Options.DictionaryEncoding; never DELTA_LENGTH_BYTE_ARRAY),
// the table's column order, one row group. Types per PROTOCOL.md's mapping:
// byte/short as INT32 with INT(8/16), date INT32 DATE, timestamps INT64
// TIMESTAMP(MICROS) adjusted to UTC or not, decimals INT32/INT64/
// FIXED_LEN_BYTE_ARRAY by precision, 3-level LIST, MAP with key_value,
// nullable as optional. Partition columns are not stored in the files.
//
// Partition values are serialized by deltalog.SerializePartitionValue, the
// directory built by deltalog.PartitionDir (Hive escaping) and statistics
// computed by deltalog.StatsCollector, so the sink has one implementation
// of each rule.
//
// # File map
//
//	encoder.go  Encoder, Options, New, Add, Matched, Len, BufferedBytes, Reset
//	flush.go    Flush, Target, File: per-partition files, column values to parquet-go
//	decode.go   the schema-driven decoder and the coercions
//	scan.go     JSON lexing: strings, numbers, skipping and validating values
//	number.go   exact decimals, integer fast path, 128-bit helpers
//	timefmt.go  date and timestamp parsing
//	truncated.go timestamps cut to microseconds, per column (Truncated)
//	schema.go   deltalog schema -> decoder nodes, levels and leaf columns
//	column.go   slot-aligned column buffers
//	parquet.go  the Parquet schema (ordered groups; decimals as checkpoint
//	            stats have them: ckptfile.DecimalNode), encodings
//	codec.go    snappy at s2's default speed
//	partition.go grouping records by partition values
//	fill.go     columns filled by the encoder: pico_* metadata (Options.
//	            Metadata, AddRecord's Meta) and derived columns
//	derive.go   Derivation, ParseDerivations, UTC calendar fields
//	stats.go    feeding deltalog's StatsCollector from the buffers
//	errors.go   RecordError, ErrorKind
//	unknown.go  top-level fields that name no column: Unknown, NewColumns
//	merge.go    Merge: compaction's rewrite of several files into one, every
//	            value decoded and encoded again, stats collected anew
//	splice.go   Splice: compaction's fast path, the files' data pages copied
//	            as they are into one row group
//	keys.go     Keys (write_mode = upsert): change keys coerced to their
//	            columns' types and rendered for comparison; Filter, a file
//	            rewritten without the rows of given keys
package encode
