package redshift

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// TLS is whatever pgx makes of the connection string's sslmode and
// sslrootcert (and of PGSSLMODE, PGSSLROOTCERT and ~/.postgresql/root.crt
// when the string does not set them): the sink adds no TLS settings of its
// own. It only reads back which mode is in effect, to log it and to name it
// in errors, and says what to fix when the server's certificate does not
// verify.

// tlsMode is the sslmode in effect for the connection string's first host,
// read back from what pgconn.ParseConfig built. It differs from the sslmode
// written where pgx, like libpq, upgrades it: require with an sslrootcert
// verifies the chain (verify-ca), and sslrootcert=system means verify-full.
func tlsMode(c *pgconn.Config) string {
	var plainFallback, tlsFallback bool
	for _, f := range c.Fallbacks {
		if f.Host != c.Host || f.Port != c.Port {
			continue // another host of a multi-host string
		}
		if f.TLSConfig == nil {
			plainFallback = true
		} else {
			tlsFallback = true
		}
	}
	t := c.TLSConfig
	switch {
	case t == nil && tlsFallback:
		return "allow"
	case t == nil:
		return "disable"
	case plainFallback:
		return "prefer"
	case !t.InsecureSkipVerify:
		return "verify-full"
	case t.VerifyPeerCertificate != nil:
		// pgx checks the chain itself, without the host name.
		return "verify-ca"
	default:
		return "require"
	}
}

// errRefusedTLS is pgconn's text (it has no typed error) for a server that
// answered an SSLRequest with 'N'.
const errRefusedTLS = "server refused TLS connection"

// tlsRefused reports whether err is a server that does not offer TLS while
// mode requires it. Under prefer or allow the same text only records the
// TLS attempt before pgx fell back to plaintext, and says nothing about why
// the connection failed.
func tlsRefused(err error, mode string) bool {
	switch mode {
	case "require", "verify-ca", "verify-full":
		return strings.Contains(err.Error(), errRefusedTLS)
	}
	return false
}

// certHint says what to fix when err is a server certificate that did not
// verify, which fails the same way on every attempt, and is "" for any
// other error. Only verify-ca and verify-full (require with an sslrootcert
// included) verify, so no other mode gets here.
func certHint(err error) string {
	var (
		host    x509.HostnameError
		unknown x509.UnknownAuthorityError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &host):
		return "the server's TLS certificate is not valid for the host name in connection_string, which sslmode=verify-full checks: " +
			"connect through a name the certificate holds, such as the cluster's endpoint name"
	case errors.As(err, &unknown):
		return "the server's TLS certificate is not signed by a CA in sslrootcert (the system's roots when it is not set): " +
			"point sslrootcert at the Amazon Redshift CA bundle (see the TLS section of docs/redshift.md)"
	case errors.As(err, &invalid), errors.As(err, &verify):
		return "the server's TLS certificate did not verify"
	}
	return ""
}

// tlsOpenError is the BAD_CONFIG message for a connection at open that
// failed in TLS in a way the next attempt would repeat, or "" when err is
// not one.
func tlsOpenError(err error, mode string) string {
	if certHint(err) == "" && !tlsRefused(err, mode) {
		return ""
	}
	msg := fmt.Sprintf("Failed to connect to Redshift: %s with sslmode=%s in effect: %s", keyConnectionString, mode, describeErr(err))
	if certHint(err) == "" {
		msg += "; the server does not offer TLS, which sslmode=" + mode + " requires"
	}
	return msg
}
