package deltalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Creating a table. A table this package creates comes into being with its
// first append: version 0 holds commitInfo, protocol, metaData, the txn and
// the adds in one commit, put-if-absent like any other. So there is never
// an empty table, and the append is exactly-once as every other one is.
// Two writers creating the same table race for version 0; the loser takes
// the winner's table when its definition (schema, partition columns,
// configuration) is the one it meant to create, and commits its append on
// top of it; otherwise it stops with a *CreateConflictError.

// NewTable returns the snapshot of a table that does not exist yet: version
// -1, with the protocol (NewTableProtocol) and metaData (a fresh table id)
// that CommitAppend writes into version 0 together with the first append.
// The schema must be one this package's writer can append to.
func NewTable(schema *StructType, partitionColumns []string, configuration map[string]string, now time.Time) (*Snapshot, error) {
	ss, err := MarshalSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("deltalog: new table: %w", err)
	}
	if partitionColumns == nil {
		partitionColumns = []string{}
	}
	if configuration == nil {
		configuration = map[string]string{}
	}
	created := now.UnixMilli()
	p := NewTableProtocol(schema)
	m := Metadata{
		ID:               NewUUID(),
		Format:           Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString:     ss,
		PartitionColumns: slices.Clone(partitionColumns),
		CreatedTime:      &created,
		Configuration:    maps.Clone(configuration),
	}
	if err := CheckWritable(p, m); err != nil {
		return nil, err
	}
	st := newReplayState()
	st.apply(&p)
	st.apply(&m)
	s, err := newSnapshot(-1, -1, st, nil, LoadOptions{})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// IsNew reports whether s is a table that does not exist yet (NewTable):
// the next commit creates it.
func (s *Snapshot) IsNew() bool { return s.Version < 0 }

// ErrCreateConflict is matched by *CreateConflictError.
var ErrCreateConflict = errors.New("deltalog: the table was created by another writer with another definition")

// CreateConflictError reports that the table a commit was to create exists,
// created by another writer with another definition than ours: the files
// written for our definition may not fit it. Existing is that table.
type CreateConflictError struct {
	Existing *Snapshot
	Detail   string // what differs
}

func (e *CreateConflictError) Error() string {
	return fmt.Sprintf("deltalog: the table was created by another writer (table id %s, version %d) with another definition: %s",
		e.Existing.Metadata.ID, e.Existing.Version, e.Detail)
}

func (e *CreateConflictError) Is(target error) bool { return target == ErrCreateConflict }

// DefinitionDiff says how two tables' definitions differ — schema,
// partition columns, configuration: what the data files of an append are
// written for — or "" when they are the same.
func DefinitionDiff(a, b *Snapshot) string {
	sa, errA := MarshalSchema(a.Schema)
	sb, errB := MarshalSchema(b.Schema)
	switch {
	case errA != nil || errB != nil || sa != sb:
		return fmt.Sprintf("schema %s, not %s", b.Schema, a.Schema)
	case !slices.Equal(a.PartitionColumns, b.PartitionColumns):
		return fmt.Sprintf("partition columns %q, not %q", b.PartitionColumns, a.PartitionColumns)
	case !maps.Equal(a.Metadata.Configuration, b.Metadata.Configuration):
		return fmt.Sprintf("configuration %v, not %v", b.Metadata.Configuration, a.Metadata.Configuration)
	}
	return ""
}

// adopt returns existing in place of the new table s when it has s's
// definition, so that the append prepared for s goes on top of it;
// otherwise a *CreateConflictError.
func adopt(s, existing *Snapshot) (*Snapshot, error) {
	if d := DefinitionDiff(s, existing); d != "" {
		return nil, &CreateConflictError{Existing: existing, Detail: d}
	}
	return existing, nil
}

// createdSnapshot is the snapshot at version 0 of the table another writer
// created: its commit, read back after our put of version 0 lost.
func createdSnapshot(c Commit, opts LoadOptions) (*Snapshot, error) {
	if c.Version != 0 {
		return nil, fmt.Errorf("deltalog: commit %d is not a table's first", c.Version)
	}
	st := newReplayState()
	var info *CommitInfo
	for _, a := range c.Actions {
		if ci, ok := a.(*CommitInfo); ok && info == nil {
			info = ci
		}
		st.apply(a)
	}
	if !st.complete() {
		return nil, fmt.Errorf("%w: no protocol or metaData action in version 0", ErrCorruptLog)
	}
	s, err := newSnapshot(0, -1, st, info, opts)
	if err != nil {
		return nil, err
	}
	return s.withHead(c.Data), nil
}

// beforeCreate is the check CommitAppend makes before it puts version 0 of
// a new table: the log must still be empty. It returns the table created
// since s was made, if any (even one whose version 0 log cleanup has
// removed: put-if-absent would not protect it), else nil.
func beforeCreate(ctx context.Context, store Store, s *Snapshot) (*Snapshot, error) {
	existing, err := Load(ctx, store, &s.opts)
	if errors.Is(err, ErrNoTable) {
		return nil, nil
	}
	return existing, err
}

// createdElsewhere decides what becomes of an append that was to create
// the table when another writer created it first: it goes on top of that
// table when the definitions match (adopt). An append that adds columns
// (its Metadata, derived from the new table's) is aborted whatever the
// definitions, like any append whose winner changed the metadata: the
// columns must be worked out again against the existing table. So is one
// marked NoAdopt (an upsert's: its changes must be merged into that table).
//
// An append whose application transaction the existing table already
// records at an older version is aborted too: its batch was filtered
// against no table, so it holds records that table has (a slow earlier
// delivery created it); rebuilt against it, they are skipped. The same
// case on an existing table is ResolveConflict's ConcurrentTxnError.
func createdElsewhere(s, existing *Snapshot, c *AppendCommit) (*Snapshot, error) {
	if c.Metadata != nil || c.NoAdopt {
		return nil, &ConcurrentModificationError{Version: existing.Version, Action: KindMetadata}
	}
	for _, a := range c.apps() {
		if v, ok := existing.TxnVersion(a.ID); ok && v < a.Version {
			return nil, &ConcurrentTxnError{Version: existing.Version, AppID: a.ID, AppVersion: v}
		}
	}
	return adopt(s, existing)
}
