// Package metadata holds the pico_* conventions every PicoMQ sink shares:
// the field names for record metadata, the topic:partition:offset record
// id, and how keys and headers are turned into strings. It is the one place
// that builds them: the Redshift encoder appends ids and keys through it,
// the Delta encoder keys and headers (metadata_columns).
//
// Use it wherever a sink adds metadata columns or fields, so that every
// destination spells them the same way and a replayed record gets the same
// id whichever sink wrote it.
package metadata
