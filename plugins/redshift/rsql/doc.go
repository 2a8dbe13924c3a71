// Package rsql is the Redshift side of the Redshift sink without any I/O:
// which columns a configuration implies, the exact SQL text the sink sends,
// and the check of an existing table's columns as pg_table_def lists them.
//
// Use it to build statements and to judge pg_table_def rows; running them is
// the caller's business (the sink uses pgx). Nothing here imports the plugin
// SDK or a database driver, so every function is testable on its own.
//
// Files:
//
//   - columns.go   the column table: name, Redshift type, type family and
//     byte limit of every column, and the layout a configuration selects
//   - sqltext.go   identifier and literal quoting and the statement builders
//     (CREATE TABLE, LOCK, COPY, COPY ... MANIFEST, the staged-duplicates SELECT,
//     INSERT ... SELECT, DELETE, the pg_table_def query)
//   - upsert.go    write_mode = upsert: the staging table's change columns,
//     key_<field> column names, offsets_<table> (DDL and check), and the
//     statements that apply each key's last change after COPY
//   - manifest.go  the JSON of a COPY manifest
//   - audit.go     the ordered id query picomq-connect audit streams, and
//     the applied-offsets query of an upsert target
//   - tabledef.go  the type-family check of pg_table_def rows, its errors, and
//     the byte limits of the columns actually found
//
// Redshift measures VARCHAR in bytes: a bare VARCHAR is VARCHAR(256) and
// VARCHAR(MAX) is VARCHAR(65535). The limits here are bytes throughout.
package rsql
