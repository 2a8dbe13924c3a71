// Package rsparquet encodes the rows of one Redshift COPY as a Parquet file,
// and refuses records that can never fit the table before anything is
// encoded or uploaded.
//
// Use Check on a batch first, then an Encoder per chunk. The file's columns
// are exactly the rsql.Layout's, in its order, because Redshift's COPY maps
// Parquet columns to the COPY column list by position, not by name.
//
// Files:
//
//   - encode.go  the Parquet schema of a layout and the Encoder, which writes
//     the file itself (format types and thrift from parquet-go): zstd, v1
//     data pages, PLAIN and dictionary encodings, one row group, column
//     statistics without payload bounds; each payload is compressed straight
//     from the record into a file buffer sized up front
//   - fit.go     Check and RecordError: byte limits per column, UTF-8 and NUL
//     checks for text payloads
//
// Nothing here does I/O or imports the plugin SDK.
package rsparquet
