package delta_test

// Keyless credentials (azure_use_default_credential,
// gcs_use_default_credentials) through the real library. What needs a real
// cloud (managed identity, workload identity, a token Entra ID or Google
// issues) is listed under Credentials in docs/delta.md.

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// noAzureEnv empties every variable the Azure identity library reads, so
// that the host sees only what a test adds after it.
var noAzureEnv = []string{"AZURE_TENANT_ID=", "AZURE_CLIENT_ID=", "AZURE_CLIENT_SECRET=", "AZURE_CLIENT_CERTIFICATE_PATH=",
	"AZURE_FEDERATED_TOKEN_FILE=", "AZURE_AUTHORITY_HOST=", "IDENTITY_ENDPOINT=", "IDENTITY_HEADER=", "MSI_ENDPOINT=", "MSI_SECRET=", "IMDS_ENDPOINT="}

func TestAzureDefaultCredential(t *testing.T) {
	svc := services.RequireAzure(t)
	c := svc.NewAzureContainer(t)
	cfg := azurite(t, svc, c)
	delete(cfg, "azure_storage_account_key")
	cfg = with(cfg, "azure_use_default_credential", true, "table_uri", "az://"+c+"/{topic}")
	h := newHarness(t, hostclient.Env(noAzureEnv...))

	// Azurite over http: bearer tokens go over https only, said at open.
	err := h.openErr("m", cfg)
	wantStatus(t, err, hostclient.StatusBadConfig,
		"Invalid storage configuration: azure_storage_endpoint_url is plain http: azure_use_default_credential = true sends bearer tokens over https only")
	// With a key as well: refused, neither wins.
	err = h.openErr("m", with(cfg, "azure_storage_account_key", svc.AzureKey))
	wantStatus(t, err, hostclient.StatusBadConfig, "Invalid storage configuration: 'azure_use_default_credential' = true takes no 'azure_storage_account_key'")
	if strings.Contains(err.Error(), svc.AzureKey) {
		t.Fatalf("secret leaked: %v", err)
	}

	// No credential in the environment, and no managed identity endpoint
	// answers (as in a pod whose identity is not there yet): RETRY at
	// open, though the templated URI opens no table yet, saying what was
	// tried and that the runtime opens the sink again later. (The https
	// endpoint is never reached.)
	https := with(cfg, "azure_storage_endpoint_url", "https://127.0.0.1:1/"+svc.AzureAccount)
	err = h.openErr("m", https)
	wantStatus(t, err, hostclient.StatusRetry, "Storage authentication failed: 'azure_use_default_credential' = true but no Azure credential was found",
		"AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "managed identity", "ManagedIdentityCredential", "the runtime opens the sink again later")
}

// A service principal secret in the environment whose token endpoint does
// not answer: RETRY at open, the secret nowhere.
func TestAzureDefaultCredentialUnreachable(t *testing.T) {
	svc := services.RequireAzure(t)
	const secret = "picomq-sp-secret-0123456789"
	h := newHarness(t, hostclient.Env(append(noAzureEnv, "AZURE_TENANT_ID=00000000-0000-0000-0000-000000000001",
		"AZURE_CLIENT_ID=00000000-0000-0000-0000-000000000002", "AZURE_CLIENT_SECRET="+secret, "AZURE_AUTHORITY_HOST=https://127.0.0.1:1/")...))
	cfg := map[string]any{"table_uri": "az://c/t", "storage_backend_type": "azure", "azure_storage_account_name": svc.AzureAccount,
		"azure_container_name": "c", "azure_use_default_credential": true, "azure_storage_endpoint_url": "https://127.0.0.1:1/" + svc.AzureAccount}
	err := h.openErr("m", cfg)
	wantStatus(t, err, hostclient.StatusRetry, "Storage authentication failed: 'azure_use_default_credential' = true: getting an access token failed")
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("secret leaked: %v", err)
	}
}

// fakeServiceAccount writes a service account key whose token_uri is
// tokenURI and returns its path and a line of its private key.
func fakeServiceAccount(t *testing.T, tokenURI string) (path, keyLine string) {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(rk)
	pk := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	b, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": services.GCSProject, "private_key_id": "k1",
		"private_key": pk, "client_email": "sink@" + services.GCSProject + ".iam.gserviceaccount.com", "token_uri": tokenURI})
	path = filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, strings.Split(pk, "\n")[1]
}

// Application Default Credentials end to end: the file
// GOOGLE_APPLICATION_CREDENTIALS names gives a token (from a fake token
// endpoint), every request to the https endpoint carries it (a TLS proxy in
// front of fake-gcs-server checks, trusted through SSL_CERT_FILE), and
// delta-rs reads the rows back from fake-gcs-server.
func TestGCSDefaultCredentials(t *testing.T) {
	svc := services.RequireGCS(t)
	bucket := svc.NewGCSBucket(t)
	cfg, _ := fakeGCS(t, svc)
	delete(cfg, "gcs_service_account_key")
	uri := createInGCS(t, svc, createEvents, bucket, "events")

	var fetches, unauthorized atomic.Int32
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"picomq-adc-token","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(tokens.Close)
	target, _ := url.Parse(svc.GCSEndpoint)
	fwd := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer picomq-adc-token" {
			unauthorized.Add(1)
			http.Error(w, `{"error":{"code":401,"message":"no token"}}`, http.StatusUnauthorized)
			return
		}
		fwd.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	certFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw}), 0o600)

	adc, keyLine := fakeServiceAccount(t, tokens.URL)
	h := newHarness(t, hostclient.Env("GOOGLE_APPLICATION_CREDENTIALS="+adc, "SSL_CERT_FILE="+certFile))
	inst := h.open("m", with(cfg, "gcs_use_default_credentials", true, "gcs_endpoint_url", proxy.URL, "table_uri", "gs://"+bucket+"/{topic}"))
	consume(t, inst, events("events", 0, 3))
	consume(t, inst, events("events", 3, 2))
	wantIDs(t, uri, "0,1,2,3,4")
	if fetches.Load() != 1 || unauthorized.Load() != 0 {
		t.Fatalf("%d token fetches, %d requests without the token", fetches.Load(), unauthorized.Load())
	}
	noSecret(t, inst, keyLine)

	// Against the emulator (plain http) nothing is looked for or sent,
	// as with a key: a credentials file that does not exist is no matter.
	h = newHarness(t, hostclient.Env("GOOGLE_APPLICATION_CREDENTIALS=/nonexistent/adc.json"))
	inst = h.open("m", with(cfg, "gcs_use_default_credentials", true, "table_uri", uri))
	consume(t, inst, events("events", 5, 1))
	wantIDs(t, uri, "0,1,2,3,4,5")
}

// What open says when the default credentials give no token: BAD_CONFIG
// for a refusal or no credentials at all, RETRY for a token endpoint that
// does not answer; never a secret.
func TestGCSDefaultCredentialErrors(t *testing.T) {
	svc := services.RequireGCS(t)
	cfg, _ := fakeGCS(t, svc)
	key := cfg["gcs_service_account_key"].(string)
	delete(cfg, "gcs_service_account_key")
	// The https endpoint is never reached: open fails at the token.
	cfg = with(cfg, "gcs_use_default_credentials", true, "gcs_endpoint_url", "https://127.0.0.1:1", "table_uri", "gs://b/{topic}")

	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`))
	}))
	t.Cleanup(refuse.Close)
	refused, refusedLine := fakeServiceAccount(t, refuse.URL)
	unreachable, unreachableLine := fakeServiceAccount(t, "http://127.0.0.1:1/token")
	malformed := filepath.Join(t.TempDir(), "adc.json")
	if err := os.WriteFile(malformed, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, env string
		status    hostclient.Status
		want      []string
	}{
		{"refused", "GOOGLE_APPLICATION_CREDENTIALS=" + refused, hostclient.StatusBadConfig, []string{
			"Invalid storage configuration: 'gcs_use_default_credentials' = true: getting an access token with the service_account credentials failed",
			"invalid_grant"}},
		{"unreachable", "GOOGLE_APPLICATION_CREDENTIALS=" + unreachable, hostclient.StatusRetry, []string{
			"Storage authentication failed: 'gcs_use_default_credentials' = true: getting an access token with the service_account credentials failed",
			"connection refused"}},
		// A file not there yet (a secret or token not projected yet) may
		// appear without a config change.
		{"missing file", "GOOGLE_APPLICATION_CREDENTIALS=/nonexistent/adc.json", hostclient.StatusRetry, []string{
			"Storage authentication failed: 'gcs_use_default_credentials' = true but no Google credentials were found; tried GOOGLE_APPLICATION_CREDENTIALS, gcloud's application_default_credentials.json, the metadata server",
			"/nonexistent/adc.json", "the runtime opens the sink again later"}},
		// Nothing at all, and a metadata server that refuses connections.
		{"nothing", "GCE_METADATA_HOST=127.0.0.1:1", hostclient.StatusRetry, []string{
			"Storage authentication failed: 'gcs_use_default_credentials' = true", "metadata server", "the runtime opens the sink again later"}},
		// A file that is there and is not credentials: the configuration.
		{"malformed file", "GOOGLE_APPLICATION_CREDENTIALS=" + malformed, hostclient.StatusBadConfig, []string{
			"Invalid storage configuration: 'gcs_use_default_credentials' = true but no Google credentials were found", malformed}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// No gcloud file: a home and a gcloud configuration of its own.
			home := t.TempDir()
			h := newHarness(t, hostclient.Env("GOOGLE_APPLICATION_CREDENTIALS=", "GCE_METADATA_HOST=", "HOME="+home, c.env))
			err := h.openErr("m", cfg)
			wantStatus(t, err, c.status, c.want...)
			for _, s := range []string{refusedLine, unreachableLine} {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("secret leaked: %v", err)
				}
			}
		})
	}

	// With a key as well: refused, neither wins.
	h := newHarness(t)
	err := h.openErr("m", with(cfg, "gcs_service_account_key", key))
	wantStatus(t, err, hostclient.StatusBadConfig, "Invalid storage configuration: 'gcs_use_default_credentials' = true takes no 'gcs_service_account_key'")
}
