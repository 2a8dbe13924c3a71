package registry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/picomq/heavy-sinks/connect/decode"
)

// Schema is one registered schema with everything needed to compile it.
type Schema struct {
	// ID is the registry's id of the schema (the one in the payload header).
	ID int
	// Type is AVRO or PROTOBUF (JSON schemas are not decoded).
	Type sr.SchemaType
	// Text is the schema itself: Avro JSON, or .proto source text.
	Text string
	// References are the schemas it references, transitively, by the name
	// the schema uses for them (an Avro full type name, a .proto import
	// path) -> their text.
	References map[string]string
}

// Client fetches schemas by id from a Schema Registry, with their
// references resolved. References (subject + version) are cached; schemas
// by id are cached by the Decoder, which knows which ones compiled.
type Client struct {
	cl    *sr.Client
	base  string        // the URLs, for messages
	grace time.Duration // Config.UnknownIDGrace, defaulted

	mu   sync.Mutex
	refs map[refKey]sr.SubjectSchema
}

type refKey struct {
	subject string
	version int
}

// New returns a Client for cfg. It makes no request.
func New(cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	httpcl, err := cfg.httpClient()
	if err != nil {
		return nil, err
	}
	ua := cfg.UserAgent
	if ua == "" {
		ua = DefaultUserAgent
	}
	opts := []sr.ClientOpt{sr.URLs(cfg.URLs...), sr.HTTPClient(httpcl), sr.UserAgent(ua)}
	if cfg.BasicAuth != "" {
		user, pass, _ := strings.Cut(cfg.BasicAuth, ":")
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	if cfg.BearerToken != "" {
		opts = append(opts, sr.BearerToken(cfg.BearerToken))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("schema registry: %w", err)
	}
	return &Client{cl: cl, base: strings.Join(cfg.URLs, ","), grace: cfg.unknownIDGrace(), refs: map[refKey]sr.SubjectSchema{}}, nil
}

// Registry returns the underlying franz-go client (tests register schemas
// with it).
func (c *Client) Registry() *sr.Client { return c.cl }

// SchemaByID fetches schema id and its references, transitively. An id or
// a reference the registry does not have is a *decode.RecordError (for
// the id, wrapping an *UnknownIDError: the Decoder retries it for a grace
// period first); any other failure (no answer, 5xx, 429, 401/403, a
// timeout) is a plain, transient error.
func (c *Client) SchemaByID(ctx context.Context, id int) (Schema, error) {
	s, err := c.cl.SchemaByID(ctx, id)
	if err != nil {
		if notFound(err, sr.ErrSchemaNotFound.Code) {
			return Schema{}, &decode.RecordError{Err: &UnknownIDError{ID: id, base: c.base}}
		}
		return Schema{}, c.transient(fmt.Sprintf("fetching schema id %d", id), err)
	}
	out := Schema{ID: id, Type: s.Type, Text: s.Schema, References: map[string]string{}}
	seen := map[refKey]bool{}
	if err := c.resolve(ctx, id, s.References, out.References, seen); err != nil {
		return Schema{}, err
	}
	return out, nil
}

// UnknownIDError is the registry's answer that it has no schema of ID
// (404, error code 40403).
type UnknownIDError struct {
	ID   int
	base string
}

func (e *UnknownIDError) Error() string {
	return fmt.Sprintf("schema id %d is not in the registry at %s", e.ID, e.base)
}

// resolve adds the text of each reference, and of theirs, to into. seen
// makes it stop at a cycle (the registry refuses them, a hand-made one
// must not hang us).
func (c *Client) resolve(ctx context.Context, id int, refs []sr.SchemaReference, into map[string]string, seen map[refKey]bool) error {
	for _, r := range refs {
		k := refKey{r.Subject, r.Version}
		if seen[k] {
			continue
		}
		seen[k] = true
		ss, err := c.reference(ctx, k)
		if err != nil {
			if notFound(err, sr.ErrSubjectNotFound.Code, sr.ErrVersionNotFound.Code) {
				return decode.Recordf("schema id %d references %q (subject %q version %d), which is not in the registry at %s",
					id, r.Name, r.Subject, r.Version, c.base)
			}
			return c.transient(fmt.Sprintf("fetching reference %q of schema id %d (subject %q version %d)", r.Name, id, r.Subject, r.Version), err)
		}
		if _, ok := into[r.Name]; !ok {
			into[r.Name] = ss.Schema.Schema
		}
		if err := c.resolve(ctx, id, ss.References, into, seen); err != nil {
			return err
		}
	}
	return nil
}

// reference returns subject/version, from the cache when it was fetched
// before: a registered version never changes.
func (c *Client) reference(ctx context.Context, k refKey) (sr.SubjectSchema, error) {
	c.mu.Lock()
	ss, ok := c.refs[k]
	c.mu.Unlock()
	if ok {
		return ss, nil
	}
	ss, err := c.cl.SchemaByVersion(ctx, k.subject, k.version)
	if err != nil {
		return ss, err
	}
	c.mu.Lock()
	c.refs[k] = ss
	c.mu.Unlock()
	return ss, nil
}

// notFound reports whether err is the registry's 404 with one of codes.
// A 404 without such an error code (a URL that is not a registry's, a
// proxy's page) is a configuration problem, not the record's: transient.
func notFound(err error, codes ...int) bool {
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 404 {
		return false
	}
	for _, c := range codes {
		if re.ErrorCode == c {
			return true
		}
	}
	return false
}

// transient wraps a failure that says nothing about the record. It names
// the HTTP status where there is one and what to check for 401/403; it
// never carries a credential (sr's messages hold the URL and the
// registry's answer only, and the URLs hold no user info: validate).
func (c *Client) transient(what string, err error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		msg := "HTTP " + strconv.Itoa(re.StatusCode)
		if re.ErrorCode != 0 {
			msg += " error code " + strconv.Itoa(re.ErrorCode)
		}
		switch re.StatusCode {
		case 401, 403:
			return fmt.Errorf("schema registry at %s refused the credentials while %s (%s): check schema_registry_basic_auth_env / schema_registry_bearer_token_env; the batch is retried", c.base, what, msg)
		case 404:
			return fmt.Errorf("schema registry at %s answered 404 without a schema-registry error code while %s: is schema_registry_url the base of a Confluent-compatible API? %s", c.base, what, clip(err.Error()))
		}
		return fmt.Errorf("schema registry at %s while %s: %s: %s", c.base, what, msg, clip(err.Error()))
	}
	return fmt.Errorf("schema registry at %s while %s: %w", c.base, what, err)
}

// clip keeps an answer's body (which may be a whole HTML page) to a length
// fit for a log line.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
