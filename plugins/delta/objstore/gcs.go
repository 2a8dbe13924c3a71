package objstore

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/shared/retry/backoff"
)

// GCS is a table in a Google Cloud Storage bucket under a name prefix.
type GCS struct {
	client  *storage.Client
	bucket  *storage.BucketHandle
	name    string
	prefix  string // "" or "path/to/table/"
	secrets []string
}

// gcsRetry bounds the client library's own retries (by default it retries
// until the context ends, and the sink's calls have no deadline): a few
// quick tries, then the runtime's batch retry takes over.
var gcsRetry = []storage.RetryOption{
	storage.WithBackoff(gax.Backoff{Initial: 200 * time.Millisecond, Max: 3 * time.Second, Multiplier: 2}),
	storage.WithMaxAttempts(4),
}

// NewGCS returns the store for tablePath in bucket. opts must have passed
// Options.Validate. The service account key authenticates every request,
// except against a plain http:// endpoint (an emulator such as
// fake-gcs-server), which gets none: OAuth tokens are never sent in clear
// text, and emulators do not check them.
func NewGCS(ctx context.Context, bucket, tablePath string, opts GCSOptions) (*GCS, error) {
	secrets := gcsSecrets(opts.ServiceAccountKey)
	endpoint, emulator, err := gcsEndpoint(opts.Endpoint)
	if err != nil {
		return nil, err
	}
	clientOpts := []option.ClientOption{
		storage.WithJSONReads(), option.WithUserAgent("picomq-delta-sink"),
		// The library's logger (GOOGLE_SDK_GO_LOGGING_LEVEL) writes to the
		// process's stderr, past the host's log callback and redaction.
		option.WithLogger(slog.New(slog.DiscardHandler)),
	}
	if endpoint != "" {
		clientOpts = append(clientOpts, option.WithEndpoint(endpoint))
	}
	if emulator {
		clientOpts = append(clientOpts, option.WithoutAuthentication())
	} else {
		// Only a service account key is accepted: other credential types
		// (external accounts) would make the library fetch URLs named in
		// the configuration.
		clientOpts = append(clientOpts, option.WithAuthCredentialsJSON(option.ServiceAccount, []byte(opts.ServiceAccountKey)))
	}
	client, err := storage.NewClient(ctx, clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("gcs: %s", redact(err.Error(), secrets))
	}
	client.SetRetry(gcsRetry...)
	g := &GCS{client: client, bucket: client.Bucket(bucket), name: bucket, secrets: secrets}
	if p := strings.Trim(tablePath, "/"); p != "" {
		g.prefix = p + "/"
	}
	return g, nil
}

// gcsKey is the part of a service account key the backend checks.
type gcsKey struct {
	Type        string `json:"type"`
	ClientEmail string `json:"client_email"`
	PrivateKey  string `json:"private_key"`
}

// checkGCSKey validates the service account key: JSON of a service account
// key. The message never quotes the key or the JSON decoder's error (which
// can quote a character of it).
func checkGCSKey(key string) error {
	var k gcsKey
	if err := json.Unmarshal([]byte(key), &k); err != nil {
		return invalid(BackendGCS, OptGCSServiceAccountKey, "%s is not JSON: give the service account key file's content", OptGCSServiceAccountKey)
	}
	if k.Type != "service_account" || k.ClientEmail == "" || k.PrivateKey == "" {
		return invalid(BackendGCS, OptGCSServiceAccountKey, `%s is not a service account key (JSON with "type": "service_account", "client_email" and "private_key")`, OptGCSServiceAccountKey)
	}
	return nil
}

// validate checks the key's shape, the endpoint, and, unless the endpoint
// is an emulator that gets no credentials, that the private key parses (so
// that a damaged key fails open() instead of every request).
func (g GCSOptions) validate() error {
	if g.ServiceAccountKey == "" {
		return missing(BackendGCS, OptGCSServiceAccountKey)
	}
	if err := checkGCSKey(g.ServiceAccountKey); err != nil {
		return err
	}
	_, emulator, err := gcsEndpoint(g.Endpoint)
	if err != nil || emulator {
		return err
	}
	var k gcsKey
	_ = json.Unmarshal([]byte(g.ServiceAccountKey), &k)
	block, _ := pem.Decode([]byte(k.PrivateKey))
	if block == nil {
		return invalid(BackendGCS, OptGCSServiceAccountKey, "%s: private_key is not a PEM block", OptGCSServiceAccountKey)
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
			return invalid(BackendGCS, OptGCSServiceAccountKey, "%s: private_key is not a PKCS#8 or PKCS#1 private key", OptGCSServiceAccountKey)
		}
	}
	return nil
}

// gcsEndpoint turns the endpoint option into the JSON API base the client
// library wants (…/storage/v1/) and says whether it is a plain-http
// emulator. Both http://127.0.0.1:4443 and http://127.0.0.1:4443/storage/v1/
// are accepted.
func gcsEndpoint(endpoint string) (string, bool, error) {
	if endpoint == "" {
		return "", false, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
		return "", false, invalid(BackendGCS, OptGCSEndpoint, "%s is not an http(s) URL, e.g. http://127.0.0.1:4443 for fake-gcs-server", OptGCSEndpoint)
	}
	path := strings.TrimRight(u.Path, "/")
	if !strings.HasSuffix(path, "/storage/v1") {
		path += "/storage/v1"
	}
	u.Path = path + "/"
	return u.String(), u.Scheme == "http", nil
}

// gcsSecrets lists what of a key must never be shown: the JSON itself and
// its private key (also in the escaped form JSON gives it).
func gcsSecrets(key string) []string {
	out := []string{key}
	var k gcsKey
	if json.Unmarshal([]byte(key), &k) == nil && k.PrivateKey != "" {
		out = append(out, k.PrivateKey)
		if b, err := json.Marshal(k.PrivateKey); err == nil {
			out = append(out, strings.Trim(string(b), `"`))
		}
	}
	return out
}

// URI implements Store.
func (g *GCS) URI() string { return "gs://" + g.name + "/" + strings.TrimSuffix(g.prefix, "/") }

func (g *GCS) object(p string) *storage.ObjectHandle { return g.bucket.Object(g.prefix + p) }

// List implements deltalog.Store with the JSON API's startOffset (inclusive:
// startAfter itself is dropped).
func (g *GCS) List(ctx context.Context, prefix, startAfter string) ([]deltalog.FileInfo, error) {
	full := g.prefix + prefix
	q := &storage.Query{Prefix: full}
	after := ""
	if startAfter != "" {
		after = g.prefix + startAfter
		q.StartOffset = after
	}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Updated"}); err != nil {
		return nil, err
	}
	var out []deltalog.FileInfo
	it := g.bucket.Objects(ctx, q)
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, g.wrap("list", prefix, err)
		}
		if attrs.Name <= after || !strings.HasPrefix(attrs.Name, full) {
			continue
		}
		out = append(out, deltalog.FileInfo{Path: strings.TrimPrefix(attrs.Name, g.prefix), Size: attrs.Size, ModTime: attrs.Updated})
	}
	return out, nil
}

// Get implements deltalog.Store.
func (g *GCS) Get(ctx context.Context, p string) ([]byte, error) {
	return g.get(ctx, p, 0, -1)
}

// GetRange implements deltalog.RangeReader with a ranged read.
func (g *GCS) GetRange(ctx context.Context, p string, offset, length int64) ([]byte, error) {
	if length == 0 {
		return []byte{}, nil
	}
	return g.get(ctx, p, offset, length)
}

func (g *GCS) get(ctx context.Context, p string, offset, length int64) ([]byte, error) {
	r, err := g.object(p).NewRangeReader(ctx, offset, length)
	if err != nil {
		return nil, g.wrap("get", p, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, g.wrap("get", p, err)
	}
	if length > 0 && int64(len(data)) != length {
		return nil, fmt.Errorf("gcs get %s: range [%d,+%d) returned %d bytes", g.where(p), offset, length, len(data))
	}
	return data, nil
}

// Put implements Store. Data file names are unique, so a retried upload can
// only replace itself: the library may retry it like an idempotent one.
func (g *GCS) Put(ctx context.Context, p string, data []byte) error {
	return g.upload(ctx, "put", g.object(p).Retryer(storage.WithPolicy(storage.RetryAlways)), p, data)
}

// PutIfAbsent implements deltalog.Store with ifGenerationMatch=0: the upload
// succeeds only if no live object has the name; 412 means the version is
// taken.
func (g *GCS) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	return g.upload(ctx, "put-if-absent", g.object(p).If(storage.Conditions{DoesNotExist: true}), p, data)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// gcsUploadAttempts bounds the retries of one upload. The library's own
// upload retry runs until the context's deadline, and the sink's calls have
// none, so uploads are retried here instead, from the bytes in memory.
const gcsUploadAttempts = 4

func (g *GCS) upload(ctx context.Context, op string, o *storage.ObjectHandle, p string, data []byte) error {
	o = o.Retryer(storage.WithPolicy(storage.RetryNever))
	wait := backoff.Exponential(200*time.Millisecond, 2, 3*time.Second)
	for attempt := 1; ; attempt++ {
		err := g.uploadOnce(ctx, o, data)
		if err == nil || attempt == gcsUploadAttempts || !gcsTransient(err) {
			return g.wrap(op, p, err)
		}
		// A retried put-if-absent whose first attempt landed gets 412: the
		// caller reads the object back and recognises its own commit.
		if backoff.Sleep(ctx, wait(attempt)) != nil {
			return g.wrap(op, p, err)
		}
	}
}

func (g *GCS) uploadOnce(ctx context.Context, o *storage.ObjectHandle, data []byte) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // abandons the upload if Write fails
	w := o.NewWriter(ctx)
	// The service checks the checksum and drops a body damaged on the way.
	w.CRC32C, w.SendCRC32C = crc32.Checksum(data, castagnoli), true
	if _, err := w.Write(data); err != nil {
		return err
	}
	return w.Close()
}

// Delete implements deltalog.Store. A missing object (or bucket) is not an
// error.
func (g *GCS) Delete(ctx context.Context, p string) error {
	err := g.wrap("delete", p, g.object(p).Delete(ctx))
	if errors.Is(err, deltalog.ErrNotFound) {
		return nil
	}
	return err
}

func (g *GCS) where(p string) string { return "gs://" + g.name + "/" + g.prefix + p }

// wrap maps GCS failures onto the deltalog sentinels. The message names the
// operation and object, the HTTP status and the service's reason; anything
// else is stripped of URL queries and of the key.
func (g *GCS) wrap(op, p string, err error) error {
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("gcs %s %s", op, g.where(p))
	switch {
	case errors.Is(err, storage.ErrBucketNotExist):
		return fmt.Errorf("%s: bucket %q does not exist: %w", where, g.name, deltalog.ErrNotFound)
	case errors.Is(err, storage.ErrObjectNotExist):
		return fmt.Errorf("%s: %w", where, deltalog.ErrNotFound)
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		detail := fmt.Sprintf("HTTP %d", ge.Code)
		if len(ge.Errors) > 0 && ge.Errors[0].Reason != "" {
			detail += " " + ge.Errors[0].Reason
		}
		if ge.Message != "" {
			detail += ": " + redact(ge.Message, g.secrets)
		}
		switch {
		case ge.Code == http.StatusPreconditionFailed && op == "put-if-absent":
			return fmt.Errorf("%s: %s: %w", where, detail, deltalog.ErrAlreadyExists)
		case ge.Code == http.StatusNotFound:
			if strings.Contains(strings.ToLower(ge.Message), "bucket") {
				return fmt.Errorf("%s: bucket %q does not exist: %w", where, g.name, deltalog.ErrNotFound)
			}
			return fmt.Errorf("%s: %s: %w", where, detail, deltalog.ErrNotFound)
		case ge.Code == http.StatusRequestTimeout, ge.Code == http.StatusTooManyRequests, ge.Code >= 500:
			return fmt.Errorf("%s: %s: %w", where, detail, deltalog.ErrTransient)
		}
		return fmt.Errorf("%s: %s", where, detail)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", where, context.Canceled)
	}
	msg := redact(err.Error(), g.secrets)
	if gcsTransient(err) {
		// No usable answer: a network failure or timeout (after the
		// retries), or the token endpoint failing transiently.
		return fmt.Errorf("%s: %w: %s", where, deltalog.ErrTransient, msg)
	}
	// Anything else, e.g. a key that does not parse or that the token
	// endpoint rejects, will fail the same way again.
	return fmt.Errorf("%s: %s", where, msg)
}

// gcsTransient reports whether a failure may go away by itself. Requests
// are authenticated inside the HTTP transport, so credential failures come
// wrapped in *url.Error like network ones and are told apart here.
func gcsTransient(err error) bool {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code == http.StatusRequestTimeout || ge.Code == http.StatusTooManyRequests || ge.Code >= 500
	}
	var ae *auth.Error
	if errors.As(err, &ae) {
		if ae.Response != nil {
			return ae.Temporary() // the token endpoint's 5xx, 429, 408
		}
		return ae.Err != nil && gcsTransient(ae.Err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var op *net.OpError
	var dns *net.DNSError
	if errors.As(err, &op) || errors.As(err, &dns) {
		return true
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Timeout() {
		return true
	}
	return storage.ShouldRetry(err)
}
