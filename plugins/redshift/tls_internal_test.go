package redshift

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/picomq/heavy-sinks/internal/testenv/testca"
)

// tlsMode reads back the mode pgx put in effect, which also pins pgx's
// semantics: a pgx release that changed what require with an sslrootcert
// means would fail here, not silently in production.
func TestTLSMode(t *testing.T) {
	// No PGSSL* variables or ~/.postgresql/root.crt of the machine may
	// change what the strings below mean.
	t.Setenv("HOME", t.TempDir())
	for _, v := range []string{"PGSSLMODE", "PGSSLROOTCERT", "PGSSLNEGOTIATION", "PGSSLSNI"} {
		t.Setenv(v, "")
	}
	root := testca.New(t, "mode CA").File(t)
	tests := []struct{ conn, want string }{
		{"postgres://u:pw@rs.example:5439/db", "prefer"}, // pgx's default, as libpq's
		{"postgres://u:pw@rs.example:5439/db?sslmode=disable", "disable"},
		{"postgres://u:pw@rs.example:5439/db?sslmode=allow", "allow"},
		{"postgres://u:pw@rs.example:5439/db?sslmode=prefer", "prefer"},
		{"postgres://u:pw@rs.example:5439/db?sslmode=require", "require"},
		{"postgres://u:pw@rs.example:5439/db?sslmode=require&sslrootcert=" + root, "verify-ca"},
		{"postgres://u:pw@rs.example:5439/db?sslmode=verify-ca&sslrootcert=" + root, "verify-ca"},
		{"postgres://u:pw@rs.example:5439/db?sslmode=verify-full&sslrootcert=" + root, "verify-full"},
		{"postgres://u:pw@rs.example:5439/db?sslmode=verify-full", "verify-full"}, // the system's roots
		{"postgres://u:pw@rs.example:5439/db?sslmode=require&sslrootcert=system", "verify-full"},
		{"postgres://u:pw@rs.example:5439/db?sslnegotiation=direct", "require"},
		{"postgres://u:pw@a.example:5439,b.example:5439/db?sslmode=require", "require"},
		{"postgres://u:pw@a.example:5439,b.example:5439/db?sslmode=prefer", "prefer"},
		{"host=rs.example port=5439 user=u password=pw sslmode=verify-full sslrootcert=" + root, "verify-full"},
		{"host=rs.example user=u sslmode=disable", "disable"},
	}
	for _, tt := range tests {
		t.Run(tt.conn, func(t *testing.T) {
			c, err := pgconn.ParseConfig(tt.conn)
			if err != nil {
				t.Fatal(err)
			}
			if got := tlsMode(c); got != tt.want {
				t.Errorf("tlsMode = %q, want %q", got, tt.want)
			}
		})
	}
}

// certHint recognises the errors certificate verification really returns,
// bare (pgx's own chain check under verify-ca) and wrapped (crypto/tls under
// verify-full, then pgconn), and nothing else; tlsOpenError adds a server
// refusing TLS, but only under a mode that requires it.
func TestTLSOpenError(t *testing.T) {
	ca := testca.New(t, "hint CA")
	other := testca.New(t, "other CA")
	leaf, err := x509.ParseCertificate(ca.ServerConfig(t, "wrong.example").Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	verify := func(roots *testca.CA, name string) error {
		pool := x509.NewCertPool()
		pool.AddCert(roots.Cert)
		_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name})
		if err == nil {
			t.Fatalf("verify against %s for %q succeeded", roots.Cert.Subject.CommonName, name)
		}
		return err
	}
	wrap := func(err error) error { return fmt.Errorf("failed to connect: tls error: %w", err) }
	refused := wrap(errors.New(errRefusedTLS))
	// What pgx reports under prefer when the TLS attempt was refused and
	// the plaintext one then failed too: a connection problem, not TLS.
	fellBack := errors.Join(refused, wrap(errors.New("dial error: connection refused")))
	tests := []struct {
		name string
		err  error
		mode string
		want string // "" for no BAD_CONFIG message
	}{
		{"host name", verify(ca, "localhost"), "verify-full", "not valid for the host name"},
		{"host name wrapped", wrap(verify(ca, "localhost")), "verify-full", "not valid for the host name"},
		{"unknown CA", verify(other, ""), "verify-ca", "not signed by a CA in sslrootcert"},
		{"unknown CA wrapped", wrap(verify(other, "")), "verify-full", "not signed by a CA in sslrootcert"},
		{"plaintext server, require", refused, "require", "does not offer TLS, which sslmode=require requires"},
		{"plaintext server, verify-full", refused, "verify-full", "does not offer TLS, which sslmode=verify-full requires"},
		{"plaintext fallback failed, prefer", fellBack, "prefer", ""},
		{"plaintext fallback failed, allow", fellBack, "allow", ""},
		{"refused connection", wrap(errors.New("dial error: connection refused")), "verify-full", ""},
		{"password", &pgconn.PgError{Code: "28P01", Message: "password authentication failed"}, "verify-full", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tlsOpenError(tt.err, tt.mode)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("tlsOpenError(%v, %s) = %q, want it to contain %q", tt.err, tt.mode, got, tt.want)
			}
			if got != "" && !strings.Contains(got, "with sslmode="+tt.mode+" in effect: ") {
				t.Errorf("tlsOpenError(%v, %s) = %q does not name the mode", tt.err, tt.mode, got)
			}
		})
	}
}
