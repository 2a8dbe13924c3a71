package delta

import (
	"errors"
	"fmt"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// outcome is what a commit attempt left in the table, said once, by decide,
// from deltalog.CommitAppend's answer, the way delta-kernel-rs's
// CommitResult variants say it: the steps after the put act on it and never
// read the error again to guess whether the commit landed. Returning OK for
// a commit that did not land loses the batch, so only landed is OK, and the
// zero value is not landed.
type outcome int

const (
	// landed: the table holds the batch, in this commit or in the one an
	// earlier attempt of the batch made (commitResult.already).
	landed outcome = iota + 1
	// notLanded: the commit is certainly not in the log (refused before the
	// put, or aborted after losing a race): its data files are garbage, and
	// when another writer moved the table the batch is re-based (rebase).
	notLanded
	// unknown: the store may have taken the commit (a put that timed out
	// and whose read-back failed too, say): its data files stay, as a landed
	// commit may reference them, and the next attempt reads the log before
	// deciding what is already committed.
	unknown
)

func (o outcome) String() string {
	switch o {
	case landed:
		return "landed"
	case notLanded:
		return "not landed"
	case unknown:
		return "unknown"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// commitResult is one commit attempt's outcome.
type commitResult struct {
	outcome outcome
	// already: landed by an earlier attempt of the batch (a replay whose
	// txn the table already had); nothing of this attempt is referenced.
	already bool
	res     *deltalog.CommitResult // landed (nil for a batch with nothing to commit)
	err     error                  // notLanded or unknown: the store's answer
}

// decide is the one place a commit's outcome is read from CommitAppend's
// answer. An error is notLanded only when it proves that no commit of ours
// is in the log: another writer changed the table's definition or our txn
// first, or the log no longer holds the commit our snapshot ended on
// (ErrConcurrentModification); the table was replaced (ErrTableReplaced)
// or is gone (ErrNoTable); the table we were to create was created by
// another writer with another definition (ErrCreateConflict), or with
// features this writer refuses (ErrNotWritable). Every other error —
// a timeout, a put whose read-back failed, winners that could not be read,
// a landed commit that could not be applied to the snapshot — may hide a
// commit the store took: unknown.
func decide(res *deltalog.CommitResult, err error) commitResult {
	switch {
	case err == nil && res != nil:
		return commitResult{outcome: landed, already: res.AlreadyCommitted, res: res}
	case err == nil:
		return commitResult{outcome: unknown, err: errors.New("deltalog: the commit returned no result")}
	case errors.Is(err, deltalog.ErrConcurrentModification), errors.Is(err, deltalog.ErrTableReplaced),
		errors.Is(err, deltalog.ErrNoTable), errors.Is(err, deltalog.ErrCreateConflict),
		errors.Is(err, deltalog.ErrNotWritable):
		return commitResult{outcome: notLanded, err: err}
	}
	return commitResult{outcome: unknown, err: err}
}

// answer is the one place an outcome becomes the batch's answer: nil (OK)
// when the commit landed, RETRY otherwise — the batch is not known to be
// written, and the runtime keeps its offset. (A table replaced or created by
// another writer gets its own RETRY message from rebase.)
func (r commitResult) answer(uri string) error {
	if r.outcome == landed {
		return nil
	}
	err := r.err
	if err == nil {
		err = fmt.Errorf("commit outcome %s", r.outcome)
	}
	return sdk.Retry(fmt.Errorf("Storage error: Failed to flush and commit to %s: %w", uri, err))
}
