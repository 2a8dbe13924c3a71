package delta_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// The Azure case with a fake service's answers; the rest run on every
// store in deltatest's suite (suite_test.go).

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
