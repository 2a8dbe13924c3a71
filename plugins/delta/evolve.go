package delta

import (
	"fmt"
	"strings"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Schema evolution (schema_evolution) and the fields the table lacks.
//
// With "none" a top-level field that names no column is skipped, as the
// spec says; the sink counts such fields (fields_ignored) and logs each
// name once per table, so that a silent drop shows. With "add_columns" the
// encoder types those fields from the batch (encode.Encoder.NewColumns);
// the batch is encoded again against the schema with the new columns, and
// the new metaData goes into the same commit as the data: readers never
// see the files without their columns, and a replay of the batch finds
// both committed or neither. A concurrent writer that changes the metaData
// first makes the commit abort (deltalog.ResolveConflict), and table.writeGroup
// rebuilds the batch against the new snapshot: a column the other writer
// added is then simply written, one it added with another type fails the
// records that do not fit it, with the usual value error.

// added counts encoded records of one pass over a batch.
type added struct {
	empty, unmatched int64
	firstUnmatched   uint64
	unmatchedTopic   string // the topic of firstUnmatched (addAll)
}

// add encodes records (b.Records[base:]) into enc. A record that cannot fit
// the table is rejected alone when the host accepts that (ABI 1.1; Add left
// nothing of it behind); otherwise it fails the batch.
func (t *table) add(enc *encode.Encoder, b *sdk.Batch, records []sdk.Record, base int) (added, error) {
	var n added
	for i := range records {
		r := &records[i]
		if b.Rejected(base + i) {
			// The first pass over a batch that adds columns rejected it;
			// the second (against the new schema) keeps that answer.
			continue
		}
		if len(r.Payload) == 0 && t.env.opts.skipEmpty {
			// A tombstone carries nothing to write. The txn action still
			// records the batch's last offset, so a replay skips it too.
			n.empty++
			continue
		}
		if err := t.addRecord(enc, b, r); err != nil {
			if reason, rerr, ok := rejectable(b.Topic, base+i, r.Payload, err); ok && b.Reject(base+i, reason, rerr) {
				continue
			}
			return n, recordError(b.Topic, base+i, r.Payload, err)
		}
		if !enc.Matched() {
			if n.unmatched == 0 {
				n.firstUnmatched = r.Offset
			}
			n.unmatched++
		}
	}
	return n, nil
}

// evolution is a schema change a batch makes: the new metaData, its
// schema, and the columns it adds.
type evolution struct {
	md     *deltalog.Metadata
	schema *deltalog.StructType
	cols   []deltalog.StructField
}

// evolve returns the schema change that adds the columns the batch in enc
// (the group's batches, of topic) calls for, or nil when it calls for none. A field the batch cannot type
// fails the batch (FATAL): the same batch would fail again, and a guessed
// type would stay in the table for good.
// hint, when not nil, types the fields it has (column_types =
// "value_schema", valueschema.go).
func (t *table) evolve(enc *encode.Encoder, topic string, hint *deltalog.StructType) (*evolution, error) {
	fail := func(err error) error {
		return sdk.Fatalf("Schema evolution: topic %q, table %s: %v", topic, t.uri, err)
	}
	cols, err := enc.NewColumnsFrom(t.usableHint(hint, enc.Unknown(), topic))
	if err != nil {
		return nil, fail(err)
	}
	if len(cols) == 0 {
		return nil, nil
	}
	md, err := deltalog.WithColumns(&t.snap.Metadata, cols)
	if err != nil {
		return nil, fail(err)
	}
	schema, err := deltalog.ParseSchema(md.SchemaString)
	if err != nil {
		return nil, fail(err)
	}
	return &evolution{md: md, schema: schema, cols: cols}, nil
}

// added reports the columns a commit added.
func (t *table) added(ev *evolution, topic string, version int64) {
	cols := make([]string, len(ev.cols))
	for i, c := range ev.cols {
		cols[i] = c.Name + " " + c.Type.String()
	}
	t.env.stats.added.Add(int64(len(cols)))
	t.env.log.Info("added columns to the Delta table", "table", t.uri, "topic", topic, "version", version,
		"columns", strings.Join(cols, ", "))
}

// ignored counts the top-level fields the committed records had that name
// no column, and logs each name once per table: a producer's renamed or
// new field would otherwise vanish without a trace.
func (t *table) ignored(fields []encode.UnknownField, topic string) {
	st := t.env.stats
	for _, f := range fields {
		st.ignored.Add(int64(f.Count))
		first, last := st.ignoredNames.first(t.uri + "\x00" + f.Name)
		if !first {
			continue
		}
		if last {
			t.env.log.Warn(fmt.Sprintf("%d ignored field names logged; further ones are only counted in fields_ignored", maxOnceNames),
				"table", t.uri)
		}
		why := "the Delta table has no column of that name (names match case-sensitively); set schema_evolution = \"add_columns\" to add such fields as columns"
		if t.env.opts.addColumns {
			why = "the field was only null so far; its column is added by the first batch that gives it a value"
		}
		t.env.log.Warn("a field of the records is not written: "+why,
			"table", t.uri, "topic", topic, "field", f.Name, "offset", f.FirstOffset, "records", f.Count)
	}
}
