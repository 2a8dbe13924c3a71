package registry_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/registry"
)

// fakeRegistry answers the two Confluent API calls the client makes, from
// maps the test fills, and counts them. hook, when set, runs first and
// may answer instead (faults).
type fakeRegistry struct {
	mu       sync.Mutex
	ids      map[int]map[string]any    // id -> {"schema":..., "schemaType":..., "references":[...]}
	versions map[string]map[string]any // "subject/version" -> same, plus subject/version/id
	hook     func(w http.ResponseWriter, r *http.Request) bool

	idFetches  atomic.Int64
	refFetches atomic.Int64
}

func newFake(t *testing.T) (*fakeRegistry, *httptest.Server) {
	f := &fakeRegistry{ids: map[int]map[string]any{}, versions: map[string]map[string]any{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeRegistry) setHook(h func(w http.ResponseWriter, r *http.Request) bool) {
	f.mu.Lock()
	f.hook = h
	f.mu.Unlock()
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	hook := f.hook
	f.mu.Unlock()
	if hook != nil && hook(w, r) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case strings.HasPrefix(r.URL.Path, "/schemas/ids/"):
		f.idFetches.Add(1)
		id, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/schemas/ids/"))
		if s, ok := f.ids[id]; ok {
			writeJSON(w, 200, s)
			return
		}
		writeJSON(w, 404, map[string]any{"error_code": 40403, "message": "Schema not found"})
	case strings.HasPrefix(r.URL.Path, "/subjects/"):
		f.refFetches.Add(1)
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/subjects/"), "/versions/")
		if s, ok := f.versions[parts[0]+"/"+parts[1]]; ok {
			writeJSON(w, 200, s)
			return
		}
		writeJSON(w, 404, map[string]any{"error_code": 40401, "message": "Subject not found"})
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ref is one reference entry of a schema.
func ref(name, subject string, version int) map[string]any {
	return map[string]any{"name": name, "subject": subject, "version": version}
}

// fakeCodec's JSON names the schema text and the payload, so a test sees
// which schema decoded which bytes.
type fakeCodec struct{ s registry.Schema }

func (c fakeCodec) AppendJSON(dst, payload []byte) ([]byte, error) {
	if string(payload) == "bad" {
		return dst, fmt.Errorf("fake codec: undecodable %q", payload)
	}
	return fmt.Appendf(dst, `{"schema":%q,"payload":%q}`, c.s.Text, payload), nil
}

// compiler is a fake registry.Compile that counts its calls, records what
// it was given, and refuses schema text "broken".
type compiler struct {
	calls atomic.Int64
	mu    sync.Mutex
	last  registry.Schema
}

func (c *compiler) compile(s registry.Schema) (decode.Codec, error) {
	c.calls.Add(1)
	c.mu.Lock()
	c.last = s
	c.mu.Unlock()
	if s.Text == "broken" {
		return nil, fmt.Errorf("fake compile: schema is broken")
	}
	return fakeCodec{s}, nil
}

// wire returns body behind the Confluent header of id.
func wire(id int, body string) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return append(b, body...)
}

func basic(user, pass string) string {
	r, _ := http.NewRequest("GET", "http://x", nil)
	r.SetBasicAuth(user, pass)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

// httptestServer serves h on loopback until the test or fuzz target ends
// and returns its URL.
func httptestServer(tb testing.TB, h http.Handler) string {
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv.URL
}

func httptestTLS(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv
}
