package connect_test

import (
	"testing"
	"time"
)

// Chaos parameters: small enough for a 2-core machine in about two
// minutes, large enough that every kill lands among batches in flight.
const (
	chaosPerTopic   = 2000                   // records produced to each topic
	chaosChunk      = 40                     // records per produce call
	chaosChunkPause = 500 * time.Millisecond // so production lasts ~25 s
	chaosKills      = 4                      // kill -9 moments during production
)

// The end-to-end promise, against a real Apache Kafka broker:
// records produced to three topics (one with two partitions) while
// picomq-connect runs two definitions, Delta on MinIO with a per-topic
// table template and Redshift through the emulator, and while the runtime
// and its host children are killed with SIGKILL at random moments and
// MinIO and the PostgreSQL behind the emulator are restarted once each,
// all land in each destination exactly once, and both groups' committed
// offsets reach the end offsets; `picomq-connect audit` then finds nothing
// missing and nothing twice.
func TestChaosBothSinksExactlyOnce(t *testing.T) {
	r := newChaosRig(t, map[string]int32{"alpha": 1, "beta": 1, "gamma": 2})
	deltaGroup := r.writeDeltaDef(chaosBlock{batchLength: 200, pollInterval: "100ms"})
	rsGroup := r.writeRedshiftDef(chaosBlock{batchLength: 500, pollInterval: "200ms"})
	r.start(1)
	produced := r.produce(chaosPerTopic, chaosChunk, chaosChunkPause)
	r.chaos(time.Duration(chaosPerTopic/chaosChunk)*chaosChunkPause, chaosKills)
	if err := <-produced; err != nil {
		t.Fatalf("producing: %v", err)
	}
	t.Logf("production and chaos done at %v", time.Since(r.began).Round(time.Millisecond))
	ends := r.settle(deltaGroup, rsGroup)
	r.checkDelta(chaosPerTopic)
	r.checkRedshift(chaosPerTopic)
	r.checkOffsets(ends, deltaGroup, rsGroup)
	r.checkAudit()
}

// Many partitions, several processes: one 12-partition topic consumed by
// three picomq-connect processes in one group per sink, each block with
// batches of several partitions in flight (max_in_flight), up to three of
// one partition pipelined (max_in_flight_per_partition), and a latency
// bound, the Delta sink committing them as group commits (spaced by
// group_commit_linger) with compaction on, the Redshift sink loading them as group loads; runtimes and hosts
// killed with SIGKILL, MinIO and PostgreSQL restarted. Every record lands
// exactly once in both, the groups' offsets reach the ends, some Delta
// commit holds several partitions' txn actions, compaction ran, no file
// compaction removed is still referenced, and DuckDB reading the live files
// our own replay of the log names sees the rows delta-rs sees.
func TestChaosManyPartitionsGroupCommits(t *testing.T) {
	const perTopic, chunk, pause, kills = 6000, 200, 800 * time.Millisecond, 6
	r := newChaosRig(t, map[string]int32{"orders": 12})
	deltaGroup := r.writeDeltaDef(chaosBlock{batchLength: 100, pollInterval: "100ms",
		extraTopic:  "max_in_flight = 12\nmax_in_flight_per_partition = 3\nmax_batch_latency = \"300ms\"",
		extraConfig: "compaction = true\ncompaction_min_files = 4\ncompaction_idle = \"0s\"\ngroup_commit_linger = \"300ms\""})
	rsGroup := r.writeRedshiftDef(chaosBlock{batchLength: 100, pollInterval: "200ms",
		extraTopic: "max_in_flight = 12\nmax_in_flight_per_partition = 3\nmax_batch_latency = \"500ms\""})
	r.connectArgs = []string{"--log-level", "debug"} // for checkPipelined
	r.start(3)
	produced := r.produce(perTopic, chunk, pause)
	r.chaos(time.Duration(perTopic/chunk)*pause, kills)
	if err := <-produced; err != nil {
		t.Fatalf("producing: %v", err)
	}
	ends := r.settle(deltaGroup, rsGroup)
	r.checkDelta(perTopic)
	r.checkRedshift(perTopic)
	r.checkOffsets(ends, deltaGroup, rsGroup)
	r.checkDeltaLog(perTopic)
	r.checkPipelined("chaos_delta", "chaos_redshift")
	r.checkAudit()
}
