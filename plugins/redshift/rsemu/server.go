package rsemu

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// DefaultRole is the IAM role attached to the emulated cluster when
// Config.AttachedRoles is empty.
const DefaultRole = "arn:aws:iam::123456789012:role/RedshiftCopy"

// Config configures a Server.
type Config struct {
	// Addr is the TCP address to listen on. Default "127.0.0.1:0" (a free port).
	Addr string
	// BackendDSN is a libpq URL or key=value string for the PostgreSQL that
	// stores the data. Required. Its user and password are the only
	// credentials the emulator accepts from clients (cleartext password
	// authentication); the database a client names replaces the DSN's.
	BackendDSN string
	// S3Endpoint, S3AccessKey, S3SecretKey and S3Region are what the
	// emulated cluster uses to read COPY sources: the role's view of S3.
	// S3Region defaults to us-east-1. Without S3Endpoint, COPY fails.
	S3Endpoint  string
	S3AccessKey string
	S3SecretKey string
	S3Region    string
	// AttachedRoles are the IAM role ARNs attached to the cluster; COPY with
	// any other role fails like Redshift. Default: []string{DefaultRole}.
	AttachedRoles []string
	// CaseSensitiveIdentifiers is the initial enable_case_sensitive_identifier
	// of every session. Default false, as on Redshift: quoted identifiers are
	// folded to lower case.
	CaseSensitiveIdentifiers bool
	// TLS, when set, makes the emulator accept TLS as a cluster does: an
	// SSLRequest is answered 'S' and the connection continues over TLS with
	// this configuration (its certificate is what clients verify). Clients
	// that do not ask for TLS are still served in plaintext, as on a cluster
	// with require_ssl off. Default nil: every SSLRequest is answered 'N',
	// so clients that require TLS are refused.
	TLS *tls.Config
	// Logger receives connection-level events. Default: discarded.
	Logger *slog.Logger
	// CopyLatency is a fixed time every COPY spends before it loads, and
	// CommitLatency the time every commit that wrote spends in the
	// cluster-wide commit queue, one commit at a time (cost.go; README.md
	// says which statements count). They model a real cluster's cost for
	// benchmarks; README.md gives the values to use and where they come
	// from. Default 0: no statement waits.
	CopyLatency   time.Duration
	CommitLatency time.Duration
}

// Server is a running Redshift emulator: a PostgreSQL wire-protocol proxy
// that rewrites or emulates Redshift statements in front of a real
// PostgreSQL and reads COPY sources from S3.
type Server struct {
	cfg     Config
	ln      net.Listener
	backend *pgconn.Config
	s3      *s3.Client
	roles   map[string]bool
	log     *slog.Logger

	mu       sync.Mutex
	closed   bool
	nextID   int
	sessions map[*session]struct{}
	stmts    []Statement
	requests int // client requests answered with ReadyForQuery: simple queries and Syncs
	faults   []*FaultHandle
	password string   // what clients must present; the backend's unless SetPassword changed it
	issued   []issued // temporary credentials from IssueCredentials
	tlsConns int      // client connections that completed a TLS handshake

	commitMu sync.Mutex // the cluster's commit queue (commitTurn)

	wg sync.WaitGroup
}

// Statement is one statement the emulator received, in arrival order.
type Statement struct {
	// Session numbers client connections from 1 in accept order.
	Session int
	// SQL is the statement text as the client sent it (one statement of a
	// multi-statement simple query; for the extended protocol, the text of
	// the prepared statement each time a portal of it is executed).
	SQL string
}

// New starts an emulator listening on cfg.Addr.
func New(cfg Config) (*Server, error) {
	if cfg.BackendDSN == "" {
		return nil, errors.New("rsemu: Config.BackendDSN is required")
	}
	bcfg, err := pgconn.ParseConfig(cfg.BackendDSN)
	if err != nil {
		return nil, fmt.Errorf("rsemu: parse BackendDSN: %w", err)
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.S3Region == "" {
		cfg.S3Region = "us-east-1"
	}
	if len(cfg.AttachedRoles) == 0 {
		cfg.AttachedRoles = []string{DefaultRole}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{
		cfg:      cfg,
		backend:  bcfg,
		roles:    map[string]bool{},
		log:      cfg.Logger,
		sessions: map[*session]struct{}{},
		password: bcfg.Password,
	}
	for _, r := range cfg.AttachedRoles {
		s.roles[r] = true
	}
	if cfg.S3Endpoint != "" {
		s.s3 = s3.NewFromConfig(aws.Config{
			Region:      cfg.S3Region,
			Credentials: credentials.NewStaticCredentialsProvider(cfg.S3AccessKey, cfg.S3SecretKey, ""),
		}, func(o *s3.Options) {
			o.BaseEndpoint = aws.String(cfg.S3Endpoint)
			o.UsePathStyle = true
		})
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("rsemu: listen: %w", err)
	}
	s.ln = ln
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// NewTest starts an emulator for a test and closes it in t.Cleanup.
func NewTest(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Addr is the address the emulator listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// DSN is a libpq URL that connects through the emulator to database with the
// backend's credentials. Note sslmode=disable, also when Config.TLS is set:
// tests that want TLS set sslmode (and sslrootcert) themselves.
func (s *Server) DSN(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(s.backend.User, s.clientPassword()),
		Host:     s.Addr(),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// SetPassword changes the password clients must present from now on, as
// ALTER USER ... PASSWORD does on a cluster: sessions already open stay
// open, new logins with the old password fail with 28P01. The emulator
// keeps using the backend DSN's own credentials.
func (s *Server) SetPassword(password string) {
	s.mu.Lock()
	s.password = password
	s.mu.Unlock()
}

// TLSConnections is the number of client connections that completed a TLS
// handshake so far, so a test can tell that a client really used TLS.
func (s *Server) TLSConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tlsConns
}

func (s *Server) clientPassword() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.password
}

// Close stops accepting, drops every client and backend connection, and
// waits for the sessions to end.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	sessions := make([]*session, 0, len(s.sessions))
	for ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	err := s.ln.Close()
	for _, ss := range sessions {
		ss.close()
	}
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.nextID++
		ss := newSession(s, s.nextID, c)
		s.sessions[ss] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			ss.serve()
			s.mu.Lock()
			delete(s.sessions, ss)
			s.mu.Unlock()
		}()
	}
}

// record appends to the statement log.
func (s *Server) record(session int, sql string) {
	s.mu.Lock()
	s.stmts = append(s.stmts, Statement{Session: session, SQL: sql})
	s.mu.Unlock()
}

// Statements returns the text of every statement received so far, in order.
func (s *Server) Statements() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.stmts))
	for i, st := range s.stmts {
		out[i] = st.SQL
	}
	return out
}

// StatementLog returns every statement received so far with its session.
func (s *Server) StatementLog() []Statement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Statement(nil), s.stmts...)
}

// CountStatements counts logged statements matching the regular expression
// pattern (use (?i) for case-insensitive matching).
func (s *Server) CountStatements(pattern string) int {
	re := regexp.MustCompile(pattern)
	n := 0
	for _, st := range s.Statements() {
		if re.MatchString(st) {
			n++
		}
	}
	return n
}

// ResetStatements empties the statement log and zeroes RoundTrips.
func (s *Server) ResetStatements() {
	s.mu.Lock()
	s.stmts = nil
	s.requests = 0
	s.mu.Unlock()
}

// RoundTrips counts the requests clients made that the server answers with
// ReadyForQuery, each a wait for the client: every simple-protocol Query
// (however many statements it holds) and every extended-protocol Sync.
func (s *Server) RoundTrips() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// countRequest counts one request for RoundTrips.
func (s *Server) countRequest() {
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
}

// forwardCancel relays a client's CancelRequest to the backend: the client
// holds the backend's own process id and key, so it is passed on verbatim.
func (s *Server) forwardCancel(req *pgproto3.CancelRequest) {
	addr := net.JoinHostPort(s.backend.Host, strconv.Itoa(int(s.backend.Port)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		s.log.Warn("rsemu: forward cancel", "err", err)
		return
	}
	defer c.Close()
	buf, err := req.Encode(nil)
	if err != nil {
		return
	}
	_, _ = c.Write(buf)
	// The server closes the connection when done; wait briefly for that.
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, _ = c.Read(make([]byte, 1))
}
