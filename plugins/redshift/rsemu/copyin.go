package rsemu

import (
	"github.com/jackc/pgx/v5/pgproto3"
)

// copyInChunk is how many bytes of rows go in one CopyData message.
const copyInChunk = 256 << 10

// copyIn streams the rows an emulated COPY loads to the backend with
// PostgreSQL's own COPY FROM STDIN (text format), inside the COPY's
// transaction. PostgreSQL parses and inserts rows this way several times
// faster than as multi-row INSERTs of literals, so a benchmark of the
// Redshift path measures the modelled cluster cost (cost.go) rather than
// the emulator. Every check Redshift makes is still the emulator's own
// (appendValue), made before a row is sent.
type copyIn struct {
	s       *session
	sql     string // COPY <table> (<columns>) FROM STDIN
	started bool
	buf     []byte
}

// endRow ends the row the caller appended to buf (fields separated by
// tabs), sending the buffer once it is a chunk.
func (c *copyIn) endRow() (*pgproto3.ErrorResponse, error) {
	c.buf = append(c.buf, '\n')
	if len(c.buf) >= copyInChunk {
		return c.flush()
	}
	return nil, nil
}

// flush sends the buffered rows, starting the backend COPY first if it is
// not running yet (so a COPY that loads no row sends nothing, as before).
func (c *copyIn) flush() (*pgproto3.ErrorResponse, error) {
	if len(c.buf) == 0 {
		return nil, nil
	}
	if !c.started {
		e, err := c.start()
		if err != nil || e != nil {
			return e, err
		}
	}
	c.s.fe.Send(&pgproto3.CopyData{Data: c.buf})
	c.buf = c.buf[:0]
	return nil, c.s.fe.Flush()
}

func (c *copyIn) start() (*pgproto3.ErrorResponse, error) {
	c.s.fe.Send(&pgproto3.Query{String: c.sql})
	if err := c.s.fe.Flush(); err != nil {
		return nil, err
	}
	for {
		msg, err := c.s.fe.Receive()
		if err != nil {
			return nil, err
		}
		switch m := msg.(type) {
		case *pgproto3.CopyInResponse:
			c.started = true
			return nil, nil
		case *pgproto3.ErrorResponse:
			e := *m
			if _, err := c.s.untilReady(); err != nil {
				return nil, err
			}
			return sanitize(&e), nil
		}
	}
}

// finish ends the COPY: the backend's answer, with the first error it
// reported (a value PostgreSQL refused, a constraint) if any.
func (c *copyIn) finish() (*pgproto3.ErrorResponse, error) {
	if e, err := c.flush(); err != nil || e != nil {
		return e, err
	}
	if !c.started {
		return nil, nil
	}
	c.started = false
	c.s.fe.Send(&pgproto3.CopyDone{})
	if err := c.s.fe.Flush(); err != nil {
		return nil, err
	}
	r, err := c.s.untilReady()
	if err != nil || r.err == nil {
		return nil, err
	}
	return sanitize(r.err), nil
}

// fail abandons a running COPY after the emulator refused a value: the
// backend aborts the statement (and with it the transaction block), and
// nothing sent reaches the table.
func (c *copyIn) fail() error {
	c.buf = c.buf[:0]
	if !c.started {
		return nil
	}
	c.started = false
	c.s.fe.Send(&pgproto3.CopyFail{Message: "rsemu: COPY refused a value"})
	if err := c.s.fe.Flush(); err != nil {
		return err
	}
	_, err := c.s.untilReady()
	return err
}

// appendCopyText appends b as a field of the COPY text format: backslash,
// newline, carriage return and tab (the delimiter) escaped.
func appendCopyText(dst, b []byte) []byte {
	for _, c := range b {
		switch c {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
