package rsemu

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// errDrop ends a session on purpose (fault injection, FATAL error).
var errDrop = errors.New("rsemu: connection dropped")

// flushEvery bounds how many DataRows are buffered for the client.
const flushEvery = 256

// session is one client connection and its backend connection.
//
// The backend connection is driven message by message: every forwarded
// extended-protocol message is followed by a Flush and its reply is read
// before the next client message is looked at. That keeps replies in order
// when some messages are answered by the emulator itself (emulated
// statements) and others by PostgreSQL.
type session struct {
	srv    *Server
	id     int
	client net.Conn // the socket, also under TLS: closing it ends the session
	rw     net.Conn // what the session reads and writes: client, or TLS over it
	cb     *pgproto3.Backend

	mu     sync.Mutex // guards bconn for close()
	bconn  net.Conn
	fe     *pgproto3.Frontend
	bcfg   *pgconn.Config
	pid    uint32
	tx     byte // transaction status from the backend's last ReadyForQuery
	dbName string

	caseSensitive bool
	// implicit: the emulator opened the backend transaction of a
	// multi-statement simple query's implicit transaction block.
	implicit bool
	// wrote: the open backend transaction has written, so its commit
	// takes a turn of the cluster's commit queue (commitTurn).
	wrote   bool
	stmts   map[string]*prepared
	portals map[string]*portal
	// skipping: an error happened in an extended-protocol batch; discard
	// messages until Sync, as PostgreSQL does.
	skipping bool
}

type prepared struct {
	sql  string // as the client sent it
	plan *plan
}

type portal struct {
	stmt *prepared
}

func newSession(srv *Server, id int, c net.Conn) *session {
	return &session{
		srv:     srv,
		id:      id,
		client:  c,
		rw:      c,
		cb:      pgproto3.NewBackend(c, c),
		stmts:   map[string]*prepared{},
		portals: map[string]*portal{},
		tx:      'I',
	}
}

func (s *session) close() {
	s.client.Close()
	s.mu.Lock()
	if s.bconn != nil {
		s.bconn.Close()
	}
	s.mu.Unlock()
}

func (s *session) serve() {
	defer s.close()
	if err := s.startup(); err != nil {
		if !errors.Is(err, errDrop) {
			s.srv.log.Debug("rsemu: startup", "session", s.id, "err", err)
		}
		return
	}
	for {
		msg, err := s.cb.Receive()
		if err != nil {
			return
		}
		if err := s.dispatch(msg); err != nil {
			if !errors.Is(err, errDrop) {
				s.srv.log.Debug("rsemu: session ended", "session", s.id, "err", err)
			}
			return
		}
	}
}

// fatal sends a FATAL error to a client that is still starting up.
func (s *session) fatal(code, msg string) error {
	s.cb.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
	_ = s.cb.Flush()
	return errDrop
}

// tlsHandshakeTimeout bounds a client's TLS handshake.
const tlsHandshakeTimeout = 10 * time.Second

// startTLS answers an SSLRequest: 'N' without Config.TLS, else 'S' and the
// server side of the handshake, after which the session reads and writes
// through TLS. s.client stays the raw socket, so close() still ends the
// session at once. A handshake the client abandons (it did not trust the
// certificate) ends the session.
func (s *session) startTLS() error {
	if s.rw != s.client {
		return errors.New("SSLRequest on a connection already using TLS")
	}
	cfg := s.srv.cfg.TLS
	if cfg == nil {
		_, err := s.client.Write([]byte("N"))
		return err
	}
	if _, err := s.client.Write([]byte("S")); err != nil {
		return err
	}
	tc := tls.Server(s.client, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	s.srv.mu.Lock()
	s.srv.tlsConns++
	s.srv.mu.Unlock()
	s.rw = tc
	s.cb = pgproto3.NewBackend(tc, tc)
	return nil
}

func (s *session) startup() error {
	var sm *pgproto3.StartupMessage
	for sm == nil {
		msg, err := s.cb.ReceiveStartupMessage()
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if err := s.startTLS(); err != nil {
				return err
			}
		case *pgproto3.GSSEncRequest:
			// Redshift offers no GSSAPI encryption either.
			if _, err := s.rw.Write([]byte("N")); err != nil {
				return err
			}
		case *pgproto3.CancelRequest:
			s.srv.forwardCancel(m)
			return errDrop
		case *pgproto3.StartupMessage:
			sm = m
		default:
			return fmt.Errorf("unexpected startup message %T", msg)
		}
	}
	if sm.ProtocolVersion != pgproto3.ProtocolVersion30 {
		s.cb.Send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0})
	}
	user := sm.Parameters["user"]
	database := sm.Parameters["database"]
	if database == "" {
		database = user
	}
	if _, ok := sm.Parameters["replication"]; ok {
		return s.fatal(CodeFeatureNotSupp, "rsemu: replication connections are not supported")
	}

	// Cleartext password, checked against the backend account or the
	// temporary credentials issued by IssueCredentials.
	s.cb.Send(&pgproto3.AuthenticationCleartextPassword{})
	if err := s.cb.Flush(); err != nil {
		return err
	}
	if err := s.cb.SetAuthType(pgproto3.AuthTypeCleartextPassword); err != nil {
		return err
	}
	msg, err := s.cb.Receive()
	if err != nil {
		return err
	}
	pw, ok := msg.(*pgproto3.PasswordMessage)
	want := s.srv.backend
	if !ok || !(user == want.User &&
		subtle.ConstantTimeCompare([]byte(pw.Password), []byte(s.srv.clientPassword())) == 1 ||
		s.srv.checkIssued(user, pw.Password)) {
		return s.fatal(CodeInvalidPassword, fmt.Sprintf("password authentication failed for user %q", user))
	}

	// Backend connection to the database the client asked for, with the
	// client's run-time parameters (options, application_name, ...).
	bcfg := want.Copy()
	bcfg.Database = database
	if bcfg.RuntimeParams == nil {
		bcfg.RuntimeParams = map[string]string{}
	}
	for k, v := range sm.Parameters {
		if k != "user" && k != "database" {
			bcfg.RuntimeParams[k] = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pgc, err := pgconn.ConnectConfig(ctx, bcfg)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return s.fatal(pgErr.Code, pgErr.Message)
		}
		return s.fatal("08006", "rsemu: cannot connect to the backend PostgreSQL: "+err.Error())
	}
	if err := ensureCatalog(ctx, pgc); err != nil {
		pgc.Close(ctx)
		return s.fatal(CodeInternal, err.Error())
	}
	hc, err := pgc.Hijack()
	if err != nil {
		pgc.Close(ctx)
		return s.fatal(CodeInternal, "rsemu: "+err.Error())
	}
	s.mu.Lock()
	s.bconn = hc.Conn
	s.mu.Unlock()
	s.fe = hc.Frontend
	s.bcfg = bcfg
	s.pid = hc.PID
	s.tx = hc.TxStatus
	s.dbName = database
	s.caseSensitive = s.srv.cfg.CaseSensitiveIdentifiers

	s.cb.Send(&pgproto3.AuthenticationOk{})
	keys := make([]string, 0, len(hc.ParameterStatuses))
	for k := range hc.ParameterStatuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.cb.Send(&pgproto3.ParameterStatus{Name: k, Value: hc.ParameterStatuses[k]})
	}
	s.cb.Send(&pgproto3.BackendKeyData{ProcessID: hc.PID, SecretKey: hc.SecretKey})
	s.cb.Send(&pgproto3.ReadyForQuery{TxStatus: s.tx})
	return s.cb.Flush()
}

func (s *session) dispatch(msg pgproto3.FrontendMessage) error {
	switch m := msg.(type) {
	case *pgproto3.Query:
		if s.skipping {
			return nil
		}
		s.srv.countRequest()
		return s.simpleQuery(m.String)
	case *pgproto3.Parse:
		return s.parse(m)
	case *pgproto3.Bind:
		return s.bind(m)
	case *pgproto3.Describe:
		return s.describe(m)
	case *pgproto3.Execute:
		return s.execute(m)
	case *pgproto3.Close:
		return s.closeMsg(m)
	case *pgproto3.Sync:
		return s.sync()
	case *pgproto3.Flush:
		return s.cb.Flush()
	case *pgproto3.Terminate:
		s.fe.Send(&pgproto3.Terminate{})
		_ = s.fe.Flush()
		return errDrop
	case *pgproto3.FunctionCall:
		return s.failExtended(notEmulated("the function call protocol"))
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		return nil // no COPY FROM STDIN is ever started
	}
	return fmt.Errorf("unexpected message %T", msg)
}

// ---------------------------------------------------------------- simple

// simpleQuery runs the statements of one simple-protocol query in order and
// stops at the first error, skipping the rest.
//
// Several statements in one query run as one transaction, as in the simple
// protocol of PostgreSQL 8.0, which Redshift's leader node derives from:
// outside a transaction block, the first statement that is not BEGIN,
// COMMIT or ROLLBACK opens an implicit block on the backend, committed after
// the last statement and rolled back on an error. A BEGIN inside it makes
// the block explicit (left open, or aborted after an error, for the client
// to end); a COMMIT or ROLLBACK ends it, and so does TRUNCATE, which commits
// as on Redshift; a later statement opens a new one.
func (s *session) simpleQuery(text string) error {
	stmts := splitStatements(text)
	if len(stmts) == 0 {
		s.cb.Send(&pgproto3.EmptyQueryResponse{})
	}
	ok := true
	for _, st := range stmts {
		if len(stmts) > 1 && s.tx == 'I' && txControl(st) == "" {
			if _, e, err := s.mustInternal("BEGIN"); err != nil || e != nil {
				if err != nil {
					return err
				}
				s.cb.Send(e)
				ok = false
				break
			}
			s.implicit = true
		}
		var err error
		ok, err = s.simpleStatement(st)
		if err != nil {
			return err
		}
		if s.tx == 'I' {
			s.implicit = false
		}
		if !ok {
			break
		}
	}
	if s.implicit {
		s.implicit = false
		end := "COMMIT"
		if !ok || s.tx != 'T' {
			end = "ROLLBACK"
		}
		var e *pgproto3.ErrorResponse
		run := func() (err error) {
			_, e, err = s.mustInternal(end)
			return err
		}
		var err error
		if end == "COMMIT" && s.wrote {
			err = s.srv.commitTurn(s.id, run)
		} else {
			err = run()
		}
		s.wrote = false
		if err != nil {
			return err
		}
		if e != nil {
			s.cb.Send(e)
		}
	}
	s.cb.Send(&pgproto3.ReadyForQuery{TxStatus: s.tx})
	return s.cb.Flush()
}

// txControl returns "begin", "commit" or "rollback" for a statement that
// starts or ends a transaction block, else "".
func txControl(sql string) string {
	toks := lex(sql)
	if len(toks) == 0 || toks[0].kind != tokIdent {
		return ""
	}
	switch toks[0].val {
	case "begin", "start":
		return "begin"
	case "commit", "end":
		return "commit"
	case "rollback", "abort":
		return "rollback"
	}
	return ""
}

// simpleStatement runs one statement of a simple query and reports whether
// the next one may run.
func (s *session) simpleStatement(sql string) (bool, error) {
	s.srv.record(s.id, sql)
	act := s.srv.faultFor(sql)
	if e, err := s.wait(act.delay, true); err != nil || e != nil {
		if err == nil {
			err = s.fail(e, false)
		}
		return false, err
	}
	if act.drop {
		return false, errDrop
	}
	if act.err != nil {
		return false, s.fail(act.err, false)
	}
	p, perr := planStatement(sql, s.caseSensitive)
	if perr != nil {
		return false, s.fail(perr, false)
	}
	ok := true
	if p.emulated() {
		res, e, err := s.emulate(p)
		if err != nil {
			return false, err
		}
		if e != nil {
			if err := s.fail(e, false); err != nil {
				return false, err
			}
			ok = false
		} else {
			s.sendResult(res, true)
		}
	} else if s.implicit && txControl(sql) == "begin" {
		// BEGIN turns the implicit block into an explicit one. The
		// backend's transaction is already open: passing BEGIN on would
		// only add PostgreSQL's "already a transaction in progress" warning.
		s.implicit = false
		s.sendResult(&result{tag: "BEGIN"}, true)
	} else {
		run := func() (err error) {
			ok, err = s.passSimple(p.sql)
			return err
		}
		var err error
		if s.wrote && s.tx == 'T' && txControl(sql) == "commit" {
			err = s.srv.commitTurn(s.id, run)
		} else {
			err = run()
		}
		if err != nil {
			return false, err
		}
	}
	if ok && writes(p, sql) {
		if s.tx == 'I' {
			// It committed by itself: an autocommit statement, or a
			// TRUNCATE, which also committed the block it was in. Its
			// reply waits for its turn (the backend already committed).
			if err := s.srv.commitTurn(s.id, nil); err != nil {
				return false, err
			}
		} else {
			s.wrote = true
		}
	}
	if s.tx == 'I' {
		s.wrote = false
	}
	if act.dropAfter {
		return false, errDrop
	}
	return ok, nil
}

// passSimple runs sql on the backend with the simple protocol and relays
// everything but the ReadyForQuery, which the caller sends once at the end.
func (s *session) passSimple(sql string) (bool, error) {
	s.fe.Send(&pgproto3.Query{String: sql})
	if err := s.fe.Flush(); err != nil {
		return false, err
	}
	ok := true
	rows := 0
	for {
		msg, err := s.fe.Receive()
		if err != nil {
			return false, err
		}
		switch m := msg.(type) {
		case *pgproto3.ReadyForQuery:
			s.tx = m.TxStatus
			return ok, nil
		case *pgproto3.ErrorResponse:
			s.cb.Send(sanitize(m))
			ok = false
		case *pgproto3.CopyInResponse:
			s.fe.Send(&pgproto3.CopyFail{Message: "rsemu: COPY FROM STDIN is not supported"})
			if err := s.fe.Flush(); err != nil {
				return false, err
			}
		case *pgproto3.DataRow:
			s.cb.Send(m)
			if rows++; rows%flushEvery == 0 {
				if err := s.cb.Flush(); err != nil {
					return false, err
				}
			}
		default:
			s.cb.Send(msg.(pgproto3.BackendMessage))
		}
	}
}

// fail reports e to the client. Inside a transaction block (and always in
// an extended-protocol batch, which runs in an implicit transaction) the
// backend transaction is aborted first, so the session ends up exactly as
// after a real error: a later COMMIT rolls back.
func (s *session) fail(e *Error, extended bool) error {
	if e.fatal() {
		s.cb.Send(e.response())
		_ = s.cb.Flush()
		return errDrop
	}
	if extended || s.tx == 'T' {
		if _, err := s.internal(`DO $rsemu$ BEGIN RAISE EXCEPTION 'rsemu: transaction aborted by an emulated error'; END $rsemu$`); err != nil {
			return err
		}
	}
	s.cb.Send(e.response())
	if extended {
		s.skipping = true
	}
	return nil
}

func (s *session) failExtended(e *Error) error { return s.fail(e, true) }

// wait sleeps a fault's delay as time the statement spent queued on the
// cluster. Redshift counts that against statement_timeout, so when the
// session's timeout is shorter the statement is canceled as the timeout
// runs out, and wait returns the error to fail it with. Only in the simple
// protocol: asking the backend for the timeout between an extended-protocol
// Bind and its Execute would destroy the unnamed portal.
func (s *session) wait(d time.Duration, simple bool) (*Error, error) {
	if d <= 0 {
		return nil, nil
	}
	if simple && s.tx != 'E' { // an aborted transaction refuses even SHOW
		limit, err := s.statementTimeout()
		if err != nil {
			return nil, err
		}
		if limit > 0 && limit < d {
			time.Sleep(limit)
			return QueryCanceled(), nil
		}
	}
	time.Sleep(d)
	return nil, nil
}

// statementTimeout is the session's statement_timeout on the backend, 0 for
// none or when it cannot be read.
func (s *session) statementTimeout() (time.Duration, error) {
	r, err := s.internal("SHOW statement_timeout")
	if err != nil || r.err != nil || len(r.rows) != 1 || len(r.rows[0]) != 1 {
		return 0, err
	}
	return parseSetting(string(r.rows[0][0])), nil
}

// parseSetting reads a PostgreSQL time setting as SHOW prints it: "0",
// "250ms", "5s", "10min", "1h", "1d"; a bare number is milliseconds. It
// returns 0 for anything else.
func parseSetting(v string) time.Duration {
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	if err != nil {
		return 0
	}
	unit := map[string]time.Duration{"": time.Millisecond, "ms": time.Millisecond, "s": time.Second,
		"min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[v[i:]]
	return time.Duration(n) * unit
}

// sanitize makes backend errors look like Redshift's: it hides the
// emulator's PL/pgSQL context on errors raised by the rsemu_catalog check
// functions, and words a canceled statement (statement_timeout or a cancel
// request) as Redshift does.
func sanitize(m *pgproto3.ErrorResponse) *pgproto3.ErrorResponse {
	if m.Code == CodeQueryCanceled {
		c := *m
		c.Message = QueryCanceled().Message
		c.Where, c.File, c.Line, c.Routine = "", "", 0, ""
		return &c
	}
	if strings.Contains(m.Where, "rsemu_catalog.") || strings.Contains(m.Where, "rsemu$") {
		c := *m
		c.Where, c.File, c.Line, c.Routine = "", "", 0, ""
		return &c
	}
	return m
}

// -------------------------------------------------------------- extended

func (s *session) parse(m *pgproto3.Parse) error {
	if s.skipping {
		return nil
	}
	name, sql := m.Name, m.Query
	if len(splitStatements(sql)) > 1 {
		// PostgreSQL refuses several commands in one prepared statement.
		delete(s.stmts, name)
		_, err := s.forward(m, isParseDone)
		return err
	}
	p, perr := planStatement(sql, s.caseSensitive)
	if perr != nil {
		s.srv.record(s.id, sql)
		delete(s.stmts, name)
		return s.failExtended(perr)
	}
	if p.emulated() {
		s.stmts[name] = &prepared{sql: sql, plan: p}
		s.cb.Send(&pgproto3.ParseComplete{})
		return nil
	}
	fwd := *m
	fwd.Query = p.sql
	ok, err := s.forward(&fwd, isParseDone)
	if ok {
		s.stmts[name] = &prepared{sql: sql, plan: p}
	} else {
		delete(s.stmts, name)
	}
	return err
}

func (s *session) bind(m *pgproto3.Bind) error {
	if s.skipping {
		return nil
	}
	st := s.stmts[m.PreparedStatement]
	if st != nil && st.plan.emulated() {
		if len(m.Parameters) > 0 {
			return s.failExtended(notEmulated("bind parameters in CREATE TABLE, COPY, TRUNCATE or SET"))
		}
		s.portals[m.DestinationPortal] = &portal{stmt: st}
		s.cb.Send(&pgproto3.BindComplete{})
		return nil
	}
	ok, err := s.forward(m, isBindDone)
	if ok && st != nil {
		s.portals[m.DestinationPortal] = &portal{stmt: st}
	} else {
		delete(s.portals, m.DestinationPortal)
	}
	return err
}

func (s *session) describe(m *pgproto3.Describe) error {
	if s.skipping {
		return nil
	}
	var p *plan
	if m.ObjectType == 'S' {
		if st := s.stmts[m.Name]; st != nil {
			p = st.plan
		}
	} else if po := s.portals[m.Name]; po != nil {
		p = po.stmt.plan
	}
	if p != nil && p.emulated() {
		if m.ObjectType == 'S' {
			s.cb.Send(&pgproto3.ParameterDescription{ParameterOIDs: []uint32{}})
		}
		if p.kind == planShowCaseSensitive {
			s.cb.Send(showRowDescription())
		} else {
			s.cb.Send(&pgproto3.NoData{})
		}
		return nil
	}
	_, err := s.forward(m, isDescribeDone)
	return err
}

func (s *session) execute(m *pgproto3.Execute) error {
	if s.skipping {
		return nil
	}
	po := s.portals[m.Portal]
	if po == nil {
		_, err := s.forward(m, isExecuteDone)
		return err
	}
	sql := po.stmt.sql
	s.srv.record(s.id, sql)
	act := s.srv.faultFor(sql)
	if _, err := s.wait(act.delay, false); err != nil {
		return err
	}
	if act.drop {
		return errDrop
	}
	if act.err != nil {
		return s.failExtended(act.err)
	}
	if po.stmt.plan.emulated() {
		res, e, err := s.emulate(po.stmt.plan)
		if err != nil {
			return err
		}
		if e != nil {
			return s.failExtended(e)
		}
		s.sendResult(res, false)
	} else {
		run := func() error {
			_, err := s.forward(m, isExecuteDone)
			return err
		}
		var err error
		if s.wrote && txControl(sql) == "commit" {
			err = s.srv.commitTurn(s.id, run)
		} else {
			err = run()
		}
		if err != nil {
			return err
		}
	}
	// The backend's transaction status is known only at Sync: a write
	// commits there (implicit transaction) or at a later COMMIT.
	switch {
	case txControl(sql) == "commit" || txControl(sql) == "rollback":
		s.wrote = false
	case !s.skipping && writes(po.stmt.plan, sql):
		s.wrote = true
	}
	if act.dropAfter {
		return errDrop
	}
	return nil
}

func (s *session) closeMsg(m *pgproto3.Close) error {
	if s.skipping {
		return nil
	}
	var emulated bool
	if m.ObjectType == 'S' {
		if st := s.stmts[m.Name]; st != nil && st.plan.emulated() {
			emulated = true
		}
		delete(s.stmts, m.Name)
	} else {
		if po := s.portals[m.Name]; po != nil && po.stmt.plan.emulated() {
			emulated = true
		}
		delete(s.portals, m.Name)
	}
	if emulated {
		s.cb.Send(&pgproto3.CloseComplete{})
		return nil
	}
	_, err := s.forward(m, isCloseDone)
	return err
}

func (s *session) sync() error {
	s.srv.countRequest()
	failed := s.skipping // the batch's implicit transaction rolls back
	s.skipping = false
	s.fe.Send(&pgproto3.Sync{})
	if err := s.fe.Flush(); err != nil {
		return err
	}
	for {
		msg, err := s.fe.Receive()
		if err != nil {
			return err
		}
		if rfq, ok := msg.(*pgproto3.ReadyForQuery); ok {
			s.tx = rfq.TxStatus
			if s.tx == 'I' {
				if s.wrote && !failed {
					// The batch's implicit transaction wrote and
					// committed: its Sync waits for its turn.
					if err := s.srv.commitTurn(s.id, nil); err != nil {
						return err
					}
				}
				s.wrote = false
			}
			s.cb.Send(rfq)
			return s.cb.Flush()
		}
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			s.cb.Send(sanitize(e))
			continue
		}
		s.cb.Send(msg.(pgproto3.BackendMessage))
	}
}

func isParseDone(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.ParseComplete); return ok }
func isBindDone(m pgproto3.BackendMessage) bool  { _, ok := m.(*pgproto3.BindComplete); return ok }
func isCloseDone(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.CloseComplete); return ok }
func isDescribeDone(m pgproto3.BackendMessage) bool {
	switch m.(type) {
	case *pgproto3.RowDescription, *pgproto3.NoData:
		return true
	}
	return false
}
func isExecuteDone(m pgproto3.BackendMessage) bool {
	switch m.(type) {
	case *pgproto3.CommandComplete, *pgproto3.EmptyQueryResponse, *pgproto3.PortalSuspended:
		return true
	}
	return false
}

// forward sends one extended-protocol message followed by a Flush and
// relays the backend's replies up to and including the one done reports.
// An ErrorResponse ends it with ok false and starts skipping until Sync.
func (s *session) forward(m pgproto3.FrontendMessage, done func(pgproto3.BackendMessage) bool) (bool, error) {
	s.fe.Send(m)
	s.fe.Send(&pgproto3.Flush{})
	if err := s.fe.Flush(); err != nil {
		return false, err
	}
	rows := 0
	for {
		msg, err := s.fe.Receive()
		if err != nil {
			return false, err
		}
		switch bm := msg.(type) {
		case *pgproto3.ErrorResponse:
			s.cb.Send(sanitize(bm))
			s.skipping = true
			return false, nil
		case *pgproto3.CopyInResponse:
			s.fe.Send(&pgproto3.CopyFail{Message: "rsemu: COPY FROM STDIN is not supported"})
			s.fe.Send(&pgproto3.Flush{})
			if err := s.fe.Flush(); err != nil {
				return false, err
			}
		case *pgproto3.DataRow:
			s.cb.Send(bm)
			if rows++; rows%flushEvery == 0 {
				if err := s.cb.Flush(); err != nil {
					return false, err
				}
			}
		default:
			s.cb.Send(bm)
			if done(bm) {
				return true, nil
			}
		}
	}
}

// ---------------------------------------------------------------- internal

// result is what an internal query or an emulated statement produced.
type result struct {
	tag     string
	fields  []pgproto3.FieldDescription
	rows    [][][]byte
	notices []pgproto3.NoticeResponse
	err     *pgproto3.ErrorResponse
}

// internal runs sql on the backend with the simple protocol, inside
// whatever transaction the client has open, and collects the outcome. The
// returned error is an I/O failure; SQL errors are in result.err.
func (s *session) internal(sql string) (*result, error) {
	s.fe.Send(&pgproto3.Query{String: sql})
	if err := s.fe.Flush(); err != nil {
		return nil, err
	}
	return s.untilReady()
}

// untilReady collects the backend's answers to a request up to its
// ReadyForQuery.
func (s *session) untilReady() (*result, error) {
	r := &result{}
	for {
		msg, err := s.fe.Receive()
		if err != nil {
			return nil, err
		}
		switch m := msg.(type) {
		case *pgproto3.ReadyForQuery:
			s.tx = m.TxStatus
			return r, nil
		case *pgproto3.DataRow:
			row := make([][]byte, len(m.Values))
			for i, v := range m.Values {
				if v != nil {
					row[i] = append([]byte{}, v...)
				}
			}
			r.rows = append(r.rows, row)
		case *pgproto3.CommandComplete:
			r.tag = string(m.CommandTag)
		case *pgproto3.NoticeResponse:
			r.notices = append(r.notices, *m)
		case *pgproto3.ErrorResponse:
			if r.err == nil {
				c := *m
				r.err = &c
			}
		case *pgproto3.CopyInResponse:
			s.fe.Send(&pgproto3.CopyFail{Message: "rsemu: unexpected COPY FROM STDIN"})
			if err := s.fe.Flush(); err != nil {
				return nil, err
			}
		}
	}
}

// mustInternal runs sql and turns a SQL error into an emulator error.
func (s *session) mustInternal(sql string) (*result, *pgproto3.ErrorResponse, error) {
	r, err := s.internal(sql)
	if err != nil {
		return nil, nil, err
	}
	if r.err != nil {
		return r, sanitize(r.err), nil
	}
	return r, nil, nil
}

// sendResult sends an emulated statement's rows and completion.
func (s *session) sendResult(r *result, withDescription bool) {
	for i := range r.notices {
		s.cb.Send(&r.notices[i])
	}
	if withDescription && r.fields != nil {
		s.cb.Send(&pgproto3.RowDescription{Fields: r.fields})
	}
	for _, row := range r.rows {
		s.cb.Send(&pgproto3.DataRow{Values: row})
	}
	s.cb.Send(&pgproto3.CommandComplete{CommandTag: []byte(r.tag)})
}

// ---------------------------------------------------------------- emulation

// emulate runs an emulated statement. A statement failure comes back as an
// *Error; the error result is an I/O failure that ends the session.
func (s *session) emulate(p *plan) (*result, *Error, error) {
	switch p.kind {
	case planCreateTable:
		return s.createTable(p.create)
	case planCopy:
		return s.copy(p.copy)
	case planTruncate:
		// Redshift commits the open transaction before TRUNCATE, which
		// therefore cannot be rolled back and commits everything before it.
		if s.tx == 'T' {
			if _, e, err := s.mustInternal("COMMIT"); err != nil || e != nil {
				return nil, pgError(e), err
			}
		}
		r, e, err := s.mustInternal(p.sql)
		if err != nil || e != nil {
			return nil, pgError(e), err
		}
		return r, nil, nil
	case planSetCaseSensitive:
		s.caseSensitive = p.caseSensitive
		if p.reset {
			s.caseSensitive = s.srv.cfg.CaseSensitiveIdentifiers
			return &result{tag: "RESET"}, nil, nil
		}
		return &result{tag: "SET"}, nil, nil
	case planShowCaseSensitive:
		v := "false"
		if s.caseSensitive {
			v = "true"
		}
		return &result{tag: "SHOW", fields: showRowDescription().Fields, rows: [][][]byte{{[]byte(v)}}}, nil, nil
	}
	return nil, notEmulated("this statement"), nil
}

func showRowDescription() *pgproto3.RowDescription {
	return &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{
		Name: []byte("enable_case_sensitive_identifier"), DataTypeOID: 25, DataTypeSize: -1, TypeModifier: -1,
	}}}
}

// pgError wraps a backend error response as an emulator error, keeping
// every field the client would have seen.
func pgError(e *pgproto3.ErrorResponse) *Error {
	if e == nil {
		return nil
	}
	return &Error{Severity: e.Severity, Code: e.Code, Message: e.Message, Detail: e.Detail, Hint: e.Hint}
}

func (s *session) createTable(ct *createTable) (*result, *Error, error) {
	own := s.tx == 'I'
	rollback := func() error {
		if own {
			_, err := s.internal("ROLLBACK")
			return err
		}
		return nil
	}
	if own {
		if _, e, err := s.mustInternal("BEGIN"); err != nil || e != nil {
			return nil, pgError(e), err
		}
	}
	// Serialize concurrent creators of the same name, so the second one
	// sees the table and skips (IF NOT EXISTS) instead of tripping over a
	// half-created catalog entry.
	if _, e, err := s.mustInternal("SELECT pg_advisory_xact_lock(hashtext(" + quoteLiteral(ct.name.text) + "))"); err != nil || e != nil {
		if err == nil {
			err = rollback()
		}
		return nil, pgError(e), err
	}
	r, e, err := s.mustInternal(ct.pgSQL())
	if err != nil || e != nil {
		if err == nil {
			err = rollback()
		}
		return nil, pgError(e), err
	}
	skipped := false
	for _, n := range r.notices {
		if n.Code == "42P07" { // relation already exists, skipping
			skipped = true
		}
	}
	if !skipped {
		oid, e, err := s.mustInternal("SELECT to_regclass(" + quoteLiteral(ct.name.text) + ")::oid")
		if err != nil || e != nil {
			if err == nil {
				err = rollback()
			}
			return nil, pgError(e), err
		}
		if len(oid.rows) != 1 || oid.rows[0][0] == nil {
			_ = rollback()
			return nil, &Error{Code: CodeInternal, Message: "rsemu: created table " + ct.name.text + " cannot be found"}, nil
		}
		if _, e, err := s.mustInternal(ct.catalogSQL(string(oid.rows[0][0]))); err != nil || e != nil {
			if err == nil {
				err = rollback()
			}
			return nil, pgError(e), err
		}
	}
	if own {
		if _, e, err := s.mustInternal("COMMIT"); err != nil || e != nil {
			return nil, pgError(e), err
		}
	}
	return &result{tag: "CREATE TABLE", notices: r.notices}, nil, nil
}
