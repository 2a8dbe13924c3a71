package rsemu

import (
	"regexp"
	"time"
)

// Fault is a hook on statements, in the style of kfake's control functions:
// it fires for the next Times statements whose text matches Match, in the
// order faults were added. A fault may delay a statement, fail it, or drop
// the client connection before or after running it.
//
// A statement is matched when it arrives: for the simple protocol each
// statement of the query string, for the extended protocol each Execute
// (with the text of the prepared statement behind the portal).
type Fault struct {
	// Match selects statements by their text as the client sent it. Nil
	// matches every statement. Use (?i) for case-insensitive matching.
	Match *regexp.Regexp
	// Times is how many matching statements the fault fires for. Zero means
	// once; negative means every time until Remove.
	Times int
	// Skip lets the first Skip matching statements through untouched (they
	// are not hits): a fault on the second chunk's COPY is installed before
	// the batch starts, not armed from a goroutine racing the first chunk.
	Skip int
	// Delay sleeps before the statement runs (or fails, or drops). A fault
	// with only a Delay lets later faults fire for the same statement too.
	// The delay stands for time queued on the cluster, which Redshift counts
	// against statement_timeout: in the simple protocol, a session whose
	// statement_timeout is shorter gets the statement canceled (57014) when
	// the timeout runs out, inside a transaction aborting it.
	Delay time.Duration
	// Err fails the statement with this error instead of running it. Inside
	// a transaction block the backend transaction is aborted first, so the
	// session is in the same failed state as after a real error. A FATAL
	// error (see AdminShutdown) also closes the connection.
	Err *Error
	// Drop closes the client connection (and its backend connection, which
	// rolls back any open transaction) instead of running the statement.
	Drop bool
	// DropAfter runs the statement, then closes the connection before the
	// client sees the result: the client cannot tell whether it committed.
	DropAfter bool
}

// FaultHandle is an installed fault.
type FaultHandle struct {
	srv       *Server
	f         Fault
	remaining int // <0: unlimited
	skip      int // matches still to let through
	hits      int
}

// AddFault installs f and returns a handle to inspect or remove it.
func (s *Server) AddFault(f Fault) *FaultHandle {
	h := &FaultHandle{srv: s, f: f, remaining: f.Times, skip: f.Skip}
	if f.Times == 0 {
		h.remaining = 1
	}
	s.mu.Lock()
	s.faults = append(s.faults, h)
	s.mu.Unlock()
	return h
}

// FailNext makes the next times statements matching pattern fail with err.
// For example:
//
//	emu.FailNext(`(?i)^copy`, 2, rsemu.SerializableViolation(100167))
//	emu.FailNext(`(?i)^insert`, 1, &rsemu.Error{Code: "40001", Message: "could not serialize access"})
func (s *Server) FailNext(pattern string, times int, err *Error) *FaultHandle {
	return s.AddFault(Fault{Match: regexp.MustCompile(pattern), Times: times, Err: err})
}

// DropOn closes the client connection when the next times statements
// matching pattern arrive, before they run.
func (s *Server) DropOn(pattern string, times int) *FaultHandle {
	return s.AddFault(Fault{Match: regexp.MustCompile(pattern), Times: times, Drop: true})
}

// DropAfter runs the next times statements matching pattern and then closes
// the client connection before the client reads the result.
func (s *Server) DropAfter(pattern string, times int) *FaultHandle {
	return s.AddFault(Fault{Match: regexp.MustCompile(pattern), Times: times, DropAfter: true})
}

// DelayOn delays the next times statements matching pattern by d.
func (s *Server) DelayOn(pattern string, d time.Duration, times int) *FaultHandle {
	return s.AddFault(Fault{Match: regexp.MustCompile(pattern), Times: times, Delay: d})
}

// ClearFaults removes every installed fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// Hits is how many statements the fault has fired for.
func (h *FaultHandle) Hits() int {
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	return h.hits
}

// Remove uninstalls the fault.
func (h *FaultHandle) Remove() {
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	for i, f := range h.srv.faults {
		if f == h {
			h.srv.faults = append(h.srv.faults[:i], h.srv.faults[i+1:]...)
			return
		}
	}
}

// action is what the faults decided for one statement.
type action struct {
	delay     time.Duration // to wait before anything else, see session.wait
	err       *Error
	drop      bool
	dropAfter bool
}

// faultFor consumes the faults matching sql and returns the delay to wait
// and what to do instead of (or after) running the statement.
func (s *Server) faultFor(sql string) action {
	var act action
	var delay time.Duration
	s.mu.Lock()
	kept := s.faults[:0]
	decided := false
	for _, h := range s.faults {
		fire := !decided && h.remaining != 0 && (h.f.Match == nil || h.f.Match.MatchString(sql))
		if fire && h.skip > 0 {
			h.skip--
			fire = false
		}
		if fire {
			h.hits++
			if h.remaining > 0 {
				h.remaining--
			}
			delay += h.f.Delay
			switch {
			case h.f.Err != nil:
				act.err, decided = h.f.Err, true
			case h.f.Drop:
				act.drop, decided = true, true
			case h.f.DropAfter:
				act.dropAfter, decided = true, true
			}
		}
		if h.remaining != 0 {
			kept = append(kept, h)
		}
	}
	s.faults = kept
	s.mu.Unlock()
	act.delay = delay
	return act
}
