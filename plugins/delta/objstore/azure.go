package objstore

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	azlog "github.com/Azure/azure-sdk-for-go/sdk/azcore/log"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// Azure is a table in an Azure Blob Storage container under a name prefix.
//
// Table URIs: az://container/path (also azure://) and, as Hadoop and Spark
// write them, abfs[s]://container@account.dfs.core.windows.net/path. Either
// way the blob endpoint is used, which hierarchical-namespace (ADLS Gen2)
// accounts serve as well.
type Azure struct {
	client    *container.Client
	container string
	prefix    string // "" or "path/to/table/"
	secrets   []string
	// noStartFrom is set once the service refused the startFrom listing
	// parameter (service versions before 2026-02-06); List then filters
	// client-side only.
	noStartFrom atomic.Bool
}

// azureRetry is the SDK's retry policy for every request: a few quick tries
// for throttling, 5xx and dropped connections, so that a store that is
// really down reports a transient error within seconds and the runtime's own
// retry takes over.
var azureRetry = policy.RetryOptions{MaxRetries: 3, RetryDelay: 200 * time.Millisecond, MaxRetryDelay: 3 * time.Second}

// silenceAzureSDK drops the SDK's log listener, which AZURE_SDK_GO_LOGGING
// would point at the process's stderr, past the host's log callback and
// redaction.
var silenceAzureSDK = sync.OnceFunc(func() { azlog.SetListener(nil) })

// NewAzure returns the store for tablePath in containerName. opts must have
// passed Options.Validate; Open has already checked that the location and
// opts agree on the container and account.
func NewAzure(ctx context.Context, containerName, tablePath string, opts AzureOptions) (*Azure, error) {
	silenceAzureSDK()
	service := strings.TrimRight(opts.Endpoint, "/")
	if service == "" {
		service = "https://" + opts.Account + ".blob.core.windows.net"
	}
	containerURL := service + "/" + url.PathEscape(containerName)
	a := &Azure{container: containerName}
	if p := strings.Trim(tablePath, "/"); p != "" {
		a.prefix = p + "/"
	}
	clientOpts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry:           azureRetry,
		Telemetry:       policy.TelemetryOptions{ApplicationID: "picomq-delta-sink"},
		PerCallPolicies: []policy.Policy{startFromPolicy{}},
	}}
	var err error
	switch {
	case opts.DefaultCredential:
		cred := opts.cred
		if cred == nil {
			// Not authenticated beforehand (a caller other than the
			// sink): the first request finds the credential.
			if cred, err = newAzureCredential(); err != nil {
				return nil, err
			}
		}
		a.secrets = cred.secrets
		a.client, err = container.NewClient(containerURL, cred.cred, clientOpts)
	case opts.AccountKey != "":
		a.secrets = []string{opts.AccountKey}
		var cred *container.SharedKeyCredential
		cred, err = container.NewSharedKeyCredential(opts.Account, opts.AccountKey)
		if err != nil {
			return nil, fmt.Errorf("azure: %s", redact(err.Error(), a.secrets))
		}
		a.client, err = container.NewClientWithSharedKeyCredential(containerURL, cred, clientOpts)
	default:
		sas := strings.TrimPrefix(opts.SASToken, "?")
		a.secrets = sasSecrets(sas)
		a.client, err = container.NewClientWithNoCredential(containerURL+"?"+sas, clientOpts)
	}
	if err != nil {
		return nil, fmt.Errorf("azure: %s", redact(err.Error(), a.secrets))
	}
	return a, nil
}

func (a AzureOptions) validate() error {
	if a.Account == "" {
		return missing(BackendAzure, OptAzureAccount)
	}
	if a.Container == "" {
		return missing(BackendAzure, OptAzureContainer)
	}
	if a.DefaultCredential {
		// A key next to the opt-in is a configuration nobody can read
		// unambiguously: refused rather than one silently winning.
		if a.AccountKey != "" {
			return notWith(BackendAzure, OptAzureDefaultCredential, OptAzureAccountKey)
		}
		if a.SASToken != "" {
			return notWith(BackendAzure, OptAzureDefaultCredential, OptAzureSASToken)
		}
		if err := checkAzureEndpoint(a.Endpoint); err != nil {
			return err
		}
		// azcore sends bearer tokens over https only; say so at open
		// instead of on the first request.
		if strings.HasPrefix(strings.ToLower(a.Endpoint), "http://") {
			return invalid(BackendAzure, OptAzureEndpoint, "%s is plain http: %s = true sends bearer tokens over https only (Azurite over http takes %s or %s)",
				OptAzureEndpoint, OptAzureDefaultCredential, OptAzureAccountKey, OptAzureSASToken)
		}
		return nil
	}
	if (a.AccountKey == "") == (a.SASToken == "") {
		return &OptionError{Backend: BackendAzure, Option: OptAzureAccountKey, Other: OptAzureSASToken, Problem: ExactlyOne}
	}
	return errors.Join(checkAzureKey(a.AccountKey), checkAzureEndpoint(a.Endpoint))
}

// checkAzureKey validates the account key: base64, as the portal shows it.
// The message never quotes the key.
func checkAzureKey(key string) error {
	if key == "" {
		return nil
	}
	if _, err := base64.StdEncoding.DecodeString(key); err != nil {
		return invalid(BackendAzure, OptAzureAccountKey, "%s is not a base64 account key", OptAzureAccountKey)
	}
	return nil
}

// checkAzureEndpoint validates the endpoint: an http(s) URL without a query
// (a SAS token belongs in the SAS token option, which is redacted; the
// endpoint is not).
func checkAzureEndpoint(endpoint string) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return invalid(BackendAzure, OptAzureEndpoint, "%s is not an http(s) URL, e.g. http://127.0.0.1:10000/devstoreaccount1", OptAzureEndpoint)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return invalid(BackendAzure, OptAzureEndpoint, "%s must not carry a query: put a SAS token in %s", OptAzureEndpoint, OptAzureSASToken)
	}
	return nil
}

// parseAzureURI returns the container and, for abfs[s] URIs, the account a
// table URI names.
func parseAzureURI(u *url.URL) (containerName, account string, err error) {
	switch strings.ToLower(u.Scheme) {
	case "abfs", "abfss":
		if u.User == nil || u.User.Username() == "" {
			return "", "", errors.New("abfs URIs name a container and an account, abfss://container@account.dfs.core.windows.net/path")
		}
		if _, hasPass := u.User.Password(); hasPass {
			return "", "", errors.New("abfs URIs carry no password")
		}
		host := u.Hostname()
		account, _, ok := strings.Cut(host, ".")
		if !ok || account == "" {
			return "", "", errors.New("abfs URIs name a container and an account, abfss://container@account.dfs.core.windows.net/path")
		}
		return u.User.Username(), account, nil
	default:
		if u.Host == "" || u.User != nil {
			return "", "", errors.New("az:// URIs name a container, az://container/path")
		}
		return u.Host, "", nil
	}
}

// checkAzureTarget checks that the location and the azure options agree.
// The spec requires a container option, and a URI names a container too:
// they must be the same one, so that a table never lands in a container
// nobody configured (a templated URI cannot move tables between containers).
func checkAzureTarget(loc Location, opts AzureOptions) error {
	if opts.Account == "" {
		return uriError(loc.raw, `az:// tables need %s = "azure" and its keys`, OptBackend)
	}
	if opts.Container != "" && opts.Container != loc.Bucket {
		return uriError(loc.raw, "container %q differs from %s %q", loc.Bucket, OptAzureContainer, opts.Container)
	}
	if loc.Account != "" && !strings.EqualFold(loc.Account, opts.Account) {
		return uriError(loc.raw, "account %q differs from %s %q", loc.Account, OptAzureAccount, opts.Account)
	}
	return nil
}

// URI implements Store.
func (a *Azure) URI() string {
	return "az://" + a.container + "/" + strings.TrimSuffix(a.prefix, "/")
}

func (a *Azure) blob(p string) *blob.Client { return a.client.NewBlobClient(a.prefix + p) }

// List implements deltalog.Store. Azure has no StartAfter; it has
// startFrom (inclusive, service version 2026-02-06 and later, Azurite
// 3.37+), so the listing starts at startAfter and the name itself is
// dropped. Results are filtered client-side as well, which keeps the answer
// right on a service that ignores the parameter; one that rejects it (HTTP
// 400) is asked again without it, and never again with it.
func (a *Azure) List(ctx context.Context, prefix, startAfter string) ([]deltalog.FileInfo, error) {
	full := a.prefix + prefix
	after := ""
	if startAfter != "" {
		after = a.prefix + startAfter
	}
	useStartFrom := after > full && !a.noStartFrom.Load()
	out, err := a.list(ctx, full, after, useStartFrom)
	var re *azcore.ResponseError
	if err != nil && useStartFrom && errors.As(err, &re) && re.StatusCode == http.StatusBadRequest {
		if out, err = a.list(ctx, full, after, false); err == nil {
			a.noStartFrom.Store(true)
		}
	}
	if err != nil {
		return nil, a.wrap("list", prefix, err)
	}
	return out, nil
}

func (a *Azure) list(ctx context.Context, full, after string, startFrom bool) ([]deltalog.FileInfo, error) {
	o := &container.ListBlobsFlatOptions{Prefix: &full}
	if startFrom {
		ctx = context.WithValue(ctx, startFromKey{}, after)
	}
	var out []deltalog.FileInfo
	pager := a.client.NewListBlobsFlatPager(o)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Segment.BlobItems {
			if item.Name == nil {
				continue
			}
			name := *item.Name
			if !strings.HasPrefix(name, full) || name <= after {
				continue
			}
			fi := deltalog.FileInfo{Path: strings.TrimPrefix(name, a.prefix)}
			if pr := item.Properties; pr != nil {
				if pr.ContentLength != nil {
					fi.Size = *pr.ContentLength
				}
				if pr.LastModified != nil {
					fi.ModTime = *pr.LastModified
				}
			}
			out = append(out, fi)
		}
	}
	return out, nil
}

// startFromKey carries a listing's startFrom in its request's context to
// startFromPolicy.
type startFromKey struct{}

// startFromPolicy adds the startFrom query parameter to a List Blobs request
// whose context carries one. azblob v1.8.0 has ListBlobsFlatOptions.StartFrom
// but never sends it (fixed in v1.8.1, the version that also brings in
// Arrow: go.mod says why we stay), so the sink sends it itself, unless the
// SDK already does (a later azblob). The parameter is appended: the rest of
// the query (a SAS token's signature among it) goes out byte for byte.
type startFromPolicy struct{}

func (startFromPolicy) Do(req *policy.Request) (*http.Response, error) {
	if after, ok := req.Raw().Context().Value(startFromKey{}).(string); ok {
		u := req.Raw().URL
		if q := u.Query(); q.Get("comp") == "list" && !q.Has("startFrom") {
			u.RawQuery += "&startFrom=" + url.QueryEscape(after)
		}
	}
	return req.Next()
}

// Get implements deltalog.Store.
func (a *Azure) Get(ctx context.Context, p string) ([]byte, error) {
	return a.get(ctx, p, blob.HTTPRange{})
}

// GetRange implements deltalog.RangeReader with a ranged GET.
func (a *Azure) GetRange(ctx context.Context, p string, offset, length int64) ([]byte, error) {
	if length == 0 {
		return []byte{}, nil
	}
	return a.get(ctx, p, blob.HTTPRange{Offset: offset, Count: length})
}

func (a *Azure) get(ctx context.Context, p string, rng blob.HTTPRange) ([]byte, error) {
	resp, err := a.blob(p).DownloadStream(ctx, &blob.DownloadStreamOptions{Range: rng})
	if err != nil {
		return nil, a.wrap("get", p, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, a.wrap("get", p, err)
	}
	if rng.Count > 0 && int64(len(data)) != rng.Count {
		return nil, fmt.Errorf("azure get %s: range [%d,+%d) returned %d bytes", a.where(p), rng.Offset, rng.Count, len(data))
	}
	return data, nil
}

// Put implements Store: a single Put Blob, replacing any blob of that name.
// Content-MD5 makes the service reject a body damaged on the way.
func (a *Azure) Put(ctx context.Context, p string, data []byte) error {
	return a.upload(ctx, "put", p, data, nil)
}

// PutIfAbsent implements deltalog.Store with a conditional Put Blob
// (If-None-Match: *). Azure answers 409 BlobAlreadyExists when the name is
// taken (412 ConditionNotMet in some cases); Azurite answers 409. Both mean
// the version is taken.
func (a *Azure) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	star := azcore.ETagAny
	return a.upload(ctx, "put-if-absent", p, data, &blob.AccessConditions{
		ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &star},
	})
}

func (a *Azure) upload(ctx context.Context, op, p string, data []byte, cond *blob.AccessConditions) error {
	sum := md5.Sum(data)
	_, err := a.client.NewBlockBlobClient(a.prefix+p).Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{
		AccessConditions:        cond,
		TransactionalValidation: blob.TransferValidationTypeMD5(sum[:]),
	})
	return a.wrap(op, p, err)
}

// Delete implements deltalog.Store. A missing blob (or container) is not an
// error.
func (a *Azure) Delete(ctx context.Context, p string) error {
	include := blob.DeleteSnapshotsOptionTypeInclude
	_, err := a.blob(p).Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: &include})
	if err = a.wrap("delete", p, err); errors.Is(err, deltalog.ErrNotFound) {
		return nil
	}
	return err
}

func (a *Azure) where(p string) string { return "az://" + a.container + "/" + a.prefix + p }

// wrap maps Azure failures onto the deltalog sentinels. The message names
// the operation, the blob, the HTTP status and the service's error code;
// never the SDK's text, which can hold request URLs (and with them a SAS
// token) or echo signatures.
func (a *Azure) wrap(op, p string, err error) error {
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("azure %s %s", op, a.where(p))
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		status, code := re.StatusCode, bloberror.Code(re.ErrorCode)
		detail := fmt.Sprintf("HTTP %d", status)
		if code != "" {
			detail += " " + string(code)
		}
		switch {
		case code == bloberror.BlobAlreadyExists,
			op == "put-if-absent" && (status == http.StatusPreconditionFailed || code == bloberror.ConditionNotMet):
			return fmt.Errorf("%s: %s: %w", where, detail, deltalog.ErrAlreadyExists)
		case code == bloberror.AuthenticationFailed:
			// What Azure answers a wrong account key or a bad SAS
			// signature; a missing grant is AuthorizationPermissionMismatch.
			return fmt.Errorf("%s: %s: %w", where, detail, ErrKeyRefused)
		case code == bloberror.ContainerNotFound:
			return fmt.Errorf("%s: %w", where, &NoBucketError{Kind: "container", Name: a.container})
		case status == http.StatusNotFound:
			return fmt.Errorf("%s: %s: %w", where, detail, deltalog.ErrNotFound)
		case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests, status >= 500,
			code == bloberror.ServerBusy, code == bloberror.OperationTimedOut, code == bloberror.InternalError:
			return fmt.Errorf("%s: %s: %w", where, detail, deltalog.ErrTransient)
		}
		return fmt.Errorf("%s: %s", where, detail)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", where, context.Canceled)
	}
	// No HTTP response: a network failure or timeout (the SDK has retried
	// already). Whether a write reached the store is unknown; callers that
	// care read back.
	return fmt.Errorf("%s: %w: %s", where, deltalog.ErrTransient, redact(err.Error(), a.secrets))
}

// sasSecrets lists what of a SAS token must never be shown: the token, its
// signature, and their escaped forms (a URL in an error message carries them
// escaped).
func sasSecrets(sas string) []string {
	out := []string{sas}
	if q, err := url.ParseQuery(sas); err == nil {
		if sig := q.Get("sig"); sig != "" {
			out = append(out, sig, url.QueryEscape(sig))
		}
	}
	return out
}

// urlQuery matches the query string of a URL in a message.
var urlQuery = regexp.MustCompile(`(?i)(https?://[^\s"'?]*)\?[^\s"']*`)

// redact removes URL query strings (where SAS tokens and signed-URL
// signatures live) and every listed secret from a message.
func redact(msg string, secrets []string) string {
	msg = urlQuery.ReplaceAllString(msg, "$1?REDACTED")
	for _, s := range secrets {
		if len(s) >= 4 {
			msg = strings.ReplaceAll(msg, s, "REDACTED")
		}
	}
	return msg
}
