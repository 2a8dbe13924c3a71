// Package reflection is the Go code flatc generates from reflection.fbs
// (FlatBuffers v25.12.19, under the Apache License 2.0 in LICENSE here): the
// accessors of the binary schema (.bfbs) format. Do not edit the other
// files: `make generate-flatbuf` writes them (buildscripts/flatbuf.sh).
package reflection
