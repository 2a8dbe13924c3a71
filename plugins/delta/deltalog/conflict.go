package deltalog

import (
	"errors"
	"fmt"
	"slices"
)

// Conflict resolution for a blind append that lost the race for a version
// (pure logic: the caller reads the winning commits). A blind append reads
// no data, so concurrent adds, removes, CDC files and domain changes never
// invalidate it. What does:
//
//   - a winner that changed protocol or metaData: the files were written
//     against a table definition that may no longer hold — abort;
//   - a winner that recorded our application transaction at our version or
//     later: the batch is already in the table — stop, successfully;
//   - a winner that recorded our application transaction at an earlier
//     version: some of our records may be in it (a replay that the runtime
//     re-batched differently) — abort, so the caller filters the batch again
//     against the new snapshot instead of appending the overlap twice;
//   - a winner that is our own commit (same commitInfo.txnId): an earlier
//     attempt landed after all — done.
//
// Anything else: retry at the version after the last winner.

// Resolution is the verdict of ResolveConflict.
type Resolution int

const (
	// ResolutionRetry: rebuild the commit at the next free version.
	ResolutionRetry Resolution = iota + 1
	// ResolutionCommitted: one of the winners is our own commit.
	ResolutionCommitted
	// ResolutionAlreadyCommitted: a winner recorded our appId at our
	// version or later; nothing more to write.
	ResolutionAlreadyCommitted
	// ResolutionAbort: a winner changed protocol or metadata; Err says which.
	ResolutionAbort
)

func (r Resolution) String() string {
	switch r {
	case ResolutionRetry:
		return "retry"
	case ResolutionCommitted:
		return "committed"
	case ResolutionAlreadyCommitted:
		return "already-committed"
	case ResolutionAbort:
		return "abort"
	}
	return "unknown"
}

// ConflictResult is returned by ResolveConflict.
type ConflictResult struct {
	Resolution Resolution
	// Version is the winning commit that decided the result (for Retry, the
	// last winner: retry at Version+1).
	Version int64
	// Err is set for ResolutionAbort (a *ConcurrentModificationError).
	Err error
}

// ErrConcurrentModification is matched by *ConcurrentModificationError.
var ErrConcurrentModification = errors.New("deltalog: concurrent commit changed the table definition")

// ConcurrentModificationError names the winning commit and the action that
// makes our pending append invalid.
type ConcurrentModificationError struct {
	Version int64
	Action  string // "protocol" or "metaData"
}

func (e *ConcurrentModificationError) Error() string {
	return fmt.Sprintf("deltalog: concurrent commit %d changed the table's %s; the batch must be rebuilt against the new snapshot", e.Version, e.Action)
}

func (e *ConcurrentModificationError) Unwrap() error { return ErrConcurrentModification }

// ConcurrentTxnError: a concurrent commit advanced our application
// transaction without covering our whole batch. It matches
// ErrConcurrentModification: the batch must be rebuilt.
type ConcurrentTxnError struct {
	Version    int64 // the winning commit
	AppID      string
	AppVersion int64 // the application version it recorded
}

func (e *ConcurrentTxnError) Error() string {
	return fmt.Sprintf("deltalog: concurrent commit %d recorded application transaction %q at %d; the batch must be filtered again", e.Version, e.AppID, e.AppVersion)
}

func (e *ConcurrentTxnError) Unwrap() error { return ErrConcurrentModification }

// ResolveConflict decides what a pending blind append — identified by its
// application transaction (appID may be "" for none) and commitInfo txnID —
// does after losing a race to winners (ascending, contiguous commits).
func ResolveConflict(appID string, appVersion int64, txnID string, winners []Commit) ConflictResult {
	var apps []App
	if appID != "" {
		apps = []App{{ID: appID, Version: appVersion}}
	}
	return ResolveGroupConflict(apps, txnID, winners)
}

// ResolveGroupConflict is ResolveConflict for an append that carries
// several application transactions (a group commit): it is already
// committed once the winners record every one of apps at its version or
// later; winners that record only some of them abort it with a
// *ConcurrentTxnError, since retried as it is it would write their records
// twice, as does a winner that records any of them at an older version.
func ResolveGroupConflict(apps []App, txnID string, winners []Commit) ConflictResult {
	var covered map[string]bool // apps the winners recorded at their versions or later
	var partial ConflictResult
	r, done := walkWinners(winners, txnID, func(version int64, a Action) (ConflictResult, bool) {
		t, ok := a.(*Txn)
		if !ok {
			return ConflictResult{}, false
		}
		i := slices.IndexFunc(apps, func(p App) bool { return p.ID == t.AppID })
		if t.AppID == "" || i < 0 {
			return ConflictResult{}, false
		}
		if t.Version < apps[i].Version {
			return ConflictResult{Resolution: ResolutionAbort, Version: version,
				Err: &ConcurrentTxnError{Version: version, AppID: t.AppID, AppVersion: t.Version}}, true
		}
		if covered == nil {
			covered = map[string]bool{}
			partial = ConflictResult{Resolution: ResolutionAbort, Version: version,
				Err: &ConcurrentTxnError{Version: version, AppID: t.AppID, AppVersion: t.Version}}
		}
		covered[t.AppID] = true
		if len(covered) == len(apps) {
			return ConflictResult{Resolution: ResolutionAlreadyCommitted, Version: version}, true
		}
		return ConflictResult{}, false
	})
	if !done && covered != nil {
		return partial
	}
	return r
}

// walkWinners runs the checks every resolver makes on winners (ascending,
// contiguous), in order: a winner that is our own earlier attempt means
// committed; a protocol or metaData action aborts; every other action goes
// to visit, whose verdict, when it gives one, ends the walk. With no
// verdict it returns a retry at the last winner's version (-1 for none)
// and done false.
func walkWinners(winners []Commit, txnID string, visit func(version int64, a Action) (ConflictResult, bool)) (r ConflictResult, done bool) {
	last := int64(-1)
	for _, w := range winners {
		last = w.Version
		if isOwnCommit(w, txnID) {
			return ConflictResult{Resolution: ResolutionCommitted, Version: w.Version}, true
		}
		for _, a := range w.Actions {
			if r, ok := definitionChanged(w.Version, a); ok {
				return r, true
			}
			if r, ok := visit(w.Version, a); ok {
				return r, true
			}
		}
	}
	return ConflictResult{Resolution: ResolutionRetry, Version: last}, false
}

// isOwnCommit reports whether winner w is the commit with commitInfo.txnId
// txnID: an earlier attempt of ours that landed after all.
func isOwnCommit(w Commit, txnID string) bool {
	for _, a := range w.Actions {
		if ci, ok := a.(*CommitInfo); ok && txnID != "" && ci.TxnID == txnID {
			return true
		}
	}
	return false
}

// definitionChanged is the abort verdict for a winner's protocol or
// metaData action: what was written against the old definition may no
// longer hold.
func definitionChanged(version int64, a Action) (ConflictResult, bool) {
	switch a.(type) {
	case *Protocol:
		return ConflictResult{Resolution: ResolutionAbort, Version: version,
			Err: &ConcurrentModificationError{Version: version, Action: KindProtocol}}, true
	case *Metadata:
		return ConflictResult{Resolution: ResolutionAbort, Version: version,
			Err: &ConcurrentModificationError{Version: version, Action: KindMetadata}}, true
	}
	return ConflictResult{}, false
}

// IsOurCommit reports whether a commit file's commitInfo.txnId is txnID —
// the check after an ambiguous write failure: read the version back and see
// whose commit is there.
func IsOurCommit(commit []byte, txnID string) bool {
	if txnID == "" {
		return false
	}
	found := false
	errStop := errors.New("stop")
	_ = scanActions(commit, projTableInfo, func(a Action) error {
		if ci, ok := a.(*CommitInfo); ok {
			found = ci.TxnID == txnID
			return errStop
		}
		return nil
	})
	return found
}
