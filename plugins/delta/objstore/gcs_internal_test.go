package objstore

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/shared/retry/backoff"
)

func TestGCSEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"_delta_log/00000000000000000001.json", "_delta_log%2F00000000000000000001.json"},
		{"region=eu/part-1.parquet", "region%3Deu%2Fpart-1.parquet"},
		{"d=2026-01-01%2012%3A00/x", "d%3D2026-01-01%252012%253A00%2Fx"}, // Delta's escaped partition values
		{"a+b c&d?e#f", "a%2Bb%20c%26d%3Fe%23f"},
		{"ü~.-_", "%C3%BC~.-_"},
		{"\x00\xff", "%00%FF"},
	} {
		if got := gcsEscape(c.in); got != c.want {
			t.Errorf("gcsEscape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Any name escapes to unreserved characters and %XX only, and both a path
// and a query decode it back unchanged.
func FuzzGCSEscape(f *testing.F) {
	for _, s := range []string{"", "a/b", "x=1%2F+ y", "ü\x00\xff", "?#&;=:@$,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		e := gcsEscape(name)
		for i := 0; i < len(e); i++ {
			c := e[i]
			unreserved := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0
			if !unreserved && c != '%' {
				t.Fatalf("%q escapes to %q with %q", name, e, c)
			}
		}
		if p, err := url.PathUnescape(e); err != nil || p != name {
			t.Fatalf("path %q decodes to %q, %v; want %q", e, p, err, name)
		}
		q, err := url.ParseQuery("n=" + e)
		if err != nil || q.Get("n") != name {
			t.Fatalf("query %q decodes to %q, %v; want %q", e, q.Get("n"), err, name)
		}
		u, err := url.Parse("https://h/storage/v1/b/b/o/" + e)
		if err != nil || u.EscapedPath() != "/storage/v1/b/b/o/"+e {
			t.Fatalf("net/url sends %q for %q (%v)", u.EscapedPath(), e, err)
		}
	})
}

// quickRetries makes retries wait a millisecond for this test.
func quickRetries(t *testing.T) {
	old := gcsWait
	gcsWait = backoff.Exponential(time.Millisecond, 1, time.Millisecond)
	t.Cleanup(func() { gcsWait = old })
}

// testRSAKey is made once: generating one takes a while.
var testRSAKey = sync.OnceValue(func() *rsa.PrivateKey {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return rk
})

func testServiceAccountKey(t *testing.T, tokenURI string) string {
	t.Helper()
	der, _ := x509.MarshalPKCS8PrivateKey(testRSAKey())
	b, _ := json.Marshal(map[string]any{"type": "service_account", "project_id": "p", "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "sink@p.iam.gserviceaccount.com", "token_uri": tokenURI})
	return string(b)
}

// tlsGCS opens the store against an https test server (trusted through the
// server's own client transport) whose key fetches tokens from tokens.
func tlsGCS(t *testing.T, storage http.Handler, tokens http.Handler) *GCS {
	t.Helper()
	srv := httptest.NewTLSServer(storage)
	t.Cleanup(srv.Close)
	tok := httptest.NewServer(tokens)
	t.Cleanup(tok.Close)
	opts := GCSOptions{ServiceAccountKey: testServiceAccountKey(t, tok.URL), Endpoint: srv.URL}
	if err := opts.validate(); err != nil {
		t.Fatal(err)
	}
	g, err := NewGCS(context.Background(), "b", "t", opts)
	if err != nil {
		t.Fatal(err)
	}
	g.client.Transport = srv.Client().Transport
	g.auth.transport = srv.Client().Transport
	return g
}

// Requests to an https endpoint carry the service account's bearer token,
// fetched once with the JWT bearer grant and reused; a 401 makes the next
// call fetch another.
func TestGCSTokenIsFetchedOnceAndSent(t *testing.T) {
	ctx := context.Background()
	var fetches atomic.Int32
	tokens := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := fetches.Add(1)
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || r.Form.Get("assertion") == "" {
			t.Errorf("token request %v %v", r.Form, err)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "tok" + string(rune('0'+n)), "token_type": "Bearer", "expires_in": 3600})
	})
	var mu sync.Mutex
	var auths []string
	var unauthorized atomic.Bool
	storage := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		if unauthorized.Swap(false) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"items":[]}`))
	})
	g := tlsGCS(t, storage, tokens)
	for range 3 {
		if _, err := g.List(ctx, "_delta_log/", ""); err != nil {
			t.Fatal(err)
		}
	}
	unauthorized.Store(true)
	if _, err := g.List(ctx, "_delta_log/", ""); err == nil || deltalog.IsTransient(err) {
		t.Fatalf("401: %v", err)
	}
	if _, err := g.List(ctx, "_delta_log/", ""); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := strings.Join(auths, ",")
	mu.Unlock()
	if want := "Bearer tok1,Bearer tok1,Bearer tok1,Bearer tok1,Bearer tok2"; got != want {
		t.Errorf("Authorization headers %q, want %q", got, want)
	}
	if fetches.Load() != 2 {
		t.Errorf("%d token fetches", fetches.Load())
	}
}

// The token endpoint failing transiently (throttled, 5xx, unreachable) is
// transient and retried; refusing the key is not.
func TestGCSTokenErrors(t *testing.T) {
	quickRetries(t)
	ctx := context.Background()
	storage := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"items":[]}`)) })
	for _, c := range []struct {
		status    int
		transient bool
	}{{503, true}, {429, true}, {400, false}, {401, false}} {
		var fetches atomic.Int32
		g := tlsGCS(t, storage, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fetches.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(c.status)
			w.Write([]byte(`{"error":"invalid_grant"}`))
		}))
		_, err := g.List(ctx, "_delta_log/", "")
		if err == nil || deltalog.IsTransient(err) != c.transient {
			t.Errorf("token endpoint %d: %v", c.status, err)
		}
		if want := map[bool]int32{true: gcsAttempts, false: 1}[c.transient]; fetches.Load() != want {
			t.Errorf("token endpoint %d: %d fetches, want %d", c.status, fetches.Load(), want)
		}
	}
	// Unreachable.
	g := tlsGCS(t, storage, http.NotFoundHandler())
	g.auth.conf.TokenURL = "http://127.0.0.1:1/token"
	if _, err := g.List(ctx, "_delta_log/", ""); !deltalog.IsTransient(err) {
		t.Errorf("unreachable token endpoint: %v", err)
	}
	// A caller's cancellation ends a token fetch.
	block := make(chan struct{})
	defer close(block)
	g = tlsGCS(t, storage, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := g.List(cctx, "_delta_log/", ""); err == nil || !errors.Is(err, context.DeadlineExceeded) && !deltalog.IsTransient(err) {
		t.Errorf("cancelled token fetch: %v", err)
	}
}

// emulatorGCS opens the store for gs://b/t against an http test server:
// no credentials, quick retries.
func emulatorGCS(t *testing.T, h http.Handler) *GCS {
	t.Helper()
	quickRetries(t)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	g, err := NewGCS(context.Background(), "b", "t", GCSOptions{ServiceAccountKey: testServiceAccountKey(t, "http://127.0.0.1:1"), Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// gcsOps runs each Store call once against g.
var gcsOps = map[string]func(context.Context, *GCS) error{
	"list": func(ctx context.Context, g *GCS) error {
		_, err := g.List(ctx, "_delta_log/", "_delta_log/a")
		return err
	},
	"get": func(ctx context.Context, g *GCS) error { _, err := g.Get(ctx, "_delta_log/x.json"); return err },
	"range": func(ctx context.Context, g *GCS) error {
		_, err := g.GetRange(ctx, "_delta_log/x.checkpoint.parquet", 4, 8)
		return err
	},
	"put":           func(ctx context.Context, g *GCS) error { return g.Put(ctx, "p/part-1.parquet", []byte("data")) },
	"put-if-absent": func(ctx context.Context, g *GCS) error { return g.PutIfAbsent(ctx, "_delta_log/1.json", []byte("{}")) },
	"delete":        func(ctx context.Context, g *GCS) error { return g.Delete(ctx, "p/part-1.parquet") },
}

// Every error answer of the API, for every call: the typed result, the
// number of attempts, and a message with the status and reason.
func TestGCSErrorAnswers(t *testing.T) {
	ctx := context.Background()
	type want struct {
		kind     string // "transient", "notfound", "bucket", "exists", "nil", "permanent"
		attempts int32
	}
	const noObject, noBucket = "No such object: b/t/x", "The specified bucket does not exist."
	permanent := want{"permanent", 1}
	transient := want{"transient", gcsAttempts}
	cases := []struct {
		status  int
		message string
		want    map[string]want // by op; "" is every other op
	}{
		{404, noObject, map[string]want{"list": {"bucket", 1}, "delete": {"nil", 1}, "": {"notfound", 1}}},
		{404, noBucket, map[string]want{"delete": {"nil", 1}, "": {"bucket", 1}}},
		{412, "conditionNotMet", map[string]want{"put-if-absent": {"exists", 1}, "": permanent}},
		{400, "invalid", map[string]want{"": permanent}},
		{401, "Anonymous caller", map[string]want{"": permanent}},
		{403, "sink@p does not have storage.objects.create access", map[string]want{"": permanent}},
		{301, "moved", map[string]want{"": permanent}},
		{408, "timeout", map[string]want{"": transient}},
		{429, "rateLimitExceeded", map[string]want{"": transient}},
		{500, "backendError", map[string]want{"": transient}},
		{502, "", map[string]want{"": transient}},
		{503, "unavailable", map[string]want{"": transient}},
		{504, "", map[string]want{"": transient}},
	}
	for _, c := range cases {
		for op, run := range gcsOps {
			w, ok := c.want[op]
			if !ok {
				w = c.want[""]
			}
			var calls atomic.Int32
			g := emulatorGCS(t, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				rw.Header().Set("Content-Type", "application/json")
				rw.WriteHeader(c.status)
				json.NewEncoder(rw).Encode(map[string]any{"error": map[string]any{"code": c.status, "message": c.message,
					"errors": []any{map[string]any{"reason": "r" + http.StatusText(c.status)[:2], "message": c.message}}}})
			}))
			err := run(ctx, g)
			name := op + " " + http.StatusText(c.status)
			var got string
			switch {
			case err == nil:
				got = "nil"
			case errors.Is(err, deltalog.ErrAlreadyExists):
				got = "exists"
			case errors.Is(err, deltalog.ErrNotFound) && strings.Contains(err.Error(), `bucket "b" does not exist`):
				got = "bucket"
			case errors.Is(err, deltalog.ErrNotFound):
				got = "notfound"
			case deltalog.IsTransient(err):
				got = "transient"
			default:
				got = "permanent"
			}
			if got != w.kind || calls.Load() != w.attempts {
				t.Errorf("%s: %s after %d attempts, want %s after %d: %v", name, got, calls.Load(), w.kind, w.attempts, err)
			}
			if err != nil && !strings.Contains(err.Error(), "gcs "+op) && !strings.Contains(err.Error(), "gs://b/t/") {
				t.Errorf("%s: message without the call and object: %v", name, err)
			}
			if err != nil && got != "bucket" && !strings.Contains(err.Error(), fmt.Sprintf("HTTP %d r%s", c.status, http.StatusText(c.status)[:2])) {
				t.Errorf("%s: message without status and reason: %v", name, err)
			}
		}
	}
}

// What goes on the wire: escaped names, the list's query and pages, the
// range, the multipart upload with its checksum, no credentials to an
// emulator.
func TestGCSRequests(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var seen []string
	g := emulatorGCS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.RequestURI+" "+r.Header.Get("Range"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "" {
			t.Errorf("credentials sent to an emulator")
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Query().Get("alt") == "media":
			w.Header().Set("X-Goog-Hash", "crc32c="+gcsCRC32C([]byte("0123456789abcdef"))+",md5=x")
			w.Write([]byte("0123456789abcdef"))
		case r.Method == http.MethodGet && r.URL.Query().Get("pageToken") == "":
			w.Write([]byte(`{"items":[{"name":"t/_delta_log/a","size":"1"},{"name":"t/_delta_log/b","size":"2","updated":"2026-01-02T03:04:05.006Z"}],"nextPageToken":"p 2"}`))
		case r.Method == http.MethodGet:
			w.Write([]byte(`{"items":[{"name":"t/_delta_log/c","size":3},{"name":"t/other","size":"4"}]}`))
		case r.Method == http.MethodPost:
			mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if mt != "multipart/related" {
				t.Errorf("upload Content-Type %s", r.Header.Get("Content-Type"))
			}
			mr := multipart.NewReader(r.Body, params["boundary"])
			var meta struct{ Name, CRC32C string }
			p, _ := mr.NextPart()
			json.NewDecoder(p).Decode(&meta)
			p, _ = mr.NextPart()
			data, _ := io.ReadAll(p)
			if _, err := mr.NextPart(); err != io.EOF {
				t.Errorf("upload: a third part: %v", err)
			}
			mu.Lock()
			seen = append(seen, fmt.Sprintf("  meta %s %s data %q", meta.Name, meta.CRC32C, data))
			mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"name": meta.Name, "size": fmt.Sprint(len(data)), "crc32c": gcsCRC32C(data)})
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	name := "d=a%2Fb+c d/ü.parquet"
	if b, err := g.Get(ctx, name); err != nil || string(b) != "0123456789abcdef" {
		t.Fatalf("get %q %v", b, err)
	}
	if b, err := g.GetRange(ctx, name, 4, 8); err != nil || string(b) != "456789ab" {
		t.Fatalf("range %q %v", b, err)
	}
	got, err := g.List(ctx, "_delta_log/", "_delta_log/a")
	if err != nil || len(got) != 2 || got[0].Path != "_delta_log/b" || got[0].Size != 2 || got[0].ModTime.Nanosecond() != 6e6 || got[1].Path != "_delta_log/c" || got[1].Size != 3 {
		t.Fatalf("list %+v %v", got, err)
	}
	if err := g.PutIfAbsent(ctx, "_delta_log/1.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := g.Put(ctx, name, []byte("pq")); err != nil {
		t.Fatal(err)
	}
	if err := g.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	const obj = "/storage/v1/b/b/o/t%2Fd%3Da%252Fb%2Bc%20d%2F%C3%BC.parquet"
	want := []string{
		"GET " + obj + "?alt=media ",
		"GET " + obj + "?alt=media bytes=4-11",
		"GET /storage/v1/b/b/o?fields=items%28name%2Csize%2Cupdated%29%2CnextPageToken&prefix=t%2F_delta_log%2F&startOffset=t%2F_delta_log%2Fa ",
		"GET /storage/v1/b/b/o?fields=items%28name%2Csize%2Cupdated%29%2CnextPageToken&prefix=t%2F_delta_log%2F&startOffset=t%2F_delta_log%2Fa&pageToken=p%202 ",
		"POST /upload/storage/v1/b/b/o?uploadType=multipart&fields=name%2Csize%2Ccrc32c&ifGenerationMatch=0 ",
		"  meta t/_delta_log/1.json " + gcsCRC32C([]byte("{}")) + ` data "{}"`,
		"POST /upload/storage/v1/b/b/o?uploadType=multipart&fields=name%2Csize%2Ccrc32c ",
		"  meta t/d=a%2Fb+c d/ü.parquet " + gcsCRC32C([]byte("pq")) + ` data "pq"`,
		"DELETE " + obj + " ",
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

// Answers that arrive damaged or are not what was asked for: a body cut
// short is retried, a body whose checksum is wrong is retried, a range the
// server ignored is cut from the whole object, and an upload the server
// describes differently is not taken as written.
func TestGCSDamagedAnswers(t *testing.T) {
	ctx := context.Background()
	data := []byte("0123456789abcdef")
	var calls atomic.Int32
	g := emulatorGCS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		switch r.URL.Query().Get("name") + r.URL.Path {
		case "/storage/v1/b/b/o/t%2Fcut", "/storage/v1/b/b/o/t/cut":
			if n == 1 {
				w.Header().Set("Content-Length", "16")
				w.Write(data[:5])
				panic(http.ErrAbortHandler) // the connection drops
			}
			w.Write(data)
		case "/storage/v1/b/b/o/t/crc":
			w.Header().Set("X-Goog-Hash", "crc32c="+gcsCRC32C([]byte("something else")))
			w.Write(data)
		case "/storage/v1/b/b/o/t/norange":
			w.Write(data) // 200, not 206
		case "/upload/storage/v1/b/b/o":
			io.Copy(io.Discard, r.Body)
			json.NewEncoder(w).Encode(map[string]any{"name": "t/up", "size": "2", "crc32c": "AAAAAA=="})
		default:
			t.Errorf("unexpected %s", r.URL)
		}
	}))
	if b, err := g.Get(ctx, "cut"); err != nil || string(b) != string(data) || calls.Load() != 2 {
		t.Errorf("cut short, then whole: %q %v after %d calls", b, err, calls.Load())
	}
	calls.Store(0)
	if _, err := g.Get(ctx, "crc"); !deltalog.IsTransient(err) || calls.Load() != gcsAttempts {
		t.Errorf("wrong checksum: %v after %d calls", err, calls.Load())
	}
	if b, err := g.GetRange(ctx, "norange", 14, 2); err != nil || string(b) != "ef" {
		t.Errorf("ignored range: %q %v", b, err)
	}
	if _, err := g.GetRange(ctx, "norange", 14, 5); err == nil {
		t.Errorf("short range: no error")
	}
	if err := g.PutIfAbsent(ctx, "up", []byte("{}")); err == nil || errors.Is(err, deltalog.ErrAlreadyExists) {
		t.Errorf("upload described with another checksum: %v", err)
	}
}

// A part of the object that starts elsewhere than asked is an error.
func TestGCSRangeMustStartWhereAsked(t *testing.T) {
	g := emulatorGCS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Range", "bytes 0-1/16")
		w.WriteHeader(http.StatusPartialContent)
		w.Write([]byte("01"))
	}))
	if b, err := g.GetRange(context.Background(), "x", 4, 2); err == nil {
		t.Fatalf("range from 0 taken for a range from 4: %q", b)
	}
}

// Secrets nested in a credentials file (impersonated_service_account's
// source_credentials) are redacted too, not only the top level's.
func TestGCSSecretsAtAnyDepth(t *testing.T) {
	key := `{"type":"impersonated_service_account","service_account_impersonation_url":"https://x",
		"source_credentials":{"type":"authorized_user","client_id":"id","client_secret":"s3cr\"et","refresh_token":"rt-123"},
		"delegates":[{"private_key":"pk-9"}]}`
	got := strings.Join(gcsSecrets(key), "\n")
	for _, want := range []string{`s3cr"et`, `s3cr\"et`, "rt-123", "pk-9"} {
		if !strings.Contains(got, want) {
			t.Errorf("secrets %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "\nid\n") || strings.HasSuffix(got, "\nid") {
		t.Errorf("secrets %q list the client id", got)
	}
}
