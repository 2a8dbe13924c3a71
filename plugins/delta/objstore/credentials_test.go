package objstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

// The opt-ins replace the keys: both at once is refused, neither is the
// error of today, and Azure's bearer tokens need https.
func TestDefaultCredentialOptions(t *testing.T) {
	azure := func(f func(*objstore.AzureOptions)) objstore.Options {
		o := objstore.Options{Backend: objstore.BackendAzure, Azure: objstore.AzureOptions{Account: "a", Container: "c", DefaultCredential: true}}
		f(&o.Azure)
		return o
	}
	gcs := func(f func(*objstore.GCSOptions)) objstore.Options {
		o := objstore.Options{Backend: objstore.BackendGCS, GCS: objstore.GCSOptions{DefaultCredentials: true}}
		f(&o.GCS)
		return o
	}
	for _, c := range []struct {
		name string
		opts objstore.Options
		want string // "" valid
	}{
		{"azure alone", azure(func(*objstore.AzureOptions) {}), ""},
		{"azure https endpoint", azure(func(a *objstore.AzureOptions) { a.Endpoint = "https://a.blob.example.net" }), ""},
		{"azure with key", azure(func(a *objstore.AzureOptions) { a.AccountKey = "a2V5" }), "'Azure default credential' = true takes no 'Azure account key'"},
		{"azure with sas", azure(func(a *objstore.AzureOptions) { a.SASToken = "sv=1&sig=x" }), "'Azure default credential' = true takes no 'Azure SAS token'"},
		{"azure over http", azure(func(a *objstore.AzureOptions) { a.Endpoint = "http://127.0.0.1:10000/devstoreaccount1" }),
			"Azure endpoint is plain http: Azure default credential = true sends bearer tokens over https only"},
		{"azure neither", azure(func(a *objstore.AzureOptions) { a.DefaultCredential = false }), "requires exactly one of 'Azure account key' or 'Azure SAS token'"},
		{"gcs alone", gcs(func(*objstore.GCSOptions) {}), ""},
		{"gcs emulator", gcs(func(g *objstore.GCSOptions) { g.Endpoint = "http://127.0.0.1:4443" }), ""},
		{"gcs with key", gcs(func(g *objstore.GCSOptions) { g.ServiceAccountKey = "{}" }), "'GCS default credentials' = true takes no 'GCS service account key'"},
		{"gcs bad endpoint", gcs(func(g *objstore.GCSOptions) { g.Endpoint = "ftp://x" }), "GCS endpoint is not an http(s) URL"},
		{"gcs neither", gcs(func(g *objstore.GCSOptions) { g.DefaultCredentials = false }), "requires 'GCS service account key'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.opts.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// clearAzureEnv removes every variable the Azure identity library reads,
// so that only what a test sets is there.
func clearAzureEnv(t *testing.T) {
	for _, v := range []string{"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH",
		"AZURE_USERNAME", "AZURE_PASSWORD", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_AUTHORITY_HOST", "AZURE_TOKEN_CREDENTIALS",
		"IDENTITY_ENDPOINT", "IDENTITY_HEADER", "IDENTITY_SERVER_THUMBPRINT", "MSI_ENDPOINT", "MSI_SECRET", "IMDS_ENDPOINT"} {
		t.Setenv(v, "")
	}
}

func authenticateAzure(t *testing.T) *objstore.CredentialError {
	t.Helper()
	opts := objstore.Options{Backend: objstore.BackendAzure, Azure: objstore.AzureOptions{Account: "a", Container: "c", DefaultCredential: true,
		Endpoint: "https://127.0.0.1:1/a"}}
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	err := opts.Authenticate(context.Background())
	var ce *objstore.CredentialError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *CredentialError", err)
	}
	return ce
}

// Nothing in the environment and no managed identity (this is not an
// Azure machine, or a pod whose identity is not there yet): transient,
// since the environment may still provide one, with a message that says
// what was tried. Off Azure, the IMDS address either does not answer (the
// probe gives up) or something else answers it with an error (this test
// machine's egress proxy says 403): "no Azure credential was found" either
// way.
func TestAzureDefaultCredentialNotFound(t *testing.T) {
	clearAzureEnv(t)
	start := time.Now()
	ce := authenticateAzure(t)
	if !ce.Transient {
		t.Errorf("not transient: %v", ce)
	}
	for _, want := range []string{"'Azure default credential' = true but no Azure credential was found", "AZURE_CLIENT_SECRET",
		"AZURE_FEDERATED_TOKEN_FILE", "managed identity", "ManagedIdentityCredential"} {
		if !strings.Contains(ce.Error(), want) {
			t.Errorf("message %q lacks %q", ce, want)
		}
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %s", d)
	}
}

// A service principal in the environment whose token endpoint does not
// answer: retried, and the secret is never shown.
func TestAzureDefaultCredentialUnreachable(t *testing.T) {
	clearAzureEnv(t)
	const secret = "sp-secret-value-0123456789"
	t.Setenv("AZURE_TENANT_ID", "00000000-0000-0000-0000-000000000001")
	t.Setenv("AZURE_CLIENT_ID", "00000000-0000-0000-0000-000000000002")
	t.Setenv("AZURE_CLIENT_SECRET", secret)
	t.Setenv("AZURE_AUTHORITY_HOST", "https://127.0.0.1:1/")
	ce := authenticateAzure(t)
	if !ce.Transient || !strings.Contains(ce.Error(), "'Azure default credential' = true: getting an access token failed (tried a service principal secret") {
		t.Errorf("got %v (transient %v)", ce, ce.Transient)
	}
	if strings.Contains(ce.Error(), secret) {
		t.Fatalf("secret leaked: %v", ce)
	}
}
