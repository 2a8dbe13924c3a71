package deltalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
)

// Action reconciliation (PROTOCOL.md "Action Reconciliation") of the
// table-level actions: the latest protocol and metaData, the latest txn per
// appId, and the live domainMetadata per domain. This is the one
// reconciliation rule for them: a Snapshot (what an appender needs) holds
// only this, and a State (what a checkpoint needs) embeds it and adds the
// file actions (state.go). A blind append does not need the file list, and
// skipping add and remove is what makes a 300k-file log load quickly.

type replayState struct {
	// Protocol and Metadata are promoted into State, whose exported fields
	// they are.
	Protocol    Protocol
	Metadata    Metadata
	hasProtocol bool
	hasMetadata bool
	txns        map[string]Txn
	domains     map[string]DomainMetadata
}

func newReplayState() *replayState {
	return &replayState{txns: map[string]Txn{}, domains: map[string]DomainMetadata{}}
}

// clone copies the state; the actions it holds are shared (never modified).
func (s *replayState) clone() *replayState {
	c := *s
	c.txns = maps.Clone(s.txns)
	c.domains = maps.Clone(s.domains)
	return &c
}

// complete reports whether a protocol and a metaData action were seen.
func (s *replayState) complete() bool { return s.hasProtocol && s.hasMetadata }

// apply folds one action into the state. Actions must arrive in log order
// (checkpoint first, then commits by ascending version). Actions it does not
// reconcile (file actions, commitInfo, checkpoint-only and unknown ones) are
// ignored.
func (s *replayState) apply(a Action) {
	switch a := a.(type) {
	case *Protocol:
		s.Protocol, s.hasProtocol = *a, true
	case *Metadata:
		s.Metadata, s.hasMetadata = *a, true
	case *Txn:
		s.txns[a.AppID] = *a
	case *DomainMetadata:
		if a.Removed {
			delete(s.domains, a.Domain)
		} else {
			s.domains[a.Domain] = *a
		}
	}
}

// A projection is the set of actions one replay wants from a log file:
// the snapshot an appender needs and the full state a checkpoint needs are
// two projections of the same log, read by the same scanner (scanActions)
// and, for commits, the same commit reader (readCommit).
type projection uint8

const (
	// projAll decodes every action (ParseActions, ReadCommits).
	projAll projection = iota
	// projTable decodes the table-level actions a Snapshot reconciles
	// (and checkpointMetadata and unknown ones); add, remove, cdc, sidecar
	// and commitInfo lines are skipped.
	projTable
	// projTableInfo is projTable plus commitInfo (read from the latest
	// commit only, and by IsOurCommit).
	projTableInfo
	// projState is what State reconciles: projTable plus add, remove and
	// sidecar; commitInfo and cdc are skipped. add and remove lines are
	// decoded in one pass straight into their types.
	projState
)

// skips reports whether lines of action key are skipped undecoded.
func (p projection) skips(key []byte) bool {
	switch p {
	case projTable, projTableInfo:
		switch string(key) {
		case KindAdd, KindRemove, KindCDC, KindSidecar:
			return true
		case KindCommitInfo:
			return p == projTable
		}
	case projState:
		return string(key) == KindCommitInfo || string(key) == KindCDC
	}
	return false
}

// scanActions is the one decoder of newline-delimited JSON actions (a
// commit file or a V2 JSON checkpoint): it passes the actions proj wants
// to fn, in file order. Lines proj skips are recognised from their first
// bytes (actionKey) and never parsed — in a large log nearly all lines are
// add lines an appender does not need.
func scanActions(data []byte, proj projection, fn func(Action) error) error {
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		if len(line) == 0 {
			continue
		}
		key, ok := actionKey(line)
		if ok && proj.skips(key) {
			continue
		}
		var a Action
		var err error
		if ok && proj == projState && (string(key) == KindAdd || string(key) == KindRemove) {
			a, err = parseFileAction(line, key)
		} else {
			a, err = ParseAction(line)
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

// parseFileAction decodes an add or remove line in one pass, without the
// generic key map ParseAction builds.
func parseFileAction(line, key []byte) (Action, error) {
	var w struct {
		Add    *Add    `json:"add"`
		Remove *Remove `json:"remove"`
	}
	if err := json.Unmarshal(line, &w); err != nil {
		return nil, fmt.Errorf("deltalog: bad %s action: %w", key, err)
	}
	switch {
	case w.Add != nil && w.Remove == nil:
		return w.Add, nil
	case w.Remove != nil && w.Add == nil:
		return w.Remove, nil
	}
	return nil, errors.New("deltalog: action line must have exactly one key")
}

// readCommit is the one commit reader: it gets the commit file at path and
// scans it under proj. A commit that does not parse is ErrCorruptLog naming
// the file; a failed get is returned as the store reported it (callers
// decide what a missing commit means).
func readCommit(ctx context.Context, store Store, path string, proj projection, fn func(Action) error) ([]byte, error) {
	data, err := store.Get(ctx, path)
	if err != nil {
		return nil, err
	}
	return data, scanCommit(path, data, proj, fn)
}

// scanCommit is readCommit for a commit file already in hand.
func scanCommit(path string, data []byte, proj projection, fn func(Action) error) error {
	if err := scanActions(data, proj, fn); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCorruptLog, path, err)
	}
	return nil
}
