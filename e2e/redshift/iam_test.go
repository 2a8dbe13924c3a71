package redshift_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/picomq/heavy-sinks/plugins/redshift/redshifttest"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// auth = "iam" through the real library: the sink gets temporary
// credentials from the AWS credential endpoints (the emulator's fake of
// them, found through the SDK's standard AWS_ENDPOINT_URL_* variables and
// signed with keys from the default chain, the environment here) and logs
// in to the emulator with them; the emulator accepts exactly the issued
// credentials until their expiry.

// iamWorld is a world whose connector finds the fake AWS endpoints and
// AWS keys in its environment, as a production host finds its role's.
func iamWorld(t *testing.T) (*world, *rsemu.IAM) {
	t.Helper()
	w := newWorld(t)
	f := rsemu.NewIAMTest(t, w.emu)
	w.connector = startConnector(t, hostclient.Env(
		"AWS_ENDPOINT_URL_REDSHIFT="+f.URL(),
		"AWS_ENDPOINT_URL_REDSHIFT_SERVERLESS="+f.URL(),
		"AWS_ACCESS_KEY_ID=AKIDIAMTEST",
		"AWS_SECRET_ACCESS_KEY=iam-test-aws-secret",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_REGION=", "AWS_PROFILE=",
		"PGPASSWORD=", "PGPASSFILE=/dev/null",
		"PICOMQ_SINK_LOG_LEVEL=debug"))
	return w, f
}

// noPasswordDSN is the emulator's URL for the world's database with a user
// and no password.
func (w *world) noPasswordDSN() string {
	u, _ := url.Parse(w.emu.DSN(w.db.Name))
	u.User = url.User("placeholder")
	return u.String()
}

// iamConfig is a working auth = "iam" configuration for the fake's cluster.
func (w *world) iamConfig(overrides map[string]any) map[string]any {
	cfg := w.config(map[string]any{
		"connection_string":      w.noPasswordDSN(),
		"auth":                   "iam",
		"iam_cluster_identifier": rsemu.IAMCluster,
		"iam_region":             "eu-west-1",
	})
	for k, v := range overrides {
		if v == nil {
			delete(cfg, k)
		} else {
			cfg[k] = v
		}
	}
	return cfg
}

// noIssuedPassword fails the test if a password the fake issued appears in
// an error, a log line or the host's stderr.
func noIssuedPassword(t *testing.T, w *world, f *rsemu.IAM, errs ...string) {
	t.Helper()
	texts := append(errs, w.host.Stderr())
	for _, l := range w.host.Logs() {
		texts = append(texts, l.Message)
	}
	var issued []string
	for _, c := range f.Calls() {
		if c.Password != "" {
			issued = append(issued, c.Password)
		}
	}
	redshifttest.NoSecret(t, texts, issued...)
}

// Each way to name the cluster calls its action, with the connection
// string's database, the configured duration, signed for the region; the
// data lands, and the issued password is nowhere in the logs.
func TestIAMAuthLoads(t *testing.T) {
	t.Parallel()
	w, f := iamWorld(t)
	for _, tc := range []struct {
		name string
		cfg  map[string]any
		want rsemu.IAMCall
	}{
		{"cluster", map[string]any{"iam_duration": "20m"},
			rsemu.IAMCall{Action: "GetClusterCredentialsWithIAM", Service: "redshift", Region: "eu-west-1",
				Cluster: rsemu.IAMCluster, Duration: 1200, User: "IAM:" + rsemu.IAMIdentity}},
		{"db_user", map[string]any{"iam_db_user": "loader", "iam_region": nil, "aws_region": "us-west-2"},
			rsemu.IAMCall{Action: "GetClusterCredentials", Service: "redshift", Region: "us-west-2",
				Cluster: rsemu.IAMCluster, DbUser: "loader", AutoCreate: "false", Duration: 900, User: "loader"}},
		{"serverless", map[string]any{"iam_cluster_identifier": nil, "iam_workgroup_name": rsemu.IAMWorkgroup},
			rsemu.IAMCall{Action: "GetCredentials", Service: "redshift-serverless", Region: "eu-west-1",
				Workgroup: rsemu.IAMWorkgroup, Duration: 900, User: "IAM:" + rsemu.IAMIdentity}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.Calls())
			inst := w.open("iam_"+tc.name, w.iamConfig(mergeMaps(tc.cfg, map[string]any{"target_table": "iam_" + tc.name})))
			consume(t, inst, batch("orders", 0, 5))
			consume(t, inst, batch("orders", 5, 5))
			w.exactlyOnce("iam_"+tc.name, "orders", 0, 9)
			calls := f.Calls()[before:]
			if len(calls) != 1 {
				t.Fatalf("%d credential calls, want 1 (cached for the credentials' lifetime): %+v", len(calls), calls)
			}
			got := calls[0]
			got.Password, got.Expiration, got.Status = "", time.Time{}, 0
			tc.want.AccessKey, tc.want.DbName = "AKIDIAMTEST", w.db.Name
			if got != tc.want {
				t.Errorf("call\n%+v, want\n%+v", got, tc.want)
			}
		})
	}
	noIssuedPassword(t, w, f)
	if !strings.Contains(logText(w.host.Logs()), "IAM credentials for Redshift fetched") {
		t.Errorf("no debug line for the fetch: the password check above looked at no fetch\n%s", logText(w.host.Logs()))
	}
}

func mergeMaps(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for _, m := range []map[string]any{a, b} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// Credentials that expire: a connection open before the expiry keeps
// working without a new call; the expired password is refused at login;
// the next new connection (the emulator drops the pooled one) gets fresh
// credentials and the batch loads.
func TestIAMCredentialsRefreshedAfterExpiry(t *testing.T) {
	t.Parallel()
	w, f := iamWorld(t)
	const life = 3 * time.Second
	f.SetLifetime(life)
	inst := w.open("iam_expiry", w.iamConfig(map[string]any{"target_table": "iam_expiry", "max_connections": 1}))
	first := f.Calls()[0]
	consume(t, inst, batch("orders", 0, 3))

	time.Sleep(time.Until(first.Expiration) + 200*time.Millisecond)
	// The pooled connection logged in before the expiry: still fine.
	consume(t, inst, batch("orders", 3, 3))
	if n := f.Issued(); n != 1 {
		t.Fatalf("%d credentials issued with the first connection still open, want 1", n)
	}
	// The emulator, as Redshift, refuses the expired password.
	cfg, err := pgx.ParseConfig(w.emu.DSN(w.db.Name))
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Password = first.User, first.Password
	if c, err := pgx.ConnectConfig(w.ctx, cfg); err == nil {
		c.Close(context.Background())
		t.Fatal("the expired credentials were accepted: the test proves nothing")
	} else if !strings.Contains(err.Error(), "28P01") {
		t.Fatalf("login with the expired credentials: %v, want 28P01", err)
	}

	drop := w.emu.DropOn(`(?i)^begin`, 1)
	consume(t, inst, batch("orders", 6, 3))
	if drop.Hits() != 1 {
		t.Fatal("the pooled connection was not dropped")
	}
	if n := f.Issued(); n != 2 {
		t.Fatalf("%d credentials issued, want 2 (the new connection needed fresh ones)", n)
	}
	w.exactlyOnce("iam_expiry", "orders", 0, 8)

	// The AWS call failing when a new connection needs credentials: the
	// batch fails RETRY, saying so, and loads once AWS answers again.
	time.Sleep(time.Until(f.Calls()[len(f.Calls())-1].Expiration) + 200*time.Millisecond)
	f.FailNext(1, 403, "AccessDenied", "User is not authorized to perform: redshift:GetClusterCredentialsWithIAM")
	w.emu.DropOn(`(?i)^begin`, 1)
	err = inst.Consume(batch("orders", 9, 3))
	se := wantStatus(t, err, hostclient.StatusRetry, "redshift:GetClusterCredentialsWithIAM failed: AccessDenied", "cluster "+rsemu.IAMCluster)
	consume(t, inst, batch("orders", 9, 3))
	w.exactlyOnce("iam_expiry", "orders", 0, 11)
	noIssuedPassword(t, w, f, se.Message)
}

// What open() says when IAM authentication cannot work: keys AWS does not
// know, an unknown cluster or workgroup and bad keys are BAD_CONFIG (they
// fail the same every time); a missing permission, throttling and server
// errors RETRY.
func TestIAMOpenErrors(t *testing.T) {
	t.Parallel()
	w, f := iamWorld(t)
	open := func(name string, overrides map[string]any) *hostclient.StatusError {
		t.Helper()
		return w.openErr(name, w.iamConfig(overrides))
	}
	for _, tc := range []struct {
		name      string
		overrides map[string]any
		fault     []any // status, code: the next call fails so
		code      hostclient.Status
		contains  []string
	}{
		{"password in the string", map[string]any{"connection_string": w.emu.DSN(w.db.Name)}, nil,
			hostclient.StatusBadConfig, []string{"connection_string must carry no password"}},
		// A missing permission: the policy can be granted without a
		// configuration change, so the runtime opens again later.
		{"access denied", nil, []any{403, "AccessDenied"},
			hostclient.StatusRetry, []string{"Failed to get IAM credentials for Redshift (cluster rsemu, region eu-west-1)", "AccessDenied: no"}},
		// Keys AWS does not know: the credentials are wrong.
		{"unknown key", nil, []any{403, "InvalidClientTokenId"},
			hostclient.StatusBadConfig, []string{"Failed to get IAM credentials for Redshift (cluster rsemu, region eu-west-1)", "InvalidClientTokenId: no"}},
		{"unknown cluster", map[string]any{"iam_cluster_identifier": "other"}, nil,
			hostclient.StatusBadConfig, []string{"ClusterNotFound"}},
		{"unknown workgroup", map[string]any{"iam_cluster_identifier": nil, "iam_workgroup_name": "other"}, nil,
			hostclient.StatusBadConfig, []string{"redshift-serverless:GetCredentials failed: ResourceNotFoundException"}},
		{"throttled", nil, []any{400, "Throttling"},
			hostclient.StatusRetry, []string{"Throttling: no"}},
		{"server error", nil, []any{500, "InternalFailure"},
			hostclient.StatusRetry, []string{"InternalFailure: no"}},
		{"no cluster", map[string]any{"iam_cluster_identifier": nil}, nil,
			hostclient.StatusBadConfig, []string{"needs iam_cluster_identifier (a provisioned cluster) or iam_workgroup_name"}},
		{"both", map[string]any{"iam_workgroup_name": "wg"}, nil,
			hostclient.StatusBadConfig, []string{"set only one of iam_cluster_identifier and iam_workgroup_name"}},
		{"short duration", map[string]any{"iam_duration": "5m"}, nil,
			hostclient.StatusBadConfig, []string{"iam_duration must be whole seconds from 15m0s to 1h0m0s"}},
		{"iam key with password auth", map[string]any{"auth": nil, "connection_string": w.emu.DSN(w.db.Name)}, nil,
			hostclient.StatusBadConfig, []string{`iam_cluster_identifier applies only with auth = "iam"`}},
		{"unknown auth", map[string]any{"auth": "kerberos"}, nil,
			hostclient.StatusBadConfig, []string{`auth must be "password" or "iam", got "kerberos"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fault != nil {
				// The SDK retries throttling and 5xx a few times itself.
				f.FailNext(5, tc.fault[0].(int), tc.fault[1].(string), "no")
				defer f.ClearFaults()
			}
			se := open(strings.ReplaceAll(tc.name, " ", "_"), tc.overrides)
			wantStatus(t, se, tc.code, tc.contains...)
		})
	}
	if n := f.Issued(); n != 0 {
		t.Errorf("%d credentials issued by failed opens", n)
	}
}

// auth = "iam" where the AWS default chain finds no credentials at all (no
// keys, no files, no web identity token, no container endpoint, an
// instance metadata endpoint that refuses connections, as in a pod whose
// identity is not there yet): RETRY at open, since the environment may
// still change without a config change, with a message that says what the
// chain tried and that the runtime opens the sink again later.
func TestIAMNoCredentialsIsRetry(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	f := rsemu.NewIAMTest(t, w.emu)
	w.connector = startConnector(t, hostclient.Env(
		"AWS_ENDPOINT_URL_REDSHIFT="+f.URL(), "AWS_ENDPOINT_URL_REDSHIFT_SERVERLESS="+f.URL(),
		"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_REGION=",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_WEB_IDENTITY_TOKEN_FILE=", "AWS_ROLE_ARN=",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI=", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=",
		"AWS_EC2_METADATA_DISABLED=", "AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:1",
		"PGPASSWORD=", "PGPASSFILE=/dev/null"))
	start := time.Now()
	se := w.openErr("iam_nocreds", w.iamConfig(nil))
	wantStatus(t, se, hostclient.StatusRetry, "Failed to get IAM credentials for Redshift (cluster rsemu, region eu-west-1)",
		"the AWS default credential chain found no credentials", "AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "instance metadata", "the runtime opens the sink again later")
	if took := time.Since(start); took > time.Minute {
		t.Errorf("open took %s", took)
	}
	if n := len(f.Calls()); n != 0 {
		t.Errorf("%d calls reached the credentials endpoint unsigned", n)
	}
}
