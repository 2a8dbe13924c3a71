package deltalog

import (
	"fmt"
	"maps"
)

// Action reconciliation (PROTOCOL.md "Action Reconciliation") for the parts
// of table state an appender needs: the latest protocol and metaData, the
// latest txn per appId, and the live domainMetadata per domain. add and
// remove actions are never kept — a blind append does not need the file
// list, and skipping them is what makes a 300k-file log load quickly.

type replayState struct {
	protocol *Protocol
	metadata *Metadata
	txns     map[string]Txn
	domains  map[string]DomainMetadata
}

func newReplayState() *replayState {
	return &replayState{txns: map[string]Txn{}, domains: map[string]DomainMetadata{}}
}

func (s *replayState) clone() *replayState {
	return &replayState{
		protocol: s.protocol,
		metadata: s.metadata,
		txns:     maps.Clone(s.txns),
		domains:  maps.Clone(s.domains),
	}
}

// apply folds one action into the state. Actions must arrive in log order
// (checkpoint first, then commits by ascending version).
func (s *replayState) apply(a Action) {
	switch a := a.(type) {
	case *Protocol:
		s.protocol = a
	case *Metadata:
		s.metadata = a
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
