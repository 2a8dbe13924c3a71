package registry

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds each request to the registry when Config.Timeout
// is zero (the definition key schema_registry_timeout's default).
const DefaultTimeout = 10 * time.Second

// DefaultUnknownIDGrace is how long a schema id the registry says it does
// not know is taken for a replica lagging behind a new registration (a
// transient error: the batch is decoded again) when Config.UnknownIDGrace
// is zero. It is counted from the first time the Decoder saw that id
// unknown; after it, the id is the record's error. A follower catches up
// with a registration in well under a second; 5 s covers that while a
// stream of payloads naming ids nobody registered (garbage that happens to
// start with byte 0) holds its partition about 6 s per id, not a minute.
const DefaultUnknownIDGrace = 5 * time.Second

// DefaultUserAgent is sent when Config.UserAgent is empty.
const DefaultUserAgent = "picomq-connect"

// Config says how to reach a Schema Registry. Secret values come already
// resolved (the definition names environment variables; the wiring reads
// them): Config never reads the environment. String and %v redact them.
type Config struct {
	// URLs are the registry's base URLs (for Apicurio, the Confluent API's
	// base, e.g. http://host:8080/apis/ccompat/v6). Each request tries them
	// in order until one answers at the HTTP level.
	URLs []string
	// BasicAuth is "user:password" (Kafka Connect's basic.auth.user.info
	// form); empty for none.
	BasicAuth string
	// BearerToken is sent as "Authorization: Bearer ..."; empty for none.
	// At most one of BasicAuth and BearerToken.
	BearerToken string
	// TLS is the client's TLS configuration for https URLs; nil for Go's
	// defaults (the system roots). connect/decode/build fills it from
	// schema_registry_ca_path, whose file it reads and checks at start.
	TLS *tls.Config
	// Timeout bounds each HTTP request (connect, send, read the whole
	// answer); DefaultTimeout when zero.
	Timeout time.Duration
	// UserAgent is sent with each request; DefaultUserAgent when empty.
	UserAgent string
	// UnknownIDGrace is how long an id the registry answers "not found"
	// for is retried before it is the record's error, counted from the
	// first time the Decoder saw it unknown; DefaultUnknownIDGrace when
	// zero.
	UnknownIDGrace time.Duration
}

// String describes the config without its secrets, so that a Config in a
// log line or an error never leaks them.
func (c Config) String() string {
	auth := "none"
	switch {
	case c.BasicAuth != "":
		auth = "basic (redacted)"
	case c.BearerToken != "":
		auth = "bearer (redacted)"
	}
	return fmt.Sprintf("registry{urls=%s auth=%s tls=%s timeout=%s}", strings.Join(c.URLs, ","), auth, c.tlsName(), c.timeout())
}

// GoString redacts like String (%#v).
func (c Config) GoString() string { return c.String() }

func (c Config) tlsName() string {
	if c.TLS != nil && c.TLS.RootCAs != nil {
		return "custom-roots"
	}
	return "default"
}

func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c Config) unknownIDGrace() time.Duration {
	if c.UnknownIDGrace > 0 {
		return c.UnknownIDGrace
	}
	return DefaultUnknownIDGrace
}

// validate checks the URLs and the auth settings. Its errors never quote
// a secret: a URL with user info is named without it.
func (c Config) validate() error {
	if len(c.URLs) == 0 {
		return errors.New("schema registry: no URL")
	}
	for _, raw := range c.URLs {
		u, err := url.Parse(raw)
		if err != nil {
			return fmt.Errorf("schema registry: URL %d of %d does not parse", indexOf(c.URLs, raw)+1, len(c.URLs))
		}
		if u.User != nil {
			u.User = nil
			return fmt.Errorf("schema registry: URL %s carries credentials; give them with schema_registry_basic_auth_env instead", u.Redacted())
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("schema registry: URL %q is not an http or https URL with a host", raw)
		}
	}
	if c.BasicAuth != "" && c.BearerToken != "" {
		return errors.New("schema registry: basic auth and a bearer token are both set; give one")
	}
	if c.BasicAuth != "" && !strings.Contains(c.BasicAuth, ":") {
		return errors.New("schema registry: the basic auth value is not in the user:password form")
	}
	if c.Timeout < 0 {
		return fmt.Errorf("schema registry: timeout %s is negative", c.Timeout)
	}
	if c.UnknownIDGrace < 0 {
		return fmt.Errorf("schema registry: unknown-id grace %s is negative", c.UnknownIDGrace)
	}
	return nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// httpClient is the client every request goes through: its Timeout bounds
// each request whatever the caller's context says.
func (c Config) httpClient() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSHandshakeTimeout = c.timeout()
	tr.ResponseHeaderTimeout = c.timeout()
	if c.TLS != nil {
		tr.TLSClientConfig = c.TLS.Clone()
	}
	return &http.Client{Transport: tr, Timeout: c.timeout()}, nil
}
