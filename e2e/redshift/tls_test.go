package redshift_test

import (
	"crypto/tls"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/testca"
	"github.com/picomq/heavy-sinks/plugins/redshift/redshifttest"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// sslDSN is the emulator's URL for the world's database with sslmode and,
// when not empty, sslrootcert.
func (w *world) sslDSN(emu *rsemu.Server, mode, rootcert string) string {
	w.t.Helper()
	u, err := url.Parse(emu.DSN(w.db.Name))
	if err != nil {
		w.t.Fatal(err)
	}
	q := u.Query()
	q.Set("sslmode", mode)
	if rootcert != "" {
		q.Set("sslrootcert", rootcert)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TLS as pgx does it, proven against emulators that serve a certificate
// made in the test: verify-full with the right CA loads (and really went
// through TLS); a CA that did not sign the server's certificate, a host
// name the certificate does not hold, or a server without TLS when sslmode
// requires it fail open() BAD_CONFIG naming the sslmode in effect and what
// to fix, with the password in no message; what each weaker mode accepts.
func TestTLS(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ca := testca.New(t, "Test Redshift CA")
	caFile := ca.File(t)
	otherCA := testca.New(t, "Some Other CA").File(t)
	// good holds the address the sink connects to; wrong only a name that
	// is not it, as a certificate for another endpoint would.
	good := w.newEmulator(t, func(c *rsemu.Config) { c.TLS = ca.ServerConfig(t, "127.0.0.1", "localhost") })
	wrong := w.newEmulator(t, func(c *rsemu.Config) { c.TLS = ca.ServerConfig(t, "cluster.wrong.example") })
	plain := w.emu // answers every SSLRequest 'N'

	// loads opens a sink on dsn, loads three records into table and checks
	// they landed, reading the backend directly.
	loads := func(t *testing.T, table, dsn string) {
		t.Helper()
		inst := w.open("tls_"+table, w.config(map[string]any{"connection_string": dsn, "target_table": table}))
		consume(t, inst, batch("orders", 0, 3))
		w.exactlyOnce(table, "orders", 0, 2)
	}
	var texts []string // every error message, to check for the password
	refused := func(t *testing.T, emu *rsemu.Server, dsn string, contains ...string) {
		t.Helper()
		before := emu.CountStatements(`.`)
		se := w.openErr("tls_refused", w.config(map[string]any{"connection_string": dsn, "target_table": "tls_refused"}))
		wantStatus(t, se, hostclient.StatusBadConfig, contains...)
		texts = append(texts, se.Message)
		if n := emu.CountStatements(`.`); n != before {
			t.Errorf("a refused connection ran %d statements", n-before)
		}
	}

	t.Run("verify-full with the CA", func(t *testing.T) {
		before := good.TLSConnections()
		loads(t, "tls_full", w.sslDSN(good, "verify-full", caFile))
		if good.TLSConnections() == before {
			t.Error("the emulator saw no TLS connection")
		}
		if !strings.Contains(logText(w.host.Logs()), "Redshift sink opened target_table=tls_full") ||
			!strings.Contains(logText(w.host.Logs()), "sslmode=verify-full") {
			t.Errorf("the open log line does not name sslmode=verify-full:\n%s", logText(w.host.Logs()))
		}
	})
	t.Run("verify-full with another CA", func(t *testing.T) {
		refused(t, good, w.sslDSN(good, "verify-full", otherCA),
			"Failed to connect to Redshift: connection_string with sslmode=verify-full in effect: ",
			"x509: certificate signed by unknown authority",
			"not signed by a CA in sslrootcert", "point sslrootcert at the Amazon Redshift CA bundle")
	})
	t.Run("verify-ca with another CA", func(t *testing.T) {
		refused(t, good, w.sslDSN(good, "verify-ca", otherCA),
			"with sslmode=verify-ca in effect: ", "x509: certificate signed by unknown authority")
	})
	t.Run("require with sslrootcert verifies the chain", func(t *testing.T) {
		// As in libpq: require with a root certificate is verify-ca.
		refused(t, good, w.sslDSN(good, "require", otherCA),
			"with sslmode=verify-ca in effect: ", "x509: certificate signed by unknown authority")
	})
	t.Run("verify-full with a certificate for another host", func(t *testing.T) {
		refused(t, wrong, w.sslDSN(wrong, "verify-full", caFile),
			"with sslmode=verify-full in effect: ",
			// Connecting by address to a certificate with names only, as
			// connecting to a cluster by IP instead of its endpoint name.
			"x509: cannot validate certificate for 127.0.0.1",
			"not valid for the host name in connection_string")
	})
	t.Run("verify-ca with a certificate for another host", func(t *testing.T) {
		before := wrong.TLSConnections()
		loads(t, "tls_ca", w.sslDSN(wrong, "verify-ca", caFile))
		if wrong.TLSConnections() == before {
			t.Error("the emulator saw no TLS connection")
		}
	})
	t.Run("require without sslrootcert does not verify", func(t *testing.T) {
		// The certificate is for another host and from a CA the sink was
		// never given, and require takes it: encryption only.
		before := wrong.TLSConnections()
		loads(t, "tls_require", w.sslDSN(wrong, "require", ""))
		if wrong.TLSConnections() == before {
			t.Error("the emulator saw no TLS connection")
		}
	})
	for _, mode := range []string{"require", "verify-ca", "verify-full"} {
		t.Run(mode+" against a server without TLS", func(t *testing.T) {
			root := caFile
			if mode == "require" {
				root = ""
			}
			refused(t, plain, w.sslDSN(plain, mode, root),
				"with sslmode="+mode+" in effect: ", "server refused TLS connection",
				"the server does not offer TLS, which sslmode="+mode+" requires")
		})
	}
	t.Run("prefer falls back to plaintext", func(t *testing.T) {
		loads(t, "tls_prefer_plain", w.sslDSN(plain, "prefer", ""))
	})
	t.Run("prefer takes TLS without verifying", func(t *testing.T) {
		before := wrong.TLSConnections()
		loads(t, "tls_prefer", w.sslDSN(wrong, "prefer", otherCA))
		if wrong.TLSConnections() == before {
			t.Error("the emulator saw no TLS connection")
		}
	})
	t.Run("disable stays plaintext", func(t *testing.T) {
		before := good.TLSConnections()
		loads(t, "tls_disable", w.sslDSN(good, "disable", ""))
		if n := good.TLSConnections(); n != before {
			t.Errorf("%d TLS connections under sslmode=disable", n-before)
		}
	})
	t.Run("certificate from another CA after open", func(t *testing.T) {
		// The cluster's certificate changes to one the bundle does not
		// cover while the sink runs: the pool's next new connection fails,
		// the batch fails RETRY saying why (consume cannot answer
		// BAD_CONFIG), and once the certificate verifies again the
		// redelivered batch lands.
		signedByCA := ca.ServerConfig(t, "127.0.0.1").Certificates[0]
		signedByOther := testca.New(t, "Rotated CA").ServerConfig(t, "127.0.0.1").Certificates[0]
		var current atomic.Pointer[tls.Certificate]
		current.Store(&signedByCA)
		rotating := w.newEmulator(t, func(c *rsemu.Config) {
			c.TLS = &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return current.Load(), nil }}
		})
		inst := w.open("tls_rotated", w.config(map[string]any{
			"connection_string": w.sslDSN(rotating, "verify-full", caFile), "target_table": "tls_rotated"}))
		current.Store(&signedByOther)
		rotating.DropOn(`(?i)^BEGIN`, 1) // the pool's open connection goes away
		err := inst.Consume(batch("orders", 0, 3))
		// The drop is retried; the certificate is not: it would fail the same.
		se := wantStatus(t, err, hostclient.StatusRetry, "Redshift connection failed after 2 attempts: ",
			"x509: certificate signed by unknown authority",
			"point sslrootcert at the Amazon Redshift CA bundle")
		texts = append(texts, se.Message)
		if n := w.count("tls_rotated"); n != 0 {
			t.Fatalf("%d rows landed through a certificate that does not verify", n)
		}
		current.Store(&signedByCA)
		consume(t, inst, batch("orders", 0, 3))
		w.exactlyOnce("tls_rotated", "orders", 0, 2)
	})
	t.Run("sslrootcert that does not exist", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "redshift-ca-bundle.crt")
		se := w.openErr("tls_missing", w.config(map[string]any{"connection_string": w.sslDSN(good, "verify-full", missing)}))
		wantStatus(t, se, hostclient.StatusBadConfig, "connection_string: ", "unable to read CA file", missing, "no such file or directory")
		texts = append(texts, se.Message)
	})

	texts = append(texts, logText(w.host.Logs()), w.host.Stderr())
	redshifttest.NoSecret(t, texts, serviceSecrets()...)
}
