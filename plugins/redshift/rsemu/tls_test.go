package rsemu_test

import (
	"context"
	"crypto/tls"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/internal/testenv/testca"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
)

// withSSL is dsn with sslmode (and sslrootcert when given) replaced.
func withSSL(t *testing.T, dsn, mode, rootcert string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("sslmode", mode)
	if rootcert != "" {
		q.Set("sslrootcert", rootcert)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// With Config.TLS the emulator negotiates TLS for clients that ask, with
// the certificate given, and still serves plaintext clients; without it, a
// client requiring TLS is refused.
func TestTLS(t *testing.T) {
	svc := services.Require(t)
	db := svc.NewDatabase(t)
	ca := testca.New(t, "rsemu test CA")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	tlsEmu := rsemu.NewTest(t, rsemu.Config{BackendDSN: db.DSN, TLS: ca.ServerConfig(t, "127.0.0.1", "localhost")})
	plainEmu := rsemu.NewTest(t, rsemu.Config{BackendDSN: db.DSN})

	connect := func(dsn string) (*pgx.Conn, error) {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			t.Cleanup(func() { conn.Close(context.Background()) })
		}
		return conn, err
	}
	query := func(conn *pgx.Conn) {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, "SELECT 41 + 1").Scan(&n); err != nil || n != 42 {
			t.Fatalf("SELECT 41 + 1: %d, %v", n, err)
		}
	}

	conn, err := connect(withSSL(t, tlsEmu.DSN(db.Name), "verify-full", ca.File(t)))
	if err != nil {
		t.Fatalf("verify-full with the CA: %v", err)
	}
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Fatalf("verify-full connection is a %T, want *tls.Conn", conn.PgConn().Conn())
	}
	query(conn)
	if n := tlsEmu.TLSConnections(); n != 1 {
		t.Fatalf("TLSConnections = %d after one TLS client, want 1", n)
	}

	conn, err = connect(tlsEmu.DSN(db.Name)) // sslmode=disable
	if err != nil {
		t.Fatalf("plaintext client of the TLS emulator: %v", err)
	}
	if _, ok := conn.PgConn().Conn().(*tls.Conn); ok {
		t.Fatal("sslmode=disable connection uses TLS")
	}
	query(conn)
	if n := tlsEmu.TLSConnections(); n != 1 {
		t.Fatalf("TLSConnections = %d after a plaintext client, want still 1", n)
	}

	other := testca.New(t, "other CA")
	if _, err := connect(withSSL(t, tlsEmu.DSN(db.Name), "verify-full", other.File(t))); err == nil ||
		!strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("verify-full with another CA: %v, want an unknown authority", err)
	}
	// The emulator is still serving after a client gave up on its handshake.
	conn, err = connect(withSSL(t, tlsEmu.DSN(db.Name), "require", ""))
	if err != nil {
		t.Fatalf("require after a failed handshake: %v", err)
	}
	query(conn)

	if _, err := connect(withSSL(t, plainEmu.DSN(db.Name), "require", "")); err == nil ||
		!strings.Contains(err.Error(), "server refused TLS connection") {
		t.Fatalf("require against the emulator without TLS: %v, want refused", err)
	}
}
