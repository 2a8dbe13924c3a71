// Command partitionbench is `make bench-partitions`: the Delta sink through
// picomq-connect on a topic of many partitions, against a real broker.
//
// Steady mode (the default): a topic of -partitions partitions (48), a
// producer writing -rate records/s (3,000) round-robin over them for
// -duration (20 s), and -processes picomq-connect processes (1) in one
// consumer group running a generated definition into one table. Backlog
// mode (-backlog N): the processes join first, then N records are
// produced as fast as the producer goes and the group drains them; with
// -processes 3 this is the three-process race for one table.
//
// The definition's [[topics]] keys come from -batch-length,
// -poll-interval, -max-batch-latency and any number of -topic-key
// name=value (max_in_flight=16 once the runtime has that key); targets are
// -targets file,s3,redshift: a Delta table in a directory or a fresh MinIO
// bucket, or a Redshift table through the emulator (plugins/redshift/rsemu)
// started in this process on a fresh PostgreSQL database, with its cost
// model from -copy-latency and -commit-latency.
//
// It prints records/s (first produce to last commit), produce→commit
// latency per record (p50/p95/p99), Delta table versions per second
// (commit files in _delta_log), the lag each second and at the end of producing, the CPU
// per record of the picomq-connect processes and of their picomq-host
// children (user+sys from /proc), peak RSS (VmHWM), and the Delta sink's
// commits and lost commit races (its commit_conflicts metric, scraped from
// each process's /metrics).
//
// Latency is measured to the group's committed offset: the record's
// produce time (kept per partition and offset from the producer's
// acknowledgement) to the first poll (every 10 ms) that sees the
// partition's committed offset past it. The runtime commits an offset only
// after the table version holding the record is written, so this is the
// moment the record is both in the table and done for the runtime, an
// upper bound on its visibility by at most one commit round trip; it is
// also the same for any sink, where reading Delta's txn actions would work
// for Delta alone.
//
//	go run ./tools/partitionbench -brokers 127.0.0.1:19092 -targets file -duration 20s
//	go run ./tools/partitionbench -targets s3 -processes 3 -partitions 36 -backlog 60000 -batch-length 100
//
// File map: main.go (flags, the run per target, the report), run.go (one
// measured run: processes, producing, draining), target.go (the Delta and
// Redshift targets), produce.go (the producer and each record's produce
// time), commits.go (the committed-offset poller and the latencies).
package main
