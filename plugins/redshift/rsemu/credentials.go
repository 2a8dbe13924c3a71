package rsemu

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"time"
)

// issued is one set of temporary credentials the emulated cluster accepts.
type issued struct {
	user, password string
	expires        time.Time
}

// IssueCredentials makes the emulator accept user with a new random
// password until expires, as the temporary credentials Redshift's
// GetClusterCredentials and Serverless GetCredentials issue: a login is
// checked against them when it happens, so a session opened before expires
// stays open after it. user may be any name ("IAM:alice"); the session runs
// as the backend DSN's user. Earlier credentials of the same user stay
// valid until their own expiry, as on Redshift.
func (s *Server) IssueCredentials(user string, expires time.Time) (password string) {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	password = "rsemu-tmp-" + base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	kept := s.issued[:0]
	for _, c := range s.issued {
		if now.Before(c.expires) {
			kept = append(kept, c)
		}
	}
	s.issued = append(kept, issued{user: user, password: password, expires: expires})
	return password
}

// checkIssued reports whether user and password are unexpired issued
// credentials.
func (s *Server) checkIssued(user, password string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	ok := false
	for _, c := range s.issued {
		if c.user == user && now.Before(c.expires) &&
			subtle.ConstantTimeCompare([]byte(c.password), []byte(password)) == 1 {
			ok = true
		}
	}
	return ok
}
