package objstore

// The GCS backend talks to the Cloud Storage JSON API over net/http, with
// golang.org/x/oauth2/google for the service account's access tokens, and
// no client library: cloud.google.com/go/storage brings gRPC, xDS and
// OpenTelemetry with it, which made two thirds of the Delta library's size
// and a third of its build time, for the four calls a table needs (list
// from a name, ranged read, upload if absent, delete). The HTTP layer
// (requests, retries, errors, tokens, escaping) is in gcs_http.go.

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2/google"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// GCS is a table in a Google Cloud Storage bucket under a name prefix.
type GCS struct {
	client  *http.Client
	root    string   // API root without /storage/v1, e.g. https://storage.googleapis.com
	auth    *gcsAuth // nil against an emulator: requests carry no credentials
	name    string
	prefix  string // "" or "path/to/table/"
	secrets []string
}

// gcsDefaultRoot is the API root when no endpoint is configured.
const gcsDefaultRoot = "https://storage.googleapis.com"

// gcsEmulatorEnv names an emulator host the way Google's client libraries
// read it (e.g. "127.0.0.1:4443"); it is honoured when no endpoint is
// configured, and its requests carry no credentials.
const gcsEmulatorEnv = "STORAGE_EMULATOR_HOST"

// gcsScope is enough to list, read, write and delete objects.
const gcsScope = "https://www.googleapis.com/auth/devstorage.read_write"

// NewGCS returns the store for tablePath in bucket. opts must have passed
// Options.Validate. The service account key authenticates every request,
// except against a plain http:// endpoint or STORAGE_EMULATOR_HOST (an
// emulator such as fake-gcs-server), which get none: OAuth tokens are never
// sent in clear text, and emulators do not check them.
func NewGCS(_ context.Context, bucket, tablePath string, opts GCSOptions) (*GCS, error) {
	secrets := gcsSecrets(opts.ServiceAccountKey)
	root, emulator, err := gcsEndpoint(opts.Endpoint)
	if err != nil {
		return nil, err
	}
	transport := gcsTransport()
	g := &GCS{
		client: &http.Client{
			Transport: transport,
			// No request of the API answers with a redirect; following one
			// would send the token elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		root: root, name: bucket, secrets: secrets,
	}
	switch {
	case emulator:
	case opts.DefaultCredentials:
		g.auth = opts.auth
		if g.auth == nil {
			// Not authenticated beforehand (a caller other than the
			// sink): look for the credentials now.
			if g.auth, err = findGCSDefaultAuth(transport); err != nil {
				return nil, err
			}
		}
		g.secrets = g.auth.secrets
	default:
		// JWTConfigFromJSON accepts only "type": "service_account" keys:
		// other credential types (external accounts) would make the
		// library fetch URLs named in the configuration.
		conf, err := google.JWTConfigFromJSON([]byte(opts.ServiceAccountKey), gcsScope)
		if err != nil {
			return nil, fmt.Errorf("gcs: %s", redact(err.Error(), secrets))
		}
		g.auth = newGCSKeyAuth(conf, transport, secrets)
	}
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
	if g.DefaultCredentials {
		if g.ServiceAccountKey != "" {
			return notWith(BackendGCS, OptGCSDefaultCredentials, OptGCSServiceAccountKey)
		}
		_, _, err := gcsEndpoint(g.Endpoint)
		return err
	}
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

// gcsEndpoint turns the endpoint option into the API root (the JSON API is
// under root/storage/v1, uploads under root/upload/storage/v1) and says
// whether it is an emulator. Both http://127.0.0.1:4443 and
// http://127.0.0.1:4443/storage/v1/ are accepted. Without an endpoint,
// STORAGE_EMULATOR_HOST names an emulator (http:// unless it says https://),
// and otherwise it is GCS itself.
func gcsEndpoint(endpoint string) (string, bool, error) {
	if endpoint == "" {
		host := os.Getenv(gcsEmulatorEnv)
		if host == "" {
			return gcsDefaultRoot, false, nil
		}
		if !strings.Contains(host, "://") {
			host = "http://" + host
		}
		root, _, err := gcsRoot(host)
		if err != nil {
			return "", false, invalid(BackendGCS, OptGCSEndpoint, "%s %q is not a host or an http(s) URL", gcsEmulatorEnv, host)
		}
		return root, true, nil
	}
	root, scheme, err := gcsRoot(endpoint)
	if err != nil {
		return "", false, invalid(BackendGCS, OptGCSEndpoint, "%s is not an http(s) URL, e.g. http://127.0.0.1:4443 for fake-gcs-server", OptGCSEndpoint)
	}
	return root, scheme == "http", nil
}

func gcsRoot(endpoint string) (root, scheme string, err error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", "", errors.New("not an http(s) URL")
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/storage/v1")
	u.RawPath = ""
	return u.String(), u.Scheme, nil
}

// gcsSecrets lists what of a key must never be shown: the JSON itself and
// its private key, refresh token and client secret (also in the escaped
// form JSON gives them).
//
// They are looked for at any depth: an impersonated_service_account or
// external_account file nests its source credentials.
func gcsSecrets(key string) []string {
	out := []string{key}
	var doc any
	if json.Unmarshal([]byte(key), &doc) != nil {
		return out
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && s != "" && (k == "private_key" || k == "refresh_token" || k == "client_secret") {
					out = append(out, s)
					if b, err := json.Marshal(s); err == nil {
						out = append(out, strings.Trim(string(b), `"`))
					}
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	return out
}

// URI implements Store.
func (g *GCS) URI() string { return "gs://" + g.name + "/" + strings.TrimSuffix(g.prefix, "/") }

// objectURL is the JSON API URL of object p of the table.
func (g *GCS) objectURL(p string) string {
	return g.root + "/storage/v1/b/" + gcsEscape(g.name) + "/o/" + gcsEscape(g.prefix+p)
}

// gcsListPage is the part of an objects.list answer the backend reads.
type gcsListPage struct {
	Items []struct {
		Name    string          `json:"name"`
		Size    json.RawMessage `json:"size"` // a string in the API ("uint64"), a number in some emulators
		Updated time.Time       `json:"updated"`
	} `json:"items"`
	NextPageToken string `json:"nextPageToken"`
}

// List implements deltalog.Store with the JSON API's startOffset (inclusive:
// startAfter itself is dropped), a page at a time.
func (g *GCS) List(ctx context.Context, prefix, startAfter string) ([]deltalog.FileInfo, error) {
	full := g.prefix + prefix
	after := ""
	base := g.root + "/storage/v1/b/" + gcsEscape(g.name) + "/o?fields=" + gcsEscape("items(name,size,updated),nextPageToken") +
		"&prefix=" + gcsEscape(full)
	if startAfter != "" {
		after = g.prefix + startAfter
		base += "&startOffset=" + gcsEscape(after)
	}
	var out []deltalog.FileInfo
	token := ""
	for {
		u := base
		if token != "" {
			u += "&pageToken=" + gcsEscape(token)
		}
		var page gcsListPage
		err := g.call(ctx, gcsGet(u, nil), func(resp *http.Response) error {
			page = gcsListPage{}
			return json.NewDecoder(resp.Body).Decode(&page)
		})
		if err != nil {
			return nil, g.wrap("list", prefix, err)
		}
		for _, it := range page.Items {
			if it.Name <= after || !strings.HasPrefix(it.Name, full) {
				continue
			}
			size, err := strconv.ParseInt(strings.Trim(string(it.Size), `"`), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("gcs list %s: object %q has size %s", g.where(prefix), it.Name, it.Size)
			}
			out = append(out, deltalog.FileInfo{Path: strings.TrimPrefix(it.Name, g.prefix), Size: size, ModTime: it.Updated})
		}
		if page.NextPageToken == "" || page.NextPageToken == token {
			return out, nil
		}
		token = page.NextPageToken
	}
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

// get reads length bytes from offset, or the rest of the object for a
// negative length. A whole object is checked against the CRC32C the
// service sends.
func (g *GCS) get(ctx context.Context, p string, offset, length int64) ([]byte, error) {
	h := http.Header{}
	switch {
	case length > 0:
		h.Set("Range", fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	case offset > 0:
		h.Set("Range", fmt.Sprintf("bytes=%d-", offset))
	}
	var data []byte
	err := g.call(ctx, gcsGet(g.objectURL(p)+"?alt=media", h), func(resp *http.Response) error {
		var err error
		if data, err = io.ReadAll(resp.Body); err != nil {
			return err
		}
		if h.Get("Range") != "" && resp.StatusCode == http.StatusOK {
			// The range was ignored and the whole object came back.
			data = data[min(offset, int64(len(data))):]
			if length > 0 {
				data = data[:min(length, int64(len(data)))]
			}
			return nil
		}
		if h.Get("Range") == "" {
			return checkCRC32C(resp, data)
		}
		// A part of the object, which must start where it was asked to.
		var start int64
		if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes %d-", &start); err == nil && start != offset {
			return fmt.Errorf("asked for bytes from %d, got %s", offset, resp.Header.Get("Content-Range"))
		}
		return nil
	})
	if err != nil {
		return nil, g.wrap("get", p, err)
	}
	if length > 0 && int64(len(data)) != length {
		return nil, fmt.Errorf("gcs get %s: range [%d,+%d) returned %d bytes", g.where(p), offset, length, len(data))
	}
	return data, nil
}

// Put implements Store. Data file names are unique, so a retried upload can
// only replace itself.
func (g *GCS) Put(ctx context.Context, p string, data []byte) error {
	return g.wrap("put", p, g.upload(ctx, p, data, false))
}

// PutIfAbsent implements deltalog.Store with ifGenerationMatch=0: the upload
// succeeds only if no live object has the name; 412 means the version is
// taken. A retried upload whose first attempt landed gets 412 too: the
// caller reads the object back and recognises its own commit.
func (g *GCS) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	return g.wrap("put-if-absent", p, g.upload(ctx, p, data, true))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// gcsCRC32C is a checksum as the API writes it: base64 of the big-endian
// CRC32C.
func gcsCRC32C(data []byte) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.Checksum(data, castagnoli)))
}

// upload is a multipart upload (metadata, then the bytes) in one request:
// the metadata carries the CRC32C, so the service drops a body damaged on
// the way, and the answer is checked against it as well.
func (g *GCS) upload(ctx context.Context, p string, data []byte, ifAbsent bool) error {
	name := g.prefix + p
	sum := gcsCRC32C(data)
	meta, err := json.Marshal(struct {
		Name   string `json:"name"`
		CRC32C string `json:"crc32c"`
	}{name, sum})
	if err != nil {
		return err
	}
	// The parts around the data, which is sent from the caller's slice:
	// the closing boundary Close writes goes after it.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	part, _ := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/json; charset=UTF-8"}})
	part.Write(meta)
	mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/octet-stream"}})
	n := buf.Len()
	mw.Close()
	head, tail := buf.Bytes()[:n], buf.Bytes()[n:]
	ct := "multipart/related; boundary=" + mw.Boundary()

	u := g.root + "/upload/storage/v1/b/" + gcsEscape(g.name) + "/o?uploadType=multipart&fields=" + gcsEscape("name,size,crc32c")
	if ifAbsent {
		u += "&ifGenerationMatch=0"
	}
	build := func(ctx context.Context) (*http.Request, error) {
		body := io.MultiReader(bytes.NewReader(head), bytes.NewReader(data), bytes.NewReader(tail))
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, body)
		if err != nil {
			return nil, err
		}
		req.ContentLength = int64(len(head) + len(data) + len(tail))
		req.Header.Set("Content-Type", ct)
		return req, nil
	}
	return g.call(ctx, build, func(resp *http.Response) error {
		var got struct {
			Name   string          `json:"name"`
			Size   json.RawMessage `json:"size"`
			CRC32C string          `json:"crc32c"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			return fmt.Errorf("upload answer: %w", err)
		}
		// The service checked the checksum; an answer that disagrees means
		// something else stored the object, and it must not count as
		// written.
		size := strings.Trim(string(got.Size), `"`)
		if got.Name != name || (size != "" && size != strconv.Itoa(len(data))) || (got.CRC32C != "" && got.CRC32C != sum) {
			return fmt.Errorf("upload answer describes object %q of %s bytes, crc32c %s; sent %d bytes, crc32c %s", got.Name, size, got.CRC32C, len(data), sum)
		}
		return nil
	})
}

// Delete implements deltalog.Store. A missing object (or bucket) is not an
// error.
func (g *GCS) Delete(ctx context.Context, p string) error {
	build := func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodDelete, g.objectURL(p), nil)
	}
	err := g.wrap("delete", p, g.call(ctx, build, func(*http.Response) error { return nil }))
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
	var se *gcsStatusError
	if errors.As(err, &se) {
		detail := fmt.Sprintf("HTTP %d", se.Code)
		if se.Reason != "" {
			detail += " " + se.Reason
		}
		if se.Message != "" {
			detail += ": " + redact(se.Message, g.secrets)
		}
		switch {
		case se.Code == http.StatusPreconditionFailed && op == "put-if-absent":
			return fmt.Errorf("%s: %s: %w", where, detail, deltalog.ErrAlreadyExists)
		case se.Code == http.StatusNotFound && se.bucketMissing(op):
			return fmt.Errorf("%s: %w", where, &NoBucketError{Kind: "bucket", Name: g.name})
		case se.Code == http.StatusNotFound:
			return fmt.Errorf("%s: %s: %w", where, detail, deltalog.ErrNotFound)
		case se.transient():
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
