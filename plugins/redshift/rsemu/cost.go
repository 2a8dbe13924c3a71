package rsemu

import "time"

// This file models what a real cluster's loads cost (Config.CopyLatency,
// Config.CommitLatency), so that benchmarks of the Redshift path through
// the emulator mean something: PostgreSQL on the same machine loads a small
// file and commits in milliseconds, a cluster takes about a second for each.

// commitTurn takes one turn of the cluster's commit queue: it waits for the
// commits ahead of it, holds the queue for Config.CommitLatency and runs
// commit (the backend COMMIT, or nil when the statement already committed on
// the backend, as an autocommit statement does) at the end of its turn, so
// the commit is seen to land when the turn ends. Redshift runs every commit
// that wrote through one queue for the whole cluster (STL_COMMIT_STATS'
// queuelen counts the transactions ahead of it); sync.Mutex hands a
// contended lock over in arrival order once waiters have queued for more
// than a millisecond, which is the queue's order for latencies that matter.
// With no CommitLatency it is commit alone: nothing waits. Each turn is
// logged at debug level when it begins and ends, in queue order, so a run
// (tools/rsemu -v) or a test can see the queue.
func (s *Server) commitTurn(session int, commit func() error) error {
	if s.cfg.CommitLatency <= 0 {
		if commit == nil {
			return nil
		}
		return commit()
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.log.Debug(LogCommitTurnBegins, "session", session)
	time.Sleep(s.cfg.CommitLatency)
	var err error
	if commit != nil {
		err = commit()
	}
	s.log.Debug(LogCommitTurnEnds, "session", session)
	return err
}

// The messages of commitTurn's debug records.
const (
	LogCommitTurnBegins = "rsemu: commit turn begins"
	LogCommitTurnEnds   = "rsemu: commit turn ends"
)

// copyCost is the fixed time a COPY spends on the cluster before it loads
// anything: planning, distributing the file list to the slices, opening
// the S3 objects. It does not depend on the size of the load.
func (s *Server) copyCost() {
	if s.cfg.CopyLatency > 0 {
		time.Sleep(s.cfg.CopyLatency)
	}
}

// writeKeywords are the first words of statements that change data or the
// catalog, so that their transaction goes through the commit queue.
var writeKeywords = map[string]bool{
	"insert": true, "update": true, "delete": true, "merge": true, "copy": true,
	"create": true, "drop": true, "alter": true, "truncate": true,
	"grant": true, "revoke": true, "comment": true,
}

// writes reports whether a statement writes: it starts with one of
// writeKeywords, or is a WITH ... INSERT/UPDATE/DELETE/MERGE or a
// SELECT ... INTO. Reads, SET/SHOW, LOCK and transaction control do not;
// neither do CALL and VACUUM, whose effect the emulator cannot see.
func writes(p *plan, sql string) bool {
	switch p.kind {
	case planCopy, planCreateTable, planTruncate:
		return true
	case planPass:
	default:
		return false
	}
	toks := lex(sql)
	if len(toks) == 0 || toks[0].kind != tokIdent {
		return false
	}
	first := toks[0].val
	if writeKeywords[first] {
		return true
	}
	for _, t := range toks[1:] {
		if t.kind != tokIdent {
			continue
		}
		switch {
		case first == "with" && (t.val == "insert" || t.val == "update" || t.val == "delete" || t.val == "merge"):
			return true
		case first == "select" && t.val == "into":
			return true
		}
	}
	return false
}
