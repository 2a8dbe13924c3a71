// Package ckptfile is the Parquet side of Delta checkpoint files: the
// bytes, not the protocol. deltalog decides which actions a checkpoint
// holds and what their fields mean; this package lays that schema out as
// Parquet, writes rows into it, finds the columns by name whatever the
// writer (Spark, delta-rs, the kernel, deltalog itself) called its list and
// map groups, decodes them, fetches only the byte ranges a projection
// needs, and puts a file together from encoded row groups (which
// deltalog's checkpoint cache keeps from one checkpoint to the next). It
// knows nothing of Delta actions.
//
// Writing is one row writer: the caller declares the schema as a tree of
// Fields (NewSchema), starts each row at its action's top-level field
// (Encoder.Begin), fills that field's leaves in order through Row, and
// ends it (Encoder.End); the encoder fills in the other actions' nulls,
// levels and physical types, and returns the file (Close) or its row
// groups and footer (Finish) for Assemble.
//
// Reading is one row decoder: each wanted leaf column of a row group is
// read on its own into Cells (its non-null values with their rows), and a
// Cursor per column walks them while the caller assembles its rows in
// ascending order. A column the file lacks (nil Leaf) reads as no cells.
//
// File map:
//
//	doc.go     this overview
//	schema.go  Field, Kind, Schema: the caller's field tree laid out as a
//	           Parquet schema (column indexes, levels, Parquet types)
//	row.go     Row: one row's values, leaf by leaf (levels, nulls, maps,
//	           lists, decimals)
//	encoder.go Encoder: rows into an in-memory Parquet file with one fixed
//	           encoding; the file, or its row groups and footer
//	decimal.go SignedFixedLenByteArrayType: wide decimals ordered as
//	           numbers, not bytes
//	lookup.go  Lookup: the one column lookup (a leaf only at the repetition
//	           depth its decoder reads)
//	cells.go   Cells of a leaf column, Cursor and MapCursor over them,
//	           MapPresence (which rows have a map)
//	ranged.go  RangedReaderAt: ranged GETs of the wanted column chunks
//	rowgroup.go RowGroup: encoded pages and chunk metadata, appended to
//	           one another (statistics merged); Assemble: the file's framing
//	           and footer; DecodeFooter: a file's footer read back
package ckptfile
