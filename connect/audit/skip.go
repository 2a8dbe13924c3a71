package audit

import (
	"github.com/picomq/heavy-sinks/connect/definition"
	"github.com/picomq/heavy-sinks/connect/transform"
)

// NewSkipper is what a block leaves out of every destination on purpose,
// decided again for a record read back: a record its transforms drop
// (filter_records, unwrap_envelope's on_null = "drop"; the runtime counts
// it and moves its offset), and an empty payload when the plugin skips
// those (skipEmpty: the Delta sink's skip_empty_payloads). The runtime
// never transforms an empty payload. A binary-format block's transforms
// run on the decoded record, which the audit does not decode: ok is false
// then, and such records count as missing (the caller says so in a note).
func NewSkipper(t *definition.Topic, skipEmpty bool) (skip Skipper, ok bool) {
	xf := t.Transforms
	if xf != nil && t.Schema != definition.SchemaJSON {
		return emptyOnly(skipEmpty), false
	}
	if xf == nil {
		return emptyOnly(skipEmpty), true
	}
	return func(tp TP, r Record) bool {
		if len(r.Value) == 0 {
			return skipEmpty
		}
		m := &transform.Meta{Topic: tp.Topic, Partition: tp.Partition, Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Headers: r.Headers}
		_, keep, err := xf.Apply(nil, r.Value, m)
		// An error is the record's: a dead letter or a stop, never a
		// skip; keep false without one is a drop.
		return err == nil && !keep
	}, true
}

func emptyOnly(skipEmpty bool) Skipper {
	if !skipEmpty {
		return nil
	}
	return func(_ TP, r Record) bool { return len(r.Value) == 0 }
}
