package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Rejections that survive a crash.
//
// A batch commits its good records and reports its rejected ones to the
// host (ABI 1.1), which dead-letters them before it moves the offset. If the
// host dies in between, the batch comes again and the table already has it
// (txn): the sink must report the same rejections, or the rejected records
// end up in neither the table nor the dead-letter topic. Deciding them again
// against the table's schema is not enough: the schema may have been relaxed
// since (a column made nullable, a type widened), and a record rejected then
// fits now. So each commit records the offsets it rejected, with their
// reason, in its commitInfo under rejectedKey (per appId under
// rejectedByAppKey when a group commit holds several batches), and a replay
// reads them back from the commits of its appId that hold the offsets it
// skips.
//
// Only offsets and reason classes are kept, never values: the log is read by
// everyone who reads the table. The message is derived again on replay
// (from today's schema when the record still fails, else a message that says
// when it was rejected).

// rejectedKey is the commitInfo key of a commit that holds one batch:
// {"value":[offset,...],"size":[...],"encoding":[...]}.
const rejectedKey = "picomqRejected"

// rejectedByAppKey is the commitInfo key of a group commit (group.go),
// which holds the batches of several topic partitions whose offsets may be
// the same: {"<appId>":{"value":[offset,...],...},...}, an entry per member
// that rejected any record.
const rejectedByAppKey = "picomqRejectedByApp"

// rejectionWalkLimit bounds how many commits, newest first, a replay reads
// looking for the ones that hold the offsets it skips. Other writers' (and
// other partitions') commits in between count. Past it, the rejections are
// decided against today's schema, with a warning.
const rejectionWalkLimit = 1000

// rejectionWalkWindow commits are read at once during the walk.
const rejectionWalkWindow = 16

// recordedRejections is the commitInfo entry for the rejections of the
// members' pending records (the records the commit holds): rejectedKey's
// for a commit of one batch, rejectedByAppKey's for a group; nil when there
// are none.
func recordedRejections(members []*member) (map[string]json.RawMessage, error) {
	key, v := rejectedKey, any(nil)
	if len(members) == 1 {
		if r := byReason(members[0]); r != nil {
			v = r
		}
	} else {
		byApp := map[string]map[string][]uint64{}
		for _, m := range members {
			// A chain of pipelined batches shares its partition's entry,
			// in offset order (group order).
			for reason, offsets := range byReason(m) {
				if byApp[m.appID] == nil {
					byApp[m.appID] = map[string][]uint64{}
				}
				byApp[m.appID][reason] = append(byApp[m.appID][reason], offsets...)
			}
		}
		if len(byApp) > 0 {
			key, v = rejectedByAppKey, byApp
		}
	}
	if v == nil {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return map[string]json.RawMessage{key: raw}, nil
}

// byReason is the offsets of m's pending records that m rejected, by
// reason; nil when there are none.
func byReason(m *member) map[string][]uint64 {
	var out map[string][]uint64
	for _, r := range m.b.Rejections() {
		if r.Index >= m.base() {
			if out == nil {
				out = map[string][]uint64{}
			}
			out[r.Reason.String()] = append(out[r.Reason.String()], m.b.SeqOffset(r.Index))
		}
	}
	return out
}

// priorRejection is one rejection a commit recorded.
type priorRejection struct {
	reason  sdk.RejectReason
	version int64 // the commit that recorded it
}

// findRejections reads, newest first, the commits of appID that hold
// offsets first..done, and returns the rejections they recorded. ok is false
// when those commits cannot all be read: cleaned up from the log, or further
// back than rejectionWalkLimit.
func (t *table) findRejections(ctx context.Context, appID string, first uint64) (found map[uint64]priorRejection, ok bool, err error) {
	found = map[uint64]priorRejection{}
	for next := t.snap.Version; next > t.snap.Version-rejectionWalkLimit; {
		if next < 0 {
			return found, true, nil // read the whole log
		}
		n := min(rejectionWalkWindow, next+1)
		commits := make([]deltalog.Commit, n)
		errs := make([]error, n)
		var g sdk.Group
		for i := range n {
			g.Go(func() error {
				commits[i], errs[i] = deltalog.ReadCommit(ctx, t.store, next-i)
				return nil
			})
		}
		_ = g.Wait()
		for i, c := range commits { // newest first
			if errors.Is(errs[i], deltalog.ErrNotFound) {
				return nil, false, nil // cleaned up from the log
			}
			if errs[i] != nil {
				return nil, false, errs[i]
			}
			if done, err := collectRejections(c, appID, first, found); done || err != nil {
				return found, err == nil, err
			}
		}
		next -= n
	}
	return nil, false, nil
}

// collectRejections adds c's recorded rejections to found when c is a
// commit of appID, and reports done once c ends below first: every commit
// newer than it (already seen) holds the offsets from first on.
func collectRejections(c deltalog.Commit, appID string, first uint64, found map[uint64]priorRejection) (done bool, err error) {
	var txn *deltalog.Txn
	var info *deltalog.CommitInfo
	for _, a := range c.Actions {
		switch a := a.(type) {
		case *deltalog.Txn:
			if a.AppID == appID {
				txn = a
			}
		case *deltalog.CommitInfo:
			info = a
		}
	}
	if txn == nil {
		return false, nil
	}
	if txn.Version < 0 || uint64(txn.Version) < first {
		return true, nil
	}
	if info == nil {
		return false, nil
	}
	var byReason map[string][]uint64
	if raw := info.Other[rejectedByAppKey]; raw != nil {
		// A group commit: our member's entry, if it rejected any.
		var byApp map[string]map[string][]uint64
		if err := json.Unmarshal(raw, &byApp); err != nil {
			return false, fmt.Errorf("commit %d: commitInfo.%s: %w", c.Version, rejectedByAppKey, err)
		}
		byReason = byApp[appID]
	} else if raw := info.Other[rejectedKey]; raw != nil {
		if err := json.Unmarshal(raw, &byReason); err != nil {
			return false, fmt.Errorf("commit %d: commitInfo.%s: %w", c.Version, rejectedKey, err)
		}
	}
	for name, offsets := range byReason {
		reason, ok := rejectReasonByName(name)
		if !ok {
			return false, fmt.Errorf("commit %d: commitInfo.%s: unknown reason %q", c.Version, rejectedKey, name)
		}
		for _, o := range offsets {
			if _, seen := found[o]; !seen {
				found[o] = priorRejection{reason: reason, version: c.Version}
			}
		}
	}
	return false, nil
}

var rejectReasons = []sdk.RejectReason{sdk.RejectValue, sdk.RejectSize, sdk.RejectEncoding}

func rejectReasonByName(name string) (sdk.RejectReason, bool) {
	i := slices.IndexFunc(rejectReasons, func(r sdk.RejectReason) bool { return r.String() == name })
	if i < 0 {
		return 0, false
	}
	return rejectReasons[i], true
}

// priorRejectionError is the message of a replayed rejection whose record
// fits the table today.
func priorRejectionError(topic string, offset uint64, p priorRejection, uri string) error {
	return fmt.Errorf("Invalid record value: topic %q offset %s was rejected when Delta table %s version %d was committed; the table's schema has changed since, so the original message cannot be given again",
		topic, strconv.FormatUint(offset, 10), uri, p.version)
}
