// Package audit is the reconciliation behind `picomq-connect audit`: for
// each topic-partition a sink consumes, the offsets the broker says were
// consumed (log start to the group's committed offset) against what the
// destination holds, what the dead-letter topic holds and what the sink
// was meant to skip, giving the offsets in none of them (gaps, less what
// the broker itself compacted away) and the offsets held twice
// (duplicates).
//
// It does no I/O: the broker, the destinations and the dead-letter topic
// are behind Broker, Reader and Destination (connect/audit/source reads
// the real ones; tests use fakes). Offsets are kept as run-length ranges
// (Set, Count), so memory grows with the number of holes and duplicates,
// not with the rows: a complete partition of 100 million rows is one
// range.
//
// File map: ranges.go (Set and Count: offsets as sorted disjoint ranges),
// letters.go (dead letters by redrive attempts, the newest kept),
// audit.go (one partition's Reconcile, the report types), skip.go (what a
// block leaves out on purpose: transforms that drop, skipped empty
// payloads), run.go (a sink's blocks, partitions and dead letters read and
// reconciled), text.go (the text and JSON reports).
package audit
