package objstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

func azureOptions(svc services.Services, container string) objstore.Options {
	return objstore.Options{Azure: objstore.AzureOptions{Account: svc.AzureAccount, Container: container,
		AccountKey: svc.AzureKey, Endpoint: svc.AzureEndpoint}}
}

// The local store's contract against Azurite: a conditional Put Blob answers
// 409 for a taken version, exactly one racer wins, listing starts after
// startAfter.
func TestAzureStoreContract(t *testing.T) {
	svc := services.RequireAzure(t)
	c := svc.NewAzureContainer(t)
	s, err := openURI(context.Background(), "az://"+c+"/tables/t1", azureOptions(svc, c))
	if err != nil {
		t.Fatal(err)
	}
	storeContract(t, s)
	if s.URI() != "az://"+c+"/tables/t1" {
		t.Errorf("URI %s", s.URI())
	}
}

// The same with a SAS token instead of the account key.
func TestAzureStoreContractWithSAS(t *testing.T) {
	svc := services.RequireAzure(t)
	c := svc.NewAzureContainer(t)
	opts := azureOptions(svc, c)
	opts.Azure.AccountKey, opts.Azure.SASToken = "", "?"+svc.AzureContainerSAS(t, c)
	s, err := openURI(context.Background(), "az://"+c+"/t", opts)
	if err != nil {
		t.Fatal(err)
	}
	storeContract(t, s)
}

// An abfss URI names the container and the account; with an endpoint set
// (Azurite) it is used as is.
func TestAzureABFSSURI(t *testing.T) {
	svc := services.RequireAzure(t)
	c := svc.NewAzureContainer(t)
	ctx := context.Background()
	uri := fmt.Sprintf("abfss://%s@%s.dfs.core.windows.net/lake/t", c, svc.AzureAccount)
	s, err := openURI(ctx, uri, azureOptions(svc, c))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	az, _ := openURI(ctx, "az://"+c+"/lake/t", azureOptions(svc, c))
	if got, err := az.Get(ctx, "_delta_log/00000000000000000000.json"); err != nil || string(got) != "{}" {
		t.Fatalf("same blob through az://: %q %v", got, err)
	}
}

// Listing after a name in a long log returns exactly the later names, in
// order, including ones that are not version files, whatever page size.
func TestAzureListAfter(t *testing.T) {
	svc := services.RequireAzure(t)
	c := svc.NewAzureContainer(t)
	ctx := context.Background()
	s, err := openURI(ctx, "az://"+c+"/t", azureOptions(svc, c))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for v := range 30 {
		p := fmt.Sprintf("_delta_log/%020d.json", v)
		if err := s.Put(ctx, p, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if v > 17 {
			want = append(want, p)
		}
	}
	for _, p := range []string{"_delta_log/00000000000000000017.checkpoint.parquet", "_delta_log/_last_checkpoint", "_delta_log0", "other/x"} {
		if err := s.Put(ctx, p, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, "_delta_log/_last_checkpoint")
	got, err := s.List(ctx, "_delta_log/", "_delta_log/00000000000000000017.json")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range got {
		names = append(names, f.Path)
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("list after v17:\n got %v\nwant %v", names, want)
	}
	// startAfter before the prefix lists the whole prefix; after it, nothing.
	if got, _ := s.List(ctx, "_delta_log/", "_a"); len(got) != 32 {
		t.Fatalf("startAfter before the prefix: %d", len(got))
	}
	if got, _ := s.List(ctx, "_delta_log/", "_delta_log/~"); len(got) != 0 {
		t.Fatalf("startAfter past the prefix: %v", got)
	}
}

func TestAzureErrorsMapToSentinels(t *testing.T) {
	svc := services.RequireAzure(t)
	ctx := context.Background()
	missing, err := openURI(ctx, "az://no-such-container-picomq/t", azureOptions(svc, "no-such-container-picomq"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := missing.Get(ctx, "_delta_log/x.json"); !errors.Is(err, deltalog.ErrNotFound) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("get from a missing container: %v", err)
	}
	if err := missing.Delete(ctx, "x"); err != nil {
		t.Fatalf("delete in a missing container: %v", err)
	}

	c := svc.NewAzureContainer(t)
	opts := azureOptions(svc, c)
	opts.Azure.AccountKey = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleQ=="
	bad, err := openURI(ctx, "az://"+c+"/t", opts)
	if err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"list": func() error { _, err := bad.List(ctx, "_delta_log/", ""); return err }(),
		"put":  bad.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("{}")),
	} {
		if err == nil || errors.Is(err, deltalog.ErrNotFound) || errors.Is(err, deltalog.ErrAlreadyExists) || deltalog.IsTransient(err) {
			t.Fatalf("%s with a wrong key: %v", name, err)
		}
		if !strings.Contains(err.Error(), "HTTP 403") || strings.Contains(err.Error(), opts.Azure.AccountKey) {
			t.Fatalf("%s with a wrong key: %v", name, err)
		}
	}

	// A SAS without the write permission: not transient either.
	opts = azureOptions(svc, c)
	sas, _ := url.ParseQuery(svc.AzureContainerSAS(t, c))
	sig := sas.Get("sig")
	sas.Set("sig", "AAAA"+sig[4:])
	opts.Azure.AccountKey, opts.Azure.SASToken = "", sas.Encode()
	forged, _ := openURI(ctx, "az://"+c+"/t", opts)
	if _, err := forged.Get(ctx, "x"); err == nil || deltalog.IsTransient(err) || errors.Is(err, deltalog.ErrNotFound) {
		t.Fatalf("forged SAS: %v", err)
	}

	// Unreachable: transient, and the SAS (which the SDK puts in the request
	// URL) is not in the message.
	opts = azureOptions(svc, c)
	opts.Azure.AccountKey, opts.Azure.SASToken = "", svc.AzureContainerSAS(t, c)
	opts.Azure.Endpoint = "http://127.0.0.1:1/devstoreaccount1"
	down, _ := openURI(ctx, "az://"+c+"/t", opts)
	_, err = down.List(ctx, "_delta_log/", "")
	if !deltalog.IsTransient(err) {
		t.Fatalf("unreachable store: %v", err)
	}
	q, _ := url.ParseQuery(opts.Azure.SASToken)
	sig = q.Get("sig")
	for _, secret := range []string{opts.Azure.SASToken, sig, url.QueryEscape(sig)} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("SAS token in %q", err)
		}
	}
	err = down.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("{}"))
	if !deltalog.IsTransient(err) || strings.Contains(err.Error(), sig) {
		t.Fatalf("unreachable store: %v", err)
	}
}

func TestAzureURIsAndOptions(t *testing.T) {
	ctx := context.Background()
	opts := objstore.Options{Azure: objstore.AzureOptions{Account: "acct", Container: "lake", AccountKey: "a2V5"}}
	for uri, want := range map[string]string{
		"az://other/t":                          `container "other" differs from Azure container "lake"`,
		"az:///t":                               "az:// URIs name a container",
		"az://u@lake/t":                         "az:// URIs name a container",
		"abfss://lake@x.dfs.core.windows.net/t": `account "x" differs from Azure account "acct"`,
		"abfss://x.dfs.core.windows.net/t":      "abfs URIs name a container and an account",
	} {
		_, err := openURI(ctx, uri, opts)
		if err == nil || !containsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", uri, err, want)
		}
	}
	if _, err := openURI(ctx, "az://lake/t", objstore.Options{}); err == nil || !containsInvalid(err) || !strings.Contains(err.Error(), `backend = "azure"`) {
		t.Errorf("az:// without azure options: %v", err)
	}
	for uri, wantURI := range map[string]string{
		"az://lake/a/b/": "az://lake/a/b",
		"azure://lake/t": "az://lake/t",
		"abfss://lake@acct.dfs.core.windows.net/t":  "az://lake/t",
		"abfs://lake@ACCT.dfs.core.windows.net/x/y": "az://lake/x/y",
	} {
		s, err := openURI(ctx, uri, opts)
		if err != nil || s.URI() != wantURI {
			t.Errorf("%s: %v %v, want %s", uri, s, err, wantURI)
		}
	}
	bad := opts
	bad.Backend = objstore.BackendAzure
	bad.Azure.AccountKey = "not base64 at all: secret-material"
	if _, err := openURI(ctx, "az://lake/t", bad); err == nil || strings.Contains(err.Error(), "secret-material") {
		t.Errorf("undecodable key: %v", err)
	}
	for _, ep := range []string{"ftp://x", "http://x/acct?sv=1&sig=secret", "x"} {
		withEndpoint := opts
		withEndpoint.Backend, withEndpoint.Azure.Endpoint = objstore.BackendAzure, ep
		if err := withEndpoint.Validate(); err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("endpoint %s: %v", ep, err)
		}
	}
}

// A service that refuses startFrom (HTTP 400) is asked again without it,
// and never again with it; one that ignores it is filtered client-side.
func TestAzureListWithoutStartFrom(t *testing.T) {
	for _, refuse := range []bool{true, false} {
		var withStartFrom, requests atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			if r.URL.Query().Has("startfrom") || r.URL.Query().Has("startFrom") {
				withStartFrom.Add(1)
				if refuse {
					w.Header().Set("x-ms-error-code", "InvalidQueryParameterValue")
					w.WriteHeader(http.StatusBadRequest)
					return
				}
			}
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprint(w, `<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="x" ContainerName="c"><Blobs>`)
			for _, name := range []string{"t/_delta_log/00000000000000000000.json", "t/_delta_log/00000000000000000001.json", "t/_delta_log/00000000000000000002.json"} {
				fmt.Fprintf(w, `<Blob><Name>%s</Name><Properties><Last-Modified>Sun, 29 Nov 2026 12:00:00 GMT</Last-Modified><Content-Length>7</Content-Length></Properties></Blob>`, name)
			}
			fmt.Fprint(w, `</Blobs><NextMarker/></EnumerationResults>`)
		}))
		s, err := openURI(context.Background(), "az://c/t", objstore.Options{Azure: objstore.AzureOptions{
			Account: "acct", Container: "c", AccountKey: "a2V5", Endpoint: srv.URL + "/acct"}})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			got, err := s.List(context.Background(), "_delta_log/", "_delta_log/00000000000000000000.json")
			if err != nil || len(got) != 2 || got[0].Path != "_delta_log/00000000000000000001.json" || got[1].Size != 7 {
				t.Fatalf("refuse=%v: %+v %v", refuse, got, err)
			}
		}
		if want := map[bool]int32{true: 1, false: 2}[refuse]; withStartFrom.Load() != want {
			t.Errorf("refuse=%v: %d requests with startFrom, want %d (of %d)", refuse, withStartFrom.Load(), want, requests.Load())
		}
		srv.Close()
	}
}
