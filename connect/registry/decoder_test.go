package registry_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/registry"
)

func newDecoder(t *testing.T, cfg registry.Config, typ sr.SchemaType) (*registry.Decoder, *compiler) {
	t.Helper()
	cl, err := registry.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &compiler{}
	return registry.NewDecoder(cl, typ, c.compile), c
}

func decodeOne(d *registry.Decoder, payload []byte) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := d.AppendJSON(ctx, "t", nil, payload)
	return string(out), err
}

func wantRecordError(t *testing.T, err error, contains string) {
	t.Helper()
	if err == nil || !decode.IsRecordError(err) {
		t.Fatalf("error %v (%T): want a *decode.RecordError", err, err)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Fatalf("error %q does not say %q", err, contains)
	}
}

func wantTransient(t *testing.T, err error, contains string) {
	t.Helper()
	if err == nil || decode.IsRecordError(err) {
		t.Fatalf("error %v: want a transient (non-record) error", err)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Fatalf("error %q does not say %q", err, contains)
	}
}

func TestWireFormatErrors(t *testing.T) {
	f, srv := newFake(t)
	d, _ := newDecoder(t, registry.Config{URLs: []string{srv.URL}}, sr.TypeAvro)
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"empty", nil, "empty payload"},
		{"json", []byte(`{"a":1}`), "byte 0x7b, not the Confluent wire format's magic byte 0"},
		{"magic 1", []byte{1, 0, 0, 0, 1, 2}, "byte 0x01"},
		{"short", []byte{0, 0, 1}, "payload of 3 bytes is shorter than the 5-byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeOne(d, tc.payload)
			wantRecordError(t, err, tc.want)
		})
	}
	if n := f.idFetches.Load(); n != 0 {
		t.Fatalf("%d registry fetches for payloads without a header", n)
	}
}

func TestDecodeCachesByID(t *testing.T) {
	f, srv := newFake(t)
	f.ids[7] = map[string]any{"schema": `{"type":"string"}`}
	d, c := newDecoder(t, registry.Config{URLs: []string{srv.URL}}, sr.TypeAvro)
	for i := 0; i < 3; i++ {
		got, err := decodeOne(d, wire(7, fmt.Sprint("p", i)))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"schema":"{\"type\":\"string\"}","payload":"p%d"}`, i); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
	if f.idFetches.Load() != 1 || c.calls.Load() != 1 {
		t.Fatalf("%d fetches, %d compiles for 3 payloads of one id: want 1 and 1", f.idFetches.Load(), c.calls.Load())
	}
	// The codec's error is the record's, named with the id.
	_, err := decodeOne(d, wire(7, "bad"))
	wantRecordError(t, err, "schema id 7: fake codec: undecodable")
}

// fakeClock is a Decoder's clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func setClock(d *registry.Decoder) *fakeClock {
	c := &fakeClock{now: time.Date(2026, 9, 3, 21, 0, 0, 0, time.UTC)}
	registry.SetNow(d, func() time.Time {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.now
	})
	return c
}

func (c *fakeClock) advance(by time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(by)
	c.mu.Unlock()
}

// An id the registry does not know is transient (a lagging replica)
// until the grace has passed since the decoder first saw it unknown, then
// the record's error; never cached, so an id registered meanwhile decodes.
func TestUnknownIDTransientDuringGrace(t *testing.T) {
	f, srv := newFake(t)
	d, _ := newDecoder(t, registry.Config{URLs: []string{srv.URL}}, sr.TypeAvro)
	clock := setClock(d)
	unknown := "schema id 42 is not in the registry at " + srv.URL
	_, err := decodeOne(d, wire(42, "x"))
	wantTransient(t, err, unknown+" (unknown for 0s")
	clock.advance(registry.DefaultUnknownIDGrace - time.Millisecond)
	_, err = decodeOne(d, wire(42, "x"))
	wantTransient(t, err, unknown+" (unknown for "+(registry.DefaultUnknownIDGrace-time.Millisecond).String())
	clock.advance(time.Millisecond)
	for i := 0; i < 2; i++ {
		_, err = decodeOne(d, wire(42, "x"))
		wantRecordError(t, err, unknown)
		if strings.Contains(err.Error(), "retried") {
			t.Fatalf("record error %q still speaks of retries", err)
		}
	}
	if n := f.idFetches.Load(); n != 4 {
		t.Fatalf("%d fetches for 4 decodes of an unknown id: want 4 (not cached)", n)
	}
	// Registered at last (the replica caught up): found.
	f.mu.Lock()
	f.ids[42] = map[string]any{"schema": "s42"}
	f.mu.Unlock()
	if _, err := decodeOne(d, wire(42, "x")); err != nil {
		t.Fatalf("after registering id 42: %v", err)
	}

	// Another id, registered within the grace: decodes, no record error.
	_, err = decodeOne(d, wire(43, "x"))
	wantTransient(t, err, "schema id 43 is not in the registry")
	clock.advance(10 * time.Second)
	f.mu.Lock()
	f.ids[43] = map[string]any{"schema": "s43"}
	f.mu.Unlock()
	if got, err := decodeOne(d, wire(43, "x")); err != nil || !strings.Contains(got, `"s43"`) {
		t.Fatalf("id 43 registered during the grace: %s, %v", got, err)
	}
}

func TestUnknownIDGraceConfigured(t *testing.T) {
	_, srv := newFake(t)
	d, _ := newDecoder(t, registry.Config{URLs: []string{srv.URL}, UnknownIDGrace: 2 * time.Second}, sr.TypeAvro)
	clock := setClock(d)
	_, err := decodeOne(d, wire(7, "x"))
	wantTransient(t, err, "retried until 2s have passed")
	clock.advance(2 * time.Second)
	_, err = decodeOne(d, wire(7, "x"))
	wantRecordError(t, err, "schema id 7 is not in the registry")
	if _, err := registry.New(registry.Config{URLs: []string{srv.URL}, UnknownIDGrace: -time.Second}); err == nil {
		t.Fatal("a negative grace was accepted")
	}
}

func TestTransientFaultsAreNotCached(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"500", 500, `{"error_code":50001,"message":"store down"}`, "HTTP 500 error code 50001"},
		{"429", 429, `rate limited`, "HTTP 429"},
		{"401", 401, `{"error_code":401,"message":"Unauthorized"}`, "refused the credentials"},
		{"403", 403, ``, "refused the credentials"},
		{"404 without code", 404, `<html>not found</html>`, "404 without a schema-registry error code"},
		{"502 page", 502, "<html>" + strings.Repeat("x", 5000) + "</html>", "HTTP 502: <html>xxx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := newFake(t)
			f.ids[3] = map[string]any{"schema": "s3"}
			f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
				return true
			})
			d, _ := newDecoder(t, registry.Config{URLs: []string{srv.URL}, BasicAuth: "alice:s3cr3t-pw"}, sr.TypeAvro)
			_, err := decodeOne(d, wire(3, "x"))
			wantTransient(t, err, tc.want)
			if strings.Contains(err.Error(), "s3cr3t") || len(err.Error()) > 600 {
				t.Fatalf("error leaks the password or a whole page: %v", err)
			}
			f.setHook(nil) // the registry recovers: the next attempt refetches
			if got, err := decodeOne(d, wire(3, "x")); err != nil || !strings.Contains(got, `"s3"`) {
				t.Fatalf("after recovery: %s, %v", got, err)
			}
		})
	}
}

func TestConnectionRefusedIsTransient(t *testing.T) {
	_, srv := newFake(t)
	url := srv.URL
	srv.Close()
	d, _ := newDecoder(t, registry.Config{URLs: []string{url}}, sr.TypeAvro)
	_, err := decodeOne(d, wire(1, "x"))
	wantTransient(t, err, "connection refused")
}

func TestStallIsBoundedByTimeout(t *testing.T) {
	f, srv := newFake(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	d, _ := newDecoder(t, registry.Config{URLs: []string{srv.URL}, Timeout: 300 * time.Millisecond}, sr.TypeAvro)
	start := time.Now()
	_, err := d.AppendJSON(context.Background(), "t", nil, wire(5, "x")) // no deadline of the caller's
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("a stalled registry held the decode %s with a 300ms timeout", took)
	}
	wantTransient(t, err, "schema id 5")
	var ne interface{ Timeout() bool }
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("error %v is not a timeout", err)
	}
}

func TestConcurrentDecodesOfANewIDFetchOnce(t *testing.T) {
	f, srv := newFake(t)
	f.ids[9] = map[string]any{"schema": "s9"}
	gate := make(chan struct{})
	f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		<-gate // hold the first fetch until every decoder waits
		return false
	})
	d, c := newDecoder(t, registry.Config{URLs: []string{srv.URL}}, sr.TypeAvro)
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := decodeOne(d, wire(9, "x"))
			errs <- err
		}()
	}
	time.Sleep(200 * time.Millisecond)
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if f.idFetches.Load() != 1 || c.calls.Load() != 1 {
		t.Fatalf("%d concurrent decodes of a new id: %d fetches, %d compiles, want 1 and 1", n, f.idFetches.Load(), c.calls.Load())
	}
}

func TestReferencesResolvedTransitivelyAndCached(t *testing.T) {
	f, srv := newFake(t)
	// id 1 -> a.proto -> b.proto -> a.proto (a cycle a registry would
	// refuse; it must not hang us); id 2 -> b.proto again.
	f.ids[1] = map[string]any{"schema": "top", "schemaType": "PROTOBUF", "references": []any{ref("a.proto", "a", 1)}}
	f.ids[2] = map[string]any{"schema": "other", "schemaType": "PROTOBUF", "references": []any{ref("b.proto", "b", 2)}}
	f.versions["a/1"] = map[string]any{"subject": "a", "version": 1, "id": 10, "schema": "A", "schemaType": "PROTOBUF", "references": []any{ref("b.proto", "b", 2)}}
	f.versions["b/2"] = map[string]any{"subject": "b", "version": 2, "id": 11, "schema": "B", "schemaType": "PROTOBUF", "references": []any{ref("a.proto", "a", 1)}}
	d, c := newDecoder(t, registry.Config{URLs: []string{srv.URL}}, sr.TypeProtobuf)
	if _, err := decodeOne(d, wire(1, "x")); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	got := c.last
	c.mu.Unlock()
	if got.ID != 1 || got.Type != sr.TypeProtobuf || got.Text != "top" || len(got.References) != 2 ||
		got.References["a.proto"] != "A" || got.References["b.proto"] != "B" {
		t.Fatalf("compile got %+v", got)
	}
	if _, err := decodeOne(d, wire(2, "x")); err != nil {
		t.Fatal(err)
	}
	if n := f.refFetches.Load(); n != 2 {
		t.Fatalf("%d reference fetches for a.proto and b.proto over two ids: want 2 (cached)", n)
	}
	// A reference the registry does not have is the record's problem.
	f.mu.Lock()
	f.ids[3] = map[string]any{"schema": "x", "schemaType": "PROTOBUF", "references": []any{ref("gone.proto", "gone", 1)}}
	f.mu.Unlock()
	_, err := decodeOne(d, wire(3, "x"))
	wantRecordError(t, err, `schema id 3 references "gone.proto" (subject "gone" version 1), which is not in the registry`)
}

func TestPermanentSchemaFailuresAreCached(t *testing.T) {
	f, srv := newFake(t)
	f.ids[4] = map[string]any{"schema": "broken"}
	f.ids[5] = map[string]any{"schema": "message M {}", "schemaType": "PROTOBUF"}
	d, c := newDecoder(t, registry.Config{URLs: []string{srv.URL}}, sr.TypeAvro)
	for i := 0; i < 3; i++ {
		_, err := decodeOne(d, wire(4, "x"))
		wantRecordError(t, err, "schema id 4 (AVRO) does not compile: fake compile: schema is broken")
		_, err = decodeOne(d, wire(5, "x"))
		wantRecordError(t, err, "schema id 5 is of type PROTOBUF; this block decodes AVRO")
	}
	if f.idFetches.Load() != 2 || c.calls.Load() != 1 {
		t.Fatalf("%d fetches, %d compiles for 3 records each of 2 bad ids: want 2 and 1", f.idFetches.Load(), c.calls.Load())
	}
}

func TestAuthHeadersAndUserAgent(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  registry.Config
		want string
	}{
		{"basic", registry.Config{BasicAuth: "alice:pw:with:colons"}, "Basic " + basic("alice", "pw:with:colons")},
		{"bearer", registry.Config{BearerToken: "tok-123"}, "Bearer tok-123"},
		{"none", registry.Config{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := newFake(t)
			f.ids[1] = map[string]any{"schema": "s"}
			var auth, ua string
			f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
				auth, ua = r.Header.Get("Authorization"), r.Header.Get("User-Agent")
				return false
			})
			tc.cfg.URLs = []string{srv.URL}
			d, _ := newDecoder(t, tc.cfg, sr.TypeAvro)
			if _, err := decodeOne(d, wire(1, "x")); err != nil {
				t.Fatal(err)
			}
			if auth != tc.want || ua != registry.DefaultUserAgent {
				t.Fatalf("Authorization %q, User-Agent %q; want %q, %q", auth, ua, tc.want, registry.DefaultUserAgent)
			}
		})
	}
}

func TestTLSRoots(t *testing.T) {
	f := &fakeRegistry{ids: map[int]map[string]any{1: {"schema": "s"}}, versions: map[string]map[string]any{}}
	srv := httptestTLS(t, f)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	d, _ := newDecoder(t, registry.Config{URLs: []string{srv.URL}, TLS: &tls.Config{RootCAs: roots}}, sr.TypeAvro)
	if _, err := decodeOne(d, wire(1, "x")); err != nil {
		t.Fatalf("with the server's CA: %v", err)
	}
	d, _ = newDecoder(t, registry.Config{URLs: []string{srv.URL}}, sr.TypeAvro)
	_, err := decodeOne(d, wire(1, "x"))
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) || decode.IsRecordError(err) {
		t.Fatalf("without the CA: %v, want a transient unknown-authority error", err)
	}
}

// describedCodec is fakeCodec with a value schema naming its schema text.
type describedCodec struct{ fakeCodec }

func (c describedCodec) ValueSchema() []byte { return []byte(c.s.Text) }

// RecordSchema is the value schema of the codec of the payload's id, once
// decoded; nothing for an id not decoded yet, a codec that describes
// nothing, or a payload not in the wire format.
func TestRecordSchema(t *testing.T) {
	f, srv := newFake(t)
	f.ids[7] = map[string]any{"schema": `{"type":"string"}`}
	f.ids[8] = map[string]any{"schema": `{"type":"long"}`}
	cl, err := registry.New(registry.Config{URLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	described := registry.NewDecoder(cl, sr.TypeAvro, func(s registry.Schema) (decode.Codec, error) { return describedCodec{fakeCodec{s}}, nil })
	ctx := context.Background()
	if s := described.RecordSchema(ctx, "t", wire(7, "p")); s != nil {
		t.Fatalf("before decoding: %s", s)
	}
	for _, id := range []int{7, 8} {
		if _, err := decodeOne(described, wire(id, "p")); err != nil {
			t.Fatal(err)
		}
	}
	if s := string(described.RecordSchema(ctx, "t", wire(8, "p"))); s != `{"type":"long"}` {
		t.Fatalf("id 8: %s", s)
	}
	if s := string(described.RecordSchema(ctx, "t", wire(7, "p"))); s != `{"type":"string"}` {
		t.Fatalf("id 7: %s", s)
	}
	if s := described.RecordSchema(ctx, "t", []byte{1, 0, 0, 0, 7}); s != nil {
		t.Fatalf("no magic byte: %s", s)
	}
	plain, _ := newDecoder(t, registry.Config{URLs: []string{srv.URL}}, sr.TypeAvro)
	if _, err := decodeOne(plain, wire(7, "p")); err != nil {
		t.Fatal(err)
	}
	if s := plain.RecordSchema(ctx, "t", wire(7, "p")); s != nil {
		t.Fatalf("a codec that describes nothing: %s", s)
	}
}

// A compile that panics is the schema's failure for good, kept: no crash,
// no second compile, and no waiter sees a nil codec without an error.
func TestCompilePanicIsCachedRecordError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		compile registry.Compile
		want    string
	}{
		{"panic", func(registry.Schema) (decode.Codec, error) { panic("boom in the library") },
			"schema id 4 (AVRO) does not compile: the compiler panicked: boom in the library"},
		{"nil codec", func(registry.Schema) (decode.Codec, error) { return nil, nil },
			"schema id 4 (AVRO) does not compile: the compiler returned no codec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := newFake(t)
			f.ids[4] = map[string]any{"schema": "s4"}
			gate := make(chan struct{})
			f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
				<-gate // hold the fetch until every decoder waits
				return false
			})
			cl, err := registry.New(registry.Config{URLs: []string{srv.URL}})
			if err != nil {
				t.Fatal(err)
			}
			var calls atomic.Int64
			d := registry.NewDecoder(cl, sr.TypeAvro, func(s registry.Schema) (decode.Codec, error) {
				calls.Add(1)
				return tc.compile(s)
			})
			const n = 8
			errs := make(chan error, n)
			for i := 0; i < n; i++ {
				go func() {
					_, err := decodeOne(d, wire(4, "x"))
					errs <- err
				}()
			}
			time.Sleep(100 * time.Millisecond)
			close(gate)
			for i := 0; i < n; i++ {
				wantRecordError(t, <-errs, tc.want)
			}
			_, err = decodeOne(d, wire(4, "x"))
			wantRecordError(t, err, tc.want)
			if calls.Load() != 1 || f.idFetches.Load() != 1 {
				t.Fatalf("%d compiles, %d fetches: want 1 and 1 (the failure kept)", calls.Load(), f.idFetches.Load())
			}
		})
	}
}
