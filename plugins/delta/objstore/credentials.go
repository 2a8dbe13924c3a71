package objstore

// Default (keyless) credentials: the production part of the Azure SDK's
// DefaultAzureCredential chain and Google's Application Default
// Credentials, both opt-in. They are found once
// per sink (Options.Authenticate), with a first token fetched at once so
// that an environment without any credential fails open() with a message
// that says what was tried, and every table's store shares the credential
// and its token cache. S3 needs none of this: without keys it always used
// the AWS SDK's default chain.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// CredentialError is a default credential chain that gave no token. Its
// message names the opt-in option and what was tried, never a secret.
type CredentialError struct {
	Backend Backend
	Option  Option // the opt-in, e.g. OptAzureDefaultCredential
	// Transient says the failure may go away without a configuration
	// change (no credential found yet, no answer from a token endpoint, a
	// 5xx): the caller retries. Otherwise the credential found was refused,
	// or its file is not credentials.
	Transient bool
	msg       message
}

func (e *CredentialError) Error() string { return e.Render(nil) }

// Render is Error with options named by name (nil: Option.String).
func (e *CredentialError) Render(name func(Option) string) string { return e.msg.render(name) }

// credentialCheckTimeout bounds the first token fetch at open. Managed
// identity endpoints retry for longer; past this the open is retried.
const credentialCheckTimeout = 30 * time.Second

// Authenticate finds the default credentials the options opt into and
// fetches a first token; without such an opt-in it does nothing (no I/O).
// o must have passed Validate. Its errors are *CredentialError. The stores
// Open returns from o afterwards share the credential.
func (o *Options) Authenticate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, credentialCheckTimeout)
	defer cancel()
	switch {
	case o.Backend == BackendAzure && o.Azure.DefaultCredential:
		cred, err := newAzureCredential()
		if err != nil {
			return err
		}
		if err := cred.check(ctx); err != nil {
			return err
		}
		o.Azure.cred = cred
	case o.Backend == BackendGCS && o.GCS.DefaultCredentials:
		if _, emulator, err := gcsEndpoint(o.GCS.Endpoint); err != nil || emulator {
			return err // an emulator gets no credentials, so none are looked for
		}
		auth, err := findGCSDefaultAuth(gcsTransport())
		if err != nil {
			return err
		}
		if _, err := auth.token(ctx); err != nil {
			return auth.tokenError(err)
		}
		o.GCS.auth = auth
	}
	return nil
}

// azureTokenScope is the scope azblob asks tokens for.
const azureTokenScope = "https://storage.azure.com/.default"

// azureTried is what the chain tries, in order, for messages.
const azureTried = "a service principal secret in the environment (AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET), " +
	"workload identity (AZURE_FEDERATED_TOKEN_FILE, AZURE_CLIENT_ID, AZURE_TENANT_ID), " +
	"then managed identity (the host's endpoint or IMDS; AZURE_CLIENT_ID picks a user-assigned identity)"

// azureCredential is the credential chain of one sink.
type azureCredential struct {
	cred    azcore.TokenCredential
	secrets []string // the environment's secret, never shown
}

// newAzureCredential builds the production half of the SDK's
// DefaultAzureCredential, in its order: EnvironmentCredential's
// client-secret form, WorkloadIdentityCredential, ManagedIdentityCredential.
// Left out are the developer logins (Azure CLI, Developer CLI, PowerShell),
// which run programs from inside the host process, and the environment's
// certificate and username/password forms: together they doubled what
// identity support adds to the library (about 1.9 MB instead of 0.9 MB
// stripped). Each credential reads the same variables as in
// DefaultAzureCredential, so an environment set up for it works here.
func newAzureCredential() (*azureCredential, error) {
	silenceAzureSDK()
	opts := azcore.ClientOptions{Telemetry: policy.TelemetryOptions{ApplicationID: "picomq-delta-sink"}}
	c := &azureCredential{}
	fail := func(err error) error {
		return &CredentialError{Backend: BackendAzure, Option: OptAzureDefaultCredential,
			msg: message{"'%s' = true: %s", []any{OptAzureDefaultCredential, redact(err.Error(), c.secrets)}}}
	}
	var chain []azcore.TokenCredential
	tenant, client, secret := os.Getenv("AZURE_TENANT_ID"), os.Getenv("AZURE_CLIENT_ID"), os.Getenv("AZURE_CLIENT_SECRET")
	if tenant != "" && client != "" && secret != "" {
		c.secrets = []string{secret}
		sp, err := azidentity.NewClientSecretCredential(tenant, client, secret, &azidentity.ClientSecretCredentialOptions{ClientOptions: opts})
		if err != nil {
			return nil, fail(err)
		}
		chain = append(chain, sp)
	}
	if os.Getenv("AZURE_FEDERATED_TOKEN_FILE") != "" {
		wi, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{ClientOptions: opts})
		if err != nil {
			return nil, fail(err)
		}
		chain = append(chain, wi)
	}
	miOpts := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: opts}
	if client != "" {
		miOpts.ID = azidentity.ClientID(client)
	}
	mi, err := azidentity.NewManagedIdentityCredential(miOpts)
	if err != nil {
		return nil, fail(err)
	}
	chain = append(chain, &probedManagedIdentity{cred: mi})
	if c.cred, err = azidentity.NewChainedTokenCredential(chain, nil); err != nil {
		return nil, fail(err)
	}
	return c, nil
}

// miProbeTimeout is how long a managed identity endpoint that never
// answered gets before it counts as absent. IMDS answers in milliseconds
// where it exists; elsewhere its address swallows packets and the
// library's own retries would run for a minute.
const miProbeTimeout = 5 * time.Second

// probedManagedIdentity reports a managed identity endpoint that does not
// answer in time as unavailable, as DefaultAzureCredential's own IMDS probe
// does (which the library does not offer outside that chain; this is the
// wrapper its documentation shows for chains of your own). Once a token
// came back, calls are not bounded any more.
type probedManagedIdentity struct {
	cred     *azidentity.ManagedIdentityCredential
	mu       sync.Mutex
	answered bool
}

func (p *probedManagedIdentity) GetToken(ctx context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error) {
	p.mu.Lock()
	answered := p.answered
	p.mu.Unlock()
	if answered {
		return p.cred.GetToken(ctx, opts)
	}
	pctx, cancel := context.WithTimeout(ctx, miProbeTimeout)
	defer cancel()
	tok, err := p.cred.GetToken(pctx, opts)
	switch {
	case err == nil:
		p.mu.Lock()
		p.answered = true
		p.mu.Unlock()
	case ctx.Err() == nil && pctx.Err() != nil:
		return tok, azidentity.NewCredentialUnavailableError(fmt.Sprintf("ManagedIdentityCredential: no managed identity endpoint answered within %s", miProbeTimeout))
	case ctx.Err() == nil:
		// Before its first token the managed identity is the platform's,
		// not the configuration's: an endpoint that refuses, or answers
		// that no identity is assigned (yet), is an identity not there
		// yet, as in a starting pod.
		return tok, azidentity.NewCredentialUnavailableError(err.Error())
	}
	return tok, err
}

// check fetches a token, which the library caches for the first requests.
func (c *azureCredential) check(ctx context.Context) error {
	_, err := c.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{azureTokenScope}})
	if err == nil {
		return nil
	}
	detail := redact(err.Error(), c.secrets)
	var failed *azidentity.AuthenticationFailedError
	var nonRetriable interface{ NonRetriable() }
	switch {
	case errors.As(err, &failed):
		// A credential answered and gave no token: a refusal (4xx) is
		// configuration, no answer or a 5xx may heal.
		transient := failed.RawResponse == nil || failed.RawResponse.StatusCode == http.StatusTooManyRequests ||
			failed.RawResponse.StatusCode == http.StatusRequestTimeout || failed.RawResponse.StatusCode >= 500
		return &CredentialError{Backend: BackendAzure, Option: OptAzureDefaultCredential, Transient: transient,
			msg: message{"'%s' = true: getting an access token failed (tried %s): %s", []any{OptAzureDefaultCredential, azureTried, detail}}}
	case errors.As(err, &nonRetriable):
		// Every credential of the chain said it is not configured here
		// (the library's "credential unavailable", which is unexported):
		// a pod whose identity is not there yet looks the same, and the
		// environment may still provide one.
		return &CredentialError{Backend: BackendAzure, Option: OptAzureDefaultCredential, Transient: true,
			msg: message{"'%s' = true but no Azure credential was found (tried %s): %s", []any{OptAzureDefaultCredential, azureTried, detail}}}
	}
	// Cancelled or timed out.
	return &CredentialError{Backend: BackendAzure, Option: OptAzureDefaultCredential, Transient: true,
		msg: message{"'%s' = true: getting an access token failed (tried %s): %s", []any{OptAzureDefaultCredential, azureTried, detail}}}
}

// gcsTried is what Application Default Credentials tries, in order.
const gcsTried = "GOOGLE_APPLICATION_CREDENTIALS, gcloud's application_default_credentials.json, the metadata server"

// credentialType is the "type" of a credentials JSON for messages, or what
// supplies credentials without one.
func credentialType(k gcsKey) string {
	if k.Type == "" {
		return "metadata server"
	}
	return k.Type
}

// tokenError classifies a failed first token fetch of default credentials.
func (a *gcsAuth) tokenError(err error) error {
	return &CredentialError{Backend: BackendGCS, Option: OptGCSDefaultCredentials, Transient: gcsTransient(err),
		msg: message{"'%s' = true: getting an access token with the %s credentials failed: %s",
			[]any{OptGCSDefaultCredentials, a.kind, redact(fmt.Sprint(err), a.secrets)}}}
}
