// Package redrive puts dead letters back through their sink after the
// cause was fixed (picomq-connect redrive): it reads a definition's
// dead-letter topics to their end, decides which letters to put back and
// in which batches, runs them through the block's decoding and transforms
// (connect/pipeline) and hands them to the plugin as ABI 1.4 redrive
// batches: the records' original coordinates, plus where each sits in the
// dead-letter topic, which an exactly-once plugin dedupes a redrive on.
// Records rejected again go back to the dead-letter topic with
// pico_redrive_attempts one higher. Running it twice changes nothing
// (docs/runtime.md, "Redrive").
//
// File map: letter.go (one dead letter: its headers, the original record),
// plan.go (the decisions: one letter per source record, batches per
// dead-letter partition in offset order; no I/O), read.go (the
// dead-letter topics of a block, read to their end without a group),
// run.go (delivery, attempts, dead letters again), report.go (the table
// the command prints).
package redrive
