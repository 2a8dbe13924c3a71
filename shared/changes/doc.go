// Package changes reads change records for write_mode = "upsert", the same
// way for both sinks: what a record does to its key's row (Upsert or
// Delete), the row it writes and its key. Protocol logic only: no I/O, no
// knowledge of tables; each sink applies the changes to its destination.
//
// Two formats (change_format):
//
//   - op_field: the record is the row plus one member naming the change
//     (op_field, "_op" by default), as the changelog of laminardb's Delta
//     sink: c, r, i, u (any case: I, U, r in laminardb's) upsert, d
//     deletes. The op member is not part of the row written.
//   - debezium: a Debezium change event, bare or inside the JSON
//     converter's {"schema", "payload"}: op c, r, u upsert "after"; d
//     deletes the key of "before" (or of the record key when "before" lacks
//     it); t (truncate) and anything else are record errors.
//
// In both, a tombstone (an empty payload) deletes the key its record key
// names: a JSON object with the key columns (Debezium's key), bare or in
// the converter's envelope. A key column missing or null, or an object or
// array, is a record error (*Error): the sink rejects the record.
//
// Within a batch the last change of a key wins (each sink finds it by its
// key columns' types); across batches, offsets order everything, which
// the sinks' exactly-once bookkeeping already keeps.
//
// File map: changes.go (formats, Parse).
package changes
