package objstore

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// adcFile points GOOGLE_APPLICATION_CREDENTIALS at a file holding creds.
func adcFile(t *testing.T, creds string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(p, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", p)
	return p
}

func gcsDefaultOptions(endpoint string) Options {
	return Options{Backend: BackendGCS, GCS: GCSOptions{DefaultCredentials: true, Endpoint: endpoint}}
}

func authenticateGCS(t *testing.T, opts *Options) *CredentialError {
	t.Helper()
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	err := opts.Authenticate(context.Background())
	var ce *CredentialError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *CredentialError", err)
	}
	return ce
}

// With default credentials from GOOGLE_APPLICATION_CREDENTIALS, open
// fetches one token and every table's store sends it.
func TestGCSDefaultCredentialsTokenIsShared(t *testing.T) {
	var fetches atomic.Int32
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"adc-token","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(tokens.Close)
	adcFile(t, testServiceAccountKey(t, tokens.URL))
	var auth atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		w.Write([]byte(`{"items":[]}`))
	}))
	t.Cleanup(srv.Close)

	opts := gcsDefaultOptions(srv.URL)
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := opts.Authenticate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fetches.Load() != 1 {
		t.Fatalf("%d token fetches at open, want 1", fetches.Load())
	}
	for _, table := range []string{"gs://b/t1", "gs://b/t2"} {
		loc, err := ParseLocation(table)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Open(context.Background(), loc, opts)
		if err != nil {
			t.Fatal(err)
		}
		g := s.(*GCS)
		g.client.Transport = srv.Client().Transport
		if _, err := g.List(context.Background(), "_delta_log/", ""); err != nil {
			t.Fatal(err)
		}
		if got := auth.Load(); got != "Bearer adc-token" {
			t.Fatalf("Authorization %q", got)
		}
	}
	if fetches.Load() != 1 {
		t.Errorf("%d token fetches, want 1", fetches.Load())
	}
}

// A token endpoint that refuses is configuration, one that fails or does
// not answer may heal; no message shows the credentials' secrets, even
// when the endpoint echoes the request.
func TestGCSDefaultCredentialsTokenErrors(t *testing.T) {
	quickRetries(t)
	echo := func(status int) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": "got " + string(body)})
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	const refresh, secret = "refresh-token-marker-0123", "client-secret-marker-4567"
	user := func(tokenURI string) string {
		b, _ := json.Marshal(map[string]string{"type": "authorized_user", "client_id": "id", "client_secret": secret,
			"refresh_token": refresh, "token_uri": tokenURI})
		return string(b)
	}
	for _, c := range []struct {
		name      string
		creds     string
		transient bool
		want      string
	}{
		{"service account refused", testServiceAccountKey(t, echo(http.StatusBadRequest).URL), false, "with the service_account credentials failed"},
		{"service account 503", testServiceAccountKey(t, echo(http.StatusServiceUnavailable).URL), true, "with the service_account credentials failed"},
		{"service account unreachable", testServiceAccountKey(t, "http://127.0.0.1:1/token"), true, "with the service_account credentials failed"},
		{"authorized user refused", user(echo(http.StatusBadRequest).URL), false, "with the authorized_user credentials failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			adcFile(t, c.creds)
			opts := gcsDefaultOptions("https://127.0.0.1:1")
			ce := authenticateGCS(t, &opts)
			if ce.Transient != c.transient || !strings.Contains(ce.Error(), "'GCS default credentials' = true: getting an access token "+c.want) {
				t.Errorf("got %v (transient %v)", ce, ce.Transient)
			}
			var k gcsKey
			_ = json.Unmarshal([]byte(c.creds), &k)
			secrets := []string{refresh, secret}
			if k.PrivateKey != "" {
				secrets = append(secrets, strings.Split(k.PrivateKey, "\n")[1]) // a line of the key
			}
			for _, s := range secrets {
				if strings.Contains(ce.Error(), s) {
					t.Fatalf("secret leaked: %v", ce)
				}
			}
			t.Log(ce)
		})
	}
}

// A credentials file that is not credentials: configuration, naming the
// file. A file not there (yet: a secret not projected), or nothing at all:
// transient, since the environment may still provide them.
func TestGCSDefaultCredentialsNotFound(t *testing.T) {
	for _, c := range []struct {
		name, path, want string
		transient        bool
	}{
		{"missing file", "/nonexistent/adc.json", "GOOGLE_APPLICATION_CREDENTIALS environment variable", true},
		{"not json", "", "GOOGLE_APPLICATION_CREDENTIALS environment variable", false},
		// No variable, no gcloud file under HOME, not on Google Cloud.
		{"nothing", "-", "could not find default credentials", true},
		// gcloud's file under HOME, not credentials.
		{"bad gcloud file", "gcloud", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			t.Setenv("GCE_METADATA_HOST", "")
			switch c.path {
			case "":
				c.want = adcFile(t, "not json")
			case "-":
				t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
			case "gcloud":
				t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
				c.want = filepath.Join(os.Getenv("HOME"), ".config", "gcloud", "application_default_credentials.json")
				if err := os.MkdirAll(filepath.Dir(c.want), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(c.want, []byte("not json"), 0o600); err != nil {
					t.Fatal(err)
				}
			default:
				t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", c.path)
			}
			opts := gcsDefaultOptions("")
			ce := authenticateGCS(t, &opts)
			if ce.Transient != c.transient || !strings.Contains(ce.Error(), "'GCS default credentials' = true but no Google credentials were found; tried GOOGLE_APPLICATION_CREDENTIALS") ||
				!strings.Contains(ce.Error(), c.want) {
				t.Errorf("got %v (transient %v)", ce, ce.Transient)
			}
		})
	}
}

// Against an emulator (plain http) nothing is looked for and nothing sent,
// as with a key.
func TestGCSDefaultCredentialsEmulator(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/adc.json")
	var auth atomic.Value
	auth.Store("unset")
	g := emulatorGCSOptions(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		w.Write([]byte(`{"items":[]}`))
	}))
	if _, err := g.List(context.Background(), "_delta_log/", ""); err != nil {
		t.Fatal(err)
	}
	if got := auth.Load(); got != "" {
		t.Errorf("Authorization %q sent to an emulator", got)
	}
}

func emulatorGCSOptions(t *testing.T, h http.Handler) *GCS {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	opts := gcsDefaultOptions(srv.URL)
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := opts.Authenticate(context.Background()); err != nil {
		t.Fatal(err)
	}
	loc, _ := ParseLocation("gs://b/t")
	s, err := Open(context.Background(), loc, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*GCS)
}
