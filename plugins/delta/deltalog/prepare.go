package deltalog

import (
	"fmt"
	"time"
)

// The pieces PrepareAppend and PrepareCompaction share, so that an append
// and a compaction fill commitInfo and add actions the same way.

// commitDefaults returns now, txnID and engine with their defaults filled
// in: the current time, a fresh UUID and DefaultEngineInfo.
func commitDefaults(now time.Time, txnID, engine string) (time.Time, string, string) {
	if now.IsZero() {
		now = time.Now()
	}
	if txnID == "" {
		txnID = NewUUID()
	}
	if engine == "" {
		engine = DefaultEngineInfo
	}
	return now, txnID, engine
}

// stampCommitInfo sets info.timestamp to now, or to the next in-commit
// timestamp when s has them on (readers show the ICT as the commit time;
// keep both equal). It returns the ICT, 0 when off.
func stampCommitInfo(s *Snapshot, info *CommitInfo, now time.Time) int64 {
	ts := now.UnixMilli()
	var ict int64
	if s.InCommitTimestampEnabled() {
		ict = s.NextInCommitTimestamp(now)
		info.InCommitTimestamp = &ict
		ts = ict
	}
	info.Timestamp = &ts
	return ict
}

// appendAdds appends the add action of each of files (newAdd) to actions.
func appendAdds(actions []Action, s *Snapshot, seen map[string]bool, files []DataFile, now time.Time, dataChange bool) ([]Action, error) {
	for i, f := range files {
		add, err := newAdd(s, seen, i, f, now, dataChange)
		if err != nil {
			return nil, err
		}
		actions = append(actions, add)
	}
	return actions, nil
}

// prepared is the commit of actions at version s.Version+1.
func prepared(s *Snapshot, actions []Action, txnID string, ict int64) (*PreparedCommit, error) {
	data, err := EncodeActions(actions)
	if err != nil {
		return nil, err
	}
	v := s.Version + 1
	return &PreparedCommit{Version: v, Path: CommitPath(v), Data: data, TxnID: txnID, InCommitTimestamp: ict, Actions: actions}, nil
}

// newAdd is the add action for f, the i'th file of a commit made at now,
// after checking f against s and against the paths already in seen (which
// it extends). A missing modificationTime is now; missing partition values
// are an empty map.
func newAdd(s *Snapshot, seen map[string]bool, i int, f DataFile, now time.Time, dataChange bool) (*Add, error) {
	if err := validateDataFile(s, f); err != nil {
		return nil, fmt.Errorf("deltalog: file %d (%q): %w", i, f.Path, err)
	}
	p := AddPath(f.Path)
	if seen[p] {
		return nil, fmt.Errorf("deltalog: file %q appears twice in the commit", f.Path)
	}
	seen[p] = true
	mt := f.ModificationTime
	if mt == 0 {
		mt = now.UnixMilli()
	}
	pv := f.PartitionValues
	if pv == nil {
		pv = PartitionValues{}
	}
	return &Add{Path: p, PartitionValues: pv, Size: f.Size, ModificationTime: mt,
		DataChange: dataChange, Stats: f.Stats, Tags: f.Tags}, nil
}
