// Package connect holds the end-to-end tests of the picomq-connect runtime
// with the real plugins: records produced to an in-process Kafka-protocol
// broker (franz-go's kfake), consumed by connect/pipeline, written by the
// real .so in a child C host, and read back by an independent reader
// (delta-rs). TestChaosBothSinksExactlyOnce runs the built picomq-connect
// command against the real Apache Kafka broker services.sh starts, with
// MinIO and PostgreSQL instances of its own that it restarts.
// TestDecodeAndTransformsOnRealBroker runs it on Avro and Protobuf payloads
// encoded in Python (testdata/decode: fastavro, protoc and the official
// protobuf runtime) and on transforms, into Delta and Redshift. Run with
// `make e2e` after buildscripts/build.sh.
package connect
