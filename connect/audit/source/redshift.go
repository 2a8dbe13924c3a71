package source

import (
	"context"
	"fmt"
	"slices"

	"github.com/picomq/heavy-sinks/connect/audit"
	"github.com/picomq/heavy-sinks/plugins/redshift"
)

// Redshift is a Redshift sink's tables, read for the audit: every row's id
// (topic:partition:offset), streamed in offset order per partition.
type Redshift struct {
	Cfg *redshift.Audit
}

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
