package source

import (
	"context"
	"fmt"
	"slices"

	"github.com/picomq/heavy-sinks/connect/audit"
	"github.com/picomq/heavy-sinks/plugins/redshift"
)

// Redshift is a Redshift sink's tables, read for the audit: every row's id
// (topic:partition:offset), streamed in offset order per partition; for a
// sink with write_mode = "upsert", whose targets keep each key's last
// change only, the applied offset of each partition in offsets_<table>,
// taken as Delta's txn version is (audit.ProofTxn).
type Redshift struct {
	Cfg RedshiftTables
}

// RedshiftTables is what the audit reads of a Redshift sink's tables
// (*redshift.Audit; a fake in tests).
type RedshiftTables interface {
	Table(topic string) (string, error)
	Upsert() bool
	Offsets(table string) string
	IDs(ctx context.Context, table string, topics []string, fn func(topic string, partition int32, offset int64)) (bool, error)
	Applied(ctx context.Context, table string, topics []string, fn func(topic string, partition int32, applied int64)) (bool, error)
}

var _ RedshiftTables = (*redshift.Audit)(nil)

// Scan reads the table of each partition's topic, one query per table.
func (r *Redshift) Scan(ctx context.Context, tps []audit.TP) (map[audit.TP]*audit.Written, []string, error) {
	byTable := map[string][]audit.TP{}
	var tables []string
	for _, tp := range tps {
		name, err := r.Cfg.Table(tp.Topic)
		if err != nil {
			return nil, nil, err
		}
		if byTable[name] == nil {
			tables = append(tables, name)
		}
		byTable[name] = append(byTable[name], tp)
	}
	out := map[audit.TP]*audit.Written{}
	var notes []string
	for _, name := range tables {
		var topics []string
		for _, tp := range byTable[name] {
			out[tp] = &audit.Written{Table: name, Proof: audit.ProofRows, Txn: -1}
			if !slices.Contains(topics, tp.Topic) {
				topics = append(topics, tp.Topic)
			}
		}
		if r.Cfg.Upsert() {
			n, err := r.applied(ctx, name, topics, out)
			if err != nil {
				return nil, nil, err
			}
			notes = append(notes, n...)
			continue
		}
		var stray int64
		exists, err := r.Cfg.IDs(ctx, name, topics, func(topic string, partition int32, offset int64) {
			w, ok := out[audit.TP{Topic: topic, Partition: partition}]
			if !ok || w.Table != name {
				stray++
				return
			}
			w.Rows.Add(offset, offset+1)
		})
		if err != nil {
			return nil, nil, err
		}
		if !exists {
			notes = append(notes, fmt.Sprintf("Redshift table %s does not exist", name))
		}
		if stray > 0 {
			notes = append(notes, fmt.Sprintf("Redshift table %s: %d row(s) of partitions this sink does not consume now: not counted", name, stray))
		}
	}
	return out, notes, nil
}

// applied fills the partitions of an upsert target from its offsets table:
// every offset up to the applied one counts as written. The target keeps
// each key's last change only, so its rows cannot be checked, nor
// duplicates seen; the sink keeps no record of the changes it rejected,
// so their dead letters below the applied offset count as in both.
func (r *Redshift) applied(ctx context.Context, name string, topics []string, out map[audit.TP]*audit.Written) ([]string, error) {
	offsets := r.Cfg.Offsets(name)
	for tp, w := range out {
		if w.Table == name {
			out[tp].Proof = audit.ProofTxn
		}
	}
	var stray int64
	exists, err := r.Cfg.Applied(ctx, name, topics, func(topic string, partition int32, applied int64) {
		w, ok := out[audit.TP{Topic: topic, Partition: partition}]
		if !ok || w.Table != name {
			stray++
			return
		}
		w.Txn = max(w.Txn, applied)
	})
	if err != nil {
		return nil, err
	}
	notes := []string{fmt.Sprintf("Redshift table %s (write_mode = \"upsert\"): only the applied offsets in %s are checked (every offset up to a partition's applied_offset counts as written, its dead letters as in both); the table keeps each key's last change only, so rows, and duplicates, are not", name, offsets)}
	if !exists {
		notes = append(notes, fmt.Sprintf("Redshift table %s does not exist", offsets))
	}
	if stray > 0 {
		notes = append(notes, fmt.Sprintf("Redshift table %s: %d applied offset(s) of partitions this sink does not consume now: not counted", offsets, stray))
	}
	return notes, nil
}
