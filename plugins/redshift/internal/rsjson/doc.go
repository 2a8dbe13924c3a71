// Package rsjson says whether Redshift's JSON_PARSE would accept a payload,
// before the sink uploads it: use it wherever a payload is headed for a
// SUPER column through JSON_PARSE (payload_format = "super").
//
// The grammar is encoding/json's (json.Valid); on top of it come the rules
// Redshift documents for JSON_PARSE under its default settings ("Parsing
// options for SUPER" and "Limitations" of the SUPER type): valid UTF-8, no
// attribute name twice in one object (json_parse_dedup_attributes off), no
// string value over 65535 bytes (json_parse_truncate_strings off), and
// arrays and objects nested at most 1000 deep. One rule is the sink's own
// reading: no string holding U+0000, since SUPER strings are VARCHARs and
// a VARCHAR cannot store NUL. It imports nothing of the sink.
package rsjson
