package delta_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/testenv/services"
)

// The MinIO end-to-end suite (s3_test.go) on Azure Blob Storage, against
// Azurite: delta-rs creates the tables and reads them back, the sink writes
// them through the C host.

// storeVersions is the number of versions delta-rs lists for uri.
func storeVersions(t *testing.T, uri string) int {
	t.Helper()
	out := py(t, `
dt = DeltaTable(uri, storage_options=opts)
print(len(dt.history()))
`, uri)
	var n int
	if _, err := fmt.Sscan(out, &n); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return n
}

// noSecret fails when secret shows in the instance's logs or metrics.
func noSecret(t *testing.T, inst *hostclient.Instance, secret string) {
	t.Helper()
	for _, l := range inst.Logs() {
		if strings.Contains(l.Message, secret) || strings.Contains(fmt.Sprint(l), secret) {
			t.Fatalf("secret in logs: %v", l)
		}
	}
	m, _ := inst.Metrics()
	if strings.Contains(m, secret) {
		t.Fatalf("secret in metrics: %s", m)
	}
}

// partitionDirs returns the partition directory of each data file named.
func partitionDirs(names []string) string {
	var dirs []string
	for _, k := range names {
		if strings.HasSuffix(k, ".snappy.parquet") {
			dirs = append(dirs, k[:strings.Index(k, "/")])
		}
	}
	return fmt.Sprint(dirs)
}

// azurite points the delta-rs helper scripts at the test Azurite and returns
// the quick-start plugin_config for container c.
func azurite(t *testing.T, svc services.Services, c string) map[string]any {
	t.Helper()
	opts, _ := json.Marshal(map[string]string{
		"azure_storage_account_name": svc.AzureAccount, "azure_storage_account_key": svc.AzureKey,
		"azure_storage_endpoint": svc.AzureEndpoint, "azure_allow_http": "true",
	})
	t.Setenv("PICOMQ_DELTA_STORAGE_OPTIONS", string(opts))
	return map[string]any{
		"storage_backend_type":       "azure",
		"azure_storage_account_name": svc.AzureAccount,
		"azure_container_name":       c,
		"azure_storage_account_key":  svc.AzureKey,
		"azure_storage_endpoint_url": svc.AzureEndpoint,
	}
}

func azureBlobs(t *testing.T, svc services.Services, c, prefix string) []string {
	t.Helper()
	var names []string
	pager := svc.AzureContainerClient(t, c).NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			names = append(names, strings.TrimPrefix(*b.Name, prefix))
		}
	}
	return names
}

// The spec's quick start on Azure: templated URIs, partitioned tables,
// replays that add nothing, the account key given only through the
// environment override and never shown.
func TestAzureQuickStart(t *testing.T) {
	svc := services.RequireAzure(t)
	c := svc.NewAzureContainer(t)
	cfg := azurite(t, svc, c)
	for _, region := range []string{"eu", "us"} {
		py(t, createOrders, fmt.Sprintf("az://%s/orders/%s", c, region))
	}
	delete(cfg, "azure_storage_account_key")
	h := newHarness(t, hostclient.Env("PICOMQ_CONNECTORS_SINK_ORDERS_DELTA_PLUGIN_CONFIG_AZURE_STORAGE_ACCOUNT_KEY="+svc.AzureKey))
	inst := h.open("orders_delta", with(cfg, "table_uri", "az://"+c+"/orders/{topic_segment[-1]}"))
	for n := range 3 {
		consume(t, inst, jsonBatch("orders.eu", uint64(n*2),
			fmt.Sprintf(`{"id":%d,"customer":"c","created_at":"2026-09-03T21:15:04Z","region":"eu"}`, n*2),
			fmt.Sprintf(`{"id":%d,"customer":"c","created_at":"2026-09-03T21:15:04Z","region":"north"}`, n*2+1)))
	}
	consume(t, inst, jsonBatch("orders.us", 0, `{"id":100,"region":"us"}`))
	// Replays change nothing.
	consume(t, inst, jsonBatch("orders.eu", 4, `{"id":4,"region":"eu"}`, `{"id":5,"region":"north"}`))

	eu := readRows(t, "az://"+c+"/orders/eu", "id")
	if len(eu) != 6 || eu[5]["id"] != 5.0 || eu[5]["region"] != "north" || eu[0]["created_at"] != "2026-09-03T21:15:04+00:00" {
		t.Fatalf("eu rows %v", eu)
	}
	if us := readRows(t, "az://"+c+"/orders/us", "id"); len(us) != 1 {
		t.Fatalf("us rows %v", us)
	}
	if n := storeVersions(t, "az://"+c+"/orders/eu"); n != 4 {
		t.Fatalf("%d versions", n)
	}
	// Partition directories and data files are where the spec says.
	if got := partitionDirs(azureBlobs(t, svc, c, "orders/eu/")); got != "[region=eu region=eu region=eu region=north region=north region=north]" {
		t.Fatalf("data files %v", got)
	}
	noSecret(t, inst, svc.AzureKey)
}

// A SAS token instead of the account key, and an abfss URI naming the same
// container.
func TestAzureSASTokenAndABFSSURI(t *testing.T) {
	svc := services.RequireAzure(t)
	c := svc.NewAzureContainer(t)
	cfg := azurite(t, svc, c)
	uri := "az://" + c + "/events"
	py(t, createEvents, uri)
	sas := svc.AzureContainerSAS(t, c)
	delete(cfg, "azure_storage_account_key")
	cfg["azure_storage_sas_token"] = "?" + sas
	h := newHarness(t)
	inst := h.open("ev", with(cfg, "table_uri", fmt.Sprintf("abfss://%s@%s.dfs.core.windows.net/events", c, svc.AzureAccount)))
	consume(t, inst, events("t", 0, 3))
	consume(t, inst, events("t", 0, 3))
	consume(t, inst, events("t", 3, 2))
	wantIDs(t, uri, "0,1,2,3,4")
	noSecret(t, inst, sas)
	noSecret(t, inst, strings.Split(strings.SplitAfter(sas, "sig=")[1], "&")[0])
}

func TestAzureConcurrentWritersLoseNothing(t *testing.T) {
	svc := services.RequireAzure(t)
	c := svc.NewAzureContainer(t)
	cfg := azurite(t, svc, c)
	uri := "az://" + c + "/events"
	py(t, createEvents, uri)
	const writers, batches, per = 3, 8, 5
	wantIDs(t, uri, writeConcurrently(t, with(cfg, "table_uri", uri), writers, batches, per))
	if n := storeVersions(t, uri); n != 1+writers*batches {
		t.Fatalf("%d versions, want %d", n, 1+writers*batches)
	}
}

// An account key Azure refuses as an authentication failure (403
// AuthenticationFailed, what the service answers a wrong key; Azurite says
// AuthorizationFailure instead, so a fake answers here) is BAD_CONFIG at
// open; a 403 for a missing permission (AuthorizationPermissionMismatch)
// stays RETRY: a role assignment comes, and propagates, without a
// configuration change.
func TestAzureRefusedKeyIsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		code   string
		status hostclient.Status
	}{{"AuthenticationFailed", hostclient.StatusBadConfig}, {"AuthorizationPermissionMismatch", hostclient.StatusRetry}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("x-ms-error-code", tc.code)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>%s</Code><Message>no</Message></Error>`, tc.code)
		}))
		err := newHarness(t).openErr("m", map[string]any{"table_uri": "az://c/events", "storage_backend_type": "azure",
			"azure_storage_account_name": "acct", "azure_container_name": "c", "azure_storage_endpoint_url": srv.URL + "/acct",
			"azure_storage_account_key": "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleQ=="})
		srv.Close()
		wantStatus(t, err, tc.status, "Failed to load Delta table az://c/events", "HTTP 403 "+tc.code)
	}
}

func TestAzureMissingTableAndBadCredentials(t *testing.T) {
	svc := services.RequireAzure(t)
	c := svc.NewAzureContainer(t)
	cfg := azurite(t, svc, c)
	h := newHarness(t)
	err := h.openErr("m", with(cfg, "table_uri", "az://"+c+"/none"))
	wantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table az://"+c+"/none")

	uri := "az://" + c + "/events"
	py(t, createEvents, uri)
	const wrongKey = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleQ=="
	err = h.openErr("m", with(cfg, "table_uri", uri, "azure_storage_account_key", wrongKey))
	wantStatus(t, err, hostclient.StatusRetry, "Failed to load Delta table", "HTTP 403")
	if strings.Contains(err.Error(), wrongKey) || strings.Contains(err.Error(), svc.AzureKey) {
		t.Fatalf("secret leaked: %v", err)
	}

	// A container that does not exist: the store answered no, as for a
	// missing table.
	err = h.openErr("m", with(cfg, "table_uri", "az://picomq-no-such-container/events", "azure_container_name", "picomq-no-such-container"))
	wantStatus(t, err, hostclient.StatusBadConfig, "Failed to load Delta table az://picomq-no-such-container/events", `container "picomq-no-such-container" does not exist`)

	// The URI's container must be azure_container_name: at open for a
	// static URI, on the batch for a templated one.
	err = h.openErr("m", with(cfg, "table_uri", "az://other/events"))
	wantStatus(t, err, hostclient.StatusBadConfig, "Invalid table URI", `container "other" differs from azure_container_name "`+c+`"`)
	inst := h.open("m", with(cfg, "table_uri", "az://{topic}/events"))
	wantStatus(t, inst.Consume(events("other", 0, 1)), hostclient.StatusFatal, "Invalid table URI", `container "other" differs`)
	consume(t, inst, events(c, 0, 1))
	wantIDs(t, uri, "0")

	// Both credentials, or neither: the spec's message.
	err = h.openErr("m", with(cfg, "table_uri", uri, "azure_storage_sas_token", "sv=1&sig=x"))
	wantStatus(t, err, hostclient.StatusBadConfig, "Azure backend requires exactly one of 'azure_storage_account_key' or 'azure_storage_sas_token'")
}
