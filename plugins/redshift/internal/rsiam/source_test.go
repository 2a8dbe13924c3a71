package rsiam_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/redshift/internal/rsiam"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
)

// fakeAWS starts the emulator's IAM fake (the emulator itself never
// connects to its backend here) and points the SDK's default
// configuration at it through the standard environment.
func fakeAWS(t *testing.T) *rsemu.IAM {
	t.Helper()
	emu := rsemu.NewTest(t, rsemu.Config{BackendDSN: "postgres://u:p@127.0.0.1:1/none"})
	f := rsemu.NewIAMTest(t, emu)
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_REDSHIFT":            f.URL(),
		"AWS_ENDPOINT_URL_REDSHIFT_SERVERLESS": f.URL(),
		"AWS_ACCESS_KEY_ID":                    "AKIDRSIAMTEST",
		"AWS_SECRET_ACCESS_KEY":                "rsiam-test-secret",
		"AWS_CONFIG_FILE":                      "/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE":          "/dev/null",
		"AWS_EC2_METADATA_DISABLED":            "true",
		"AWS_MAX_ATTEMPTS":                     "1",
		"AWS_REGION":                           "",
	} {
		t.Setenv(k, v)
	}
	return f
}

func fetch(t *testing.T, tg rsiam.Target) (rsiam.Credentials, error) {
	t.Helper()
	src, err := rsiam.New(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	return src.Fetch(context.Background())
}

// Each target calls its action with its parameters, signed for its
// service and region, and returns what the service issued.
func TestFetch(t *testing.T) {
	f := fakeAWS(t)
	for _, tc := range []struct {
		name   string
		target rsiam.Target
		want   rsemu.IAMCall
	}{
		{"with IAM", rsiam.Target{Cluster: rsemu.IAMCluster, DbName: "dev", Duration: 15 * time.Minute, Region: "eu-west-1"},
			rsemu.IAMCall{Action: "GetClusterCredentialsWithIAM", Service: "redshift", Region: "eu-west-1", Cluster: rsemu.IAMCluster,
				DbName: "dev", Duration: 900, User: "IAM:" + rsemu.IAMIdentity}},
		{"db user", rsiam.Target{Cluster: rsemu.IAMCluster, DbUser: "loader", Duration: time.Hour, Region: "us-east-2"},
			rsemu.IAMCall{Action: "GetClusterCredentials", Service: "redshift", Region: "us-east-2", Cluster: rsemu.IAMCluster,
				DbUser: "loader", Duration: 3600, AutoCreate: "false", User: "loader"}},
		{"serverless", rsiam.Target{Workgroup: rsemu.IAMWorkgroup, DbName: "dev", Duration: 20 * time.Minute, Region: "eu-central-1"},
			rsemu.IAMCall{Action: "GetCredentials", Service: "redshift-serverless", Region: "eu-central-1", Workgroup: rsemu.IAMWorkgroup,
				DbName: "dev", Duration: 1200, User: "IAM:" + rsemu.IAMIdentity}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.Calls())
			cr, err := fetch(t, tc.target)
			if err != nil {
				t.Fatal(err)
			}
			calls := f.Calls()
			if len(calls) != before+1 {
				t.Fatalf("%d calls, want 1", len(calls)-before)
			}
			got := calls[len(calls)-1]
			if got.Password == "" || cr.Password != got.Password || cr.User != got.User || !cr.Expiration.Equal(got.Expiration) {
				t.Fatalf("credentials %v, want what was issued: %s until %s", cr, got.User, got.Expiration)
			}
			if left := time.Until(cr.Expiration); left < tc.target.Duration-5*time.Second || left > tc.target.Duration {
				t.Errorf("expiration in %s, want about %s", left, tc.target.Duration)
			}
			got.Password, got.Expiration, got.AccessKey, got.Status = "", time.Time{}, "", 0
			if got != tc.want {
				t.Errorf("call\n%+v, want\n%+v", got, tc.want)
			}
			if strings.Contains(cr.String(), cr.Password) {
				t.Errorf("String() shows the password: %s", cr)
			}
		})
	}
}

// Refused calls are permanent; throttling and server errors are not. No
// error text carries a password.
func TestFetchErrors(t *testing.T) {
	f := fakeAWS(t)
	cluster := rsiam.Target{Cluster: rsemu.IAMCluster, Duration: 15 * time.Minute, Region: "eu-west-1"}
	wg := rsiam.Target{Workgroup: rsemu.IAMWorkgroup, Duration: 15 * time.Minute, Region: "eu-west-1"}
	for _, tc := range []struct {
		name      string
		target    rsiam.Target
		status    int
		code      string
		permanent bool
	}{
		// A missing permission: a policy can be granted without a
		// configuration change.
		{"access denied", cluster, 403, "AccessDenied", false},
		{"access denied serverless", wg, 400, "AccessDeniedException", false},
		// Keys AWS does not know or whose signature does not match.
		{"unknown key", cluster, 403, "InvalidClientTokenId", true},
		{"bad signature serverless", wg, 400, "UnrecognizedClientException", true},
		{"throttled", cluster, 400, "Throttling", false},
		{"throttled serverless", wg, 400, "ThrottlingException", false},
		{"internal", cluster, 500, "InternalFailure", false},
		{"unavailable serverless", wg, 503, "ServiceUnavailableException", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.FailNext(1, tc.status, tc.code, "not today")
			_, err := fetch(t, tc.target)
			if err == nil || rsiam.IsPermanent(err) != tc.permanent {
				t.Fatalf("error %v, want permanent=%v", err, tc.permanent)
			}
			var e *rsiam.Error
			if !errors.As(err, &e) || e.Op != tc.target.Operation() || !strings.Contains(err.Error(), tc.code+": not today") {
				t.Errorf("error %q does not name %s and the service's code and message", err, tc.target.Operation())
			}
		})
	}
	t.Run("unknown cluster", func(t *testing.T) {
		_, err := fetch(t, rsiam.Target{Cluster: "nope", Duration: 15 * time.Minute, Region: "eu-west-1"})
		if !rsiam.IsPermanent(err) || !strings.Contains(err.Error(), "ClusterNotFound") {
			t.Fatalf("error %v, want a permanent ClusterNotFound", err)
		}
	})
	t.Run("unknown workgroup", func(t *testing.T) {
		_, err := fetch(t, rsiam.Target{Workgroup: "nope", Duration: 15 * time.Minute, Region: "eu-west-1"})
		if !rsiam.IsPermanent(err) || !strings.Contains(err.Error(), "ResourceNotFoundException") {
			t.Fatalf("error %v, want a permanent ResourceNotFoundException", err)
		}
	})
	t.Run("no answer", func(t *testing.T) {
		t.Setenv("AWS_ENDPOINT_URL_REDSHIFT", "http://127.0.0.1:1")
		_, err := fetch(t, cluster)
		if err == nil || rsiam.IsPermanent(err) {
			t.Fatalf("error %v, want a transient one", err)
		}
	})
	for _, c := range f.Calls() {
		if c.Password != "" {
			t.Errorf("a failed call issued credentials: %+v", c)
		}
	}
}

func TestNoRegion(t *testing.T) {
	fakeAWS(t)
	_, err := rsiam.New(context.Background(), rsiam.Target{Cluster: rsemu.IAMCluster, Duration: 15 * time.Minute})
	if !errors.Is(err, rsiam.ErrNoRegion) {
		t.Fatalf("error %v, want ErrNoRegion", err)
	}
}
