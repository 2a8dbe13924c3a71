package deltalog

import (
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

// skippedInReplay are the action keys whose lines replay never decodes.
func skippedInReplay(key []byte, wantCommitInfo bool) bool {
	switch string(key) {
	case KindAdd, KindRemove, KindCDC, KindSidecar:
		return true
	case KindCommitInfo:
		return !wantCommitInfo
	}
	return false
}

// scanJSONActions decodes the non-file actions of newline-delimited JSON
// (a commit file or a V2 JSON checkpoint) and passes them to fn. Lines whose
// key is add/remove/cdc/sidecar (and commitInfo, which replay reads only from
// the latest commit) are recognised from their first bytes and skipped
// without being parsed.
func scanJSONActions(data []byte, fn func(Action) error) error {
	return scanJSONActionsOpt(data, false, fn)
}

func scanJSONActionsOpt(data []byte, wantCommitInfo bool, fn func(Action) error) error {
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data = nextLine(data)
		if len(line) == 0 {
			continue
		}
		if key, ok := actionKey(line); ok && skippedInReplay(key, wantCommitInfo) {
			continue
		}
		a, err := ParseAction(line)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}
