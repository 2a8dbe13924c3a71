package objstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"golang.org/x/oauth2/jwt"

	"github.com/picomq/heavy-sinks/shared/retry/backoff"
)

// The GCS backend's HTTP layer: one request with its retries, the service's
// error answers, access tokens, and the escaping of names in URLs.

// gcsAttempts bounds the tries of one request, a few quick ones: the sink's
// calls have no deadline, and after these the runtime's batch retry takes
// over. Every request may be repeated: reads and lists trivially, data
// files have unique names, a repeated delete finds nothing to delete, and a
// repeated put-if-absent whose first attempt landed gets 412, which the
// Delta log resolves by reading its commit back.
const gcsAttempts = 4

var gcsWait = backoff.Exponential(200*time.Millisecond, 2, 3*time.Second)

const gcsUserAgent = "picomq-delta-sink"

// gcsTransport is the default transport with room for a batch's concurrent
// uploads to reuse connections, and a bound on the wait for an answer once
// a request is sent, so that a stalled connection becomes a transient
// failure instead of a batch that never returns.
func gcsTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 32
	t.ResponseHeaderTimeout = 2 * time.Minute
	return t
}

// gcsGet builds GET requests of u with header h.
func gcsGet(u string, h http.Header) func(context.Context) (*http.Request, error) {
	return func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err == nil {
			for k, v := range h {
				req.Header[k] = v
			}
		}
		return req, err
	}
}

// call sends the request build makes (afresh for each attempt), retrying
// transient failures, and gives a 2xx answer to read. Any other answer is
// a *gcsStatusError.
func (g *GCS) call(ctx context.Context, build func(context.Context) (*http.Request, error), read func(*http.Response) error) error {
	for attempt := 1; ; attempt++ {
		err := g.attempt(ctx, build, read)
		if err == nil || attempt == gcsAttempts || !gcsTransient(err) {
			return err
		}
		if backoff.Sleep(ctx, gcsWait(attempt)) != nil {
			return err
		}
	}
}

func (g *GCS) attempt(ctx context.Context, build func(context.Context) (*http.Request, error), read func(*http.Response) error) error {
	req, err := build(ctx)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", gcsUserAgent)
	if g.auth != nil {
		tok, err := g.auth.token(ctx)
		if err != nil {
			return err
		}
		tok.SetAuthHeader(req)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return err
	}
	defer func() {
		// Drain a little so that the connection can be reused.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if resp.StatusCode == http.StatusUnauthorized && g.auth != nil {
			g.auth.forget() // a revoked token: the next call fetches another
		}
		return readGCSError(resp)
	}
	return read(resp)
}

// gcsStatusError is an answer other than 2xx, with the JSON API's error
// reason and message when the body has them.
type gcsStatusError struct {
	Code    int
	Reason  string // e.g. "notFound", "conditionNotMet"
	Message string
}

func (e *gcsStatusError) Error() string {
	s := fmt.Sprintf("HTTP %d", e.Code)
	if e.Reason != "" {
		s += " " + e.Reason
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// transient says whether the same request may succeed later: timeouts,
// throttling and server errors.
func (e *gcsStatusError) transient() bool {
	return e.Code == http.StatusRequestTimeout || e.Code == http.StatusTooManyRequests || e.Code >= 500
}

// bucketMissing tells a 404 for the bucket from one for the object: a list
// names no object, and otherwise the service's message says which ("No such
// object: b/o" or "The specified bucket does not exist.").
func (e *gcsStatusError) bucketMissing(op string) bool {
	msg := strings.ToLower(e.Message)
	return op == "list" || (strings.Contains(msg, "bucket") && !strings.HasPrefix(msg, "no such object"))
}

// readGCSError reads an error answer: {"error": {"code", "message",
// "errors": [{"reason", "message"}]}}, or, from something other than the
// API (a proxy), the start of whatever the body is.
func readGCSError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &gcsStatusError{Code: resp.StatusCode}
	var v struct {
		Error struct {
			Message string `json:"message"`
			Errors  []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil {
		e.Message = v.Error.Message
		if len(v.Error.Errors) > 0 {
			e.Reason = v.Error.Errors[0].Reason
		}
	} else {
		e.Message = strings.TrimSpace(string(body[:min(len(body), 200)]))
	}
	return e
}

// gcsTransient reports whether a failure may go away by itself: an error
// answer that says so, the token endpoint's, or no answer at all because
// of the network. A TLS certificate the client refuses, a malformed answer
// or a key that does not sign are not.
func gcsTransient(err error) bool {
	var se *gcsStatusError
	if errors.As(err, &se) {
		return se.transient()
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		c := re.Response.StatusCode
		return c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errGCSDamaged) {
		return true
	}
	var op *net.OpError
	var dns *net.DNSError
	if errors.As(err, &op) || errors.As(err, &dns) {
		return true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		// io.EOF: the server closed the connection without an answer.
		return ue.Timeout() || errors.Is(ue.Err, io.EOF)
	}
	return false
}

// errGCSDamaged is a read whose bytes do not match the stored checksum.
var errGCSDamaged = errors.New("damaged on the way")

// checkCRC32C compares a whole object's bytes with the CRC32C in the
// answer's X-Goog-Hash, when the bytes are the stored ones (not
// decompressed on the way).
func checkCRC32C(resp *http.Response, data []byte) error {
	if resp.Uncompressed {
		return nil
	}
	if enc := resp.Header.Get("X-Goog-Stored-Content-Encoding"); enc != "" && enc != "identity" {
		return nil
	}
	for _, h := range resp.Header.Values("X-Goog-Hash") {
		for _, kv := range strings.Split(h, ",") {
			if want, ok := strings.CutPrefix(strings.TrimSpace(kv), "crc32c="); ok && want != gcsCRC32C(data) {
				// Damaged on the way: the service checked the bytes when
				// they were stored.
				return fmt.Errorf("%w: read %d bytes whose CRC32C is not the stored %s", errGCSDamaged, len(data), want)
			}
		}
	}
	return nil
}

// gcsAuth holds an access token, fetched when there is none or it is
// about to expire. Google's library does the signing and the exchange; the
// cache is here so that each fetch of a key's token runs under the caller's
// context and a network failure keeps its type (the library's own token
// source flattens it into a string).
type gcsAuth struct {
	// A service account key's JWT config and the transport its token
	// requests take, or, for default credentials, their token source.
	conf         *jwt.Config
	transport    http.RoundTripper
	fetchDefault func() (*oauth2.Token, error)

	kind    string   // the credentials' type, for messages
	secrets []string // what of the credentials must never be shown

	mu  sync.Mutex
	tok *oauth2.Token
}

// gcsTokenTimeout bounds a token fetch, which other requests wait for.
const gcsTokenTimeout = 30 * time.Second

// newGCSKeyAuth fetches tokens for a service account key from its
// token_uri (OAuth 2.0 JWT bearer grant).
func newGCSKeyAuth(conf *jwt.Config, transport http.RoundTripper, secrets []string) *gcsAuth {
	return &gcsAuth{conf: conf, transport: transport, kind: "service_account", secrets: secrets}
}

// fetch gets a new token. Callers hold a.mu.
func (a *gcsAuth) fetch(ctx context.Context) (*oauth2.Token, error) {
	if a.conf == nil {
		return a.fetchDefault()
	}
	rec := &tokenTransport{ctx: ctx, next: a.transport}
	tok, err := a.conf.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Transport: rec})).Token()
	return tok, rec.cause(err)
}

// findGCSDefaultAuth looks for Application Default Credentials:
// GOOGLE_APPLICATION_CREDENTIALS, gcloud's well-known file, then the
// metadata server. Any credential type Google's library knows is taken
// (service account, authorized user, external account for workload
// identity federation, impersonation): the file is the operator's own
// environment, not configuration that arrived from elsewhere. The library
// keeps the context it is given for every later fetch, so tokens go
// through a client whose timeout bounds them, not under the caller's
// context.
func findGCSDefaultAuth(transport http.RoundTripper) (*gcsAuth, error) {
	rec := &tokenTransport{next: transport}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: rec, Timeout: gcsTokenTimeout})
	creds, err := google.FindDefaultCredentialsWithParams(ctx, google.CredentialsParams{Scopes: []string{gcsScope}})
	if err != nil {
		// The library's message says what it could not read or parse; it
		// quotes no credential. A file that is there and still failed is
		// not credentials: configuration. Nothing found (no file yet, no
		// metadata server) may change by itself, as in a starting pod.
		bad := existingADCFile()
		msg := message{"'%s' = true but no Google credentials were found; tried %s: %s", []any{OptGCSDefaultCredentials, gcsTried, err.Error()}}
		if bad != "" {
			msg = message{"'%s' = true but no Google credentials were found; tried %s: %s (in %s)", []any{OptGCSDefaultCredentials, gcsTried, err.Error(), bad}}
		}
		return nil, &CredentialError{Backend: BackendGCS, Option: OptGCSDefaultCredentials, Transient: bad == "", msg: msg}
	}
	var k gcsKey
	_ = json.Unmarshal(creds.JSON, &k)
	a := &gcsAuth{kind: credentialType(k), secrets: gcsSecrets(string(creds.JSON))}
	a.fetchDefault = func() (*oauth2.Token, error) {
		// a.mu is held: one fetch at a time uses rec.
		rec.err = nil
		tok, err := creds.TokenSource.Token()
		return tok, rec.cause(err)
	}
	return a, nil
}

// existingADCFile returns the credentials file Application Default
// Credentials reads first that exists: GOOGLE_APPLICATION_CREDENTIALS, else
// gcloud's well-known file; "" when there is none.
func existingADCFile() string {
	if p := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		return ""
	}
	// Where Google's library looks (it prefers $HOME, as here).
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	p := filepath.Join(home, ".config", "gcloud", "application_default_credentials.json")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

func (a *gcsAuth) token(ctx context.Context) (*oauth2.Token, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tok.Valid() {
		return a.tok, nil
	}
	ctx, cancel := context.WithTimeout(ctx, gcsTokenTimeout)
	defer cancel()
	tok, err := a.fetch(ctx)
	if err != nil {
		return nil, err
	}
	a.tok = tok
	return tok, nil
}

// forget drops the cached token after a 401. (Default credentials keep
// their own cache too, so a revoked token of theirs lasts until it
// expires.)
func (a *gcsAuth) forget() {
	a.mu.Lock()
	a.tok = nil
	a.mu.Unlock()
}

// tokenTransport sends the token request under ctx when it has one (the
// library sends it without one) and keeps the error if it got no answer.
type tokenTransport struct {
	ctx  context.Context
	next http.RoundTripper
	err  error
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.ctx != nil {
		req = req.WithContext(t.ctx)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		t.err = err
	}
	return resp, err
}

// cause returns the network error behind a failed fetch, which keeps its
// type for gcsTransient, or err itself.
func (t *tokenTransport) cause(err error) error {
	if err != nil && t.err != nil {
		return fmt.Errorf("fetch an access token: %w", t.err)
	}
	return err
}

// gcsEscape percent-encodes a bucket or object name for a URL path segment
// or a query value: every byte but RFC 3986's unreserved characters.
// url.PathEscape and QueryEscape leave or produce '+', which servers do not
// all read alike, and Delta names hold '=' and '%' (partition values are
// escaped in file names), so nothing is left to interpretation.
func gcsEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}
