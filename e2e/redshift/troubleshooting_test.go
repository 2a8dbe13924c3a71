package redshift_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift/redshifttest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// Each test here reproduces one row of the spec's troubleshooting table
// through the real library: the symptom as the runtime sees it (status and
// message, log lines) and what the table holds meanwhile.

// "Failed to connect to Redshift at start", with the connection string
// from the environment override instead of the file, as the spec
// recommends: the C host sets the variables before the library reads them.
// A refused password from the environment fails open() BAD_CONFIG without
// showing it; the right one, from the environment only, works. (The
// unreachable endpoint and the refused password themselves are in the
// suite: UnreachableEndpointIsRetry, RefusedPasswordIsBadConfig.)
func TestConnectionStringFromTheEnvironment(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	u, _ := url.Parse(w.emu.DSN(w.db.Name))
	u.User = url.UserPassword(u.User.Username(), "wrong-pw-0451xyz")
	wrongPassword := u.String()
	c := startConnector(t,
		hostclient.Env("PICOMQ_CONNECTORS_SINK_ORDERS_RS_PLUGIN_CONFIG_CONNECTION_STRING="+wrongPassword,
			"PICOMQ_CONNECTORS_SINK_FROM_ENV_PLUGIN_CONFIG_CONNECTION_STRING="+w.emu.DSN(w.db.Name)))

	// The file's value is a placeholder; the environment's wins.
	se := c.openErr("orders_rs", w.config(map[string]any{"connection_string": "postgres://placeholder@nowhere/x"}))
	if se.Code != hostclient.StatusBadConfig || !strings.HasPrefix(se.Message, "Failed to connect to Redshift: connection_string: ") ||
		!strings.Contains(se.Message, "password authentication failed") || !strings.Contains(se.Message, "SQLSTATE 28P01") {
		t.Errorf("wrong password: %v", se)
	}
	texts := []string{se.Message, c.host.Stderr()}
	for _, l := range c.host.Logs() {
		texts = append(texts, l.Message)
	}
	redshifttest.NoSecret(t, texts, "wrong-pw-0451xyz")

	// The right connection string, from the environment only, works.
	inst := c.open("from_env", w.config(map[string]any{"connection_string": "postgres://placeholder@nowhere/x", "target_table": "env"}))
	consume(t, inst, batch("orders", 0, 3))
	w.exactlyOnce("env", "orders", 0, 2)
}

// A password changed on the cluster after open() (a rotation) shows when
// the pool opens a new connection. consume cannot answer BAD_CONFIG, so the
// batch fails RETRY, without sending the refused login again, saying so; nothing lands, and once the connection string is right
// again the redelivered batch loads exactly once.
func TestPasswordChangedAfterOpen(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const rotated = "rotated-pw-7731qq"
	u, _ := url.Parse(w.emu.DSN(w.db.Name))
	original, _ := u.User.Password()
	inst := w.open("rotation", w.config(map[string]any{"target_table": "rotation", "max_retries": 3}))
	consume(t, inst, batch("orders", 0, 3))

	w.emu.SetPassword(rotated)
	// Every connection the pool already holds breaks at its next
	// statement, so the load has to log in again.
	drops := w.emu.DropOn(`(?i)^begin`, -1)
	err := inst.Consume(batch("orders", 3, 3))
	se := wantStatus(t, err, hostclient.StatusRetry, "Redshift connection failed", "password authentication failed",
		"SQLSTATE 28P01", "Redshift refused the user or password of connection_string")
	redshifttest.NoSecret(t, []string{se.Message}, rotated)
	if n := w.count("rotation"); n != 3 {
		t.Errorf("%d rows after the refused load, want the first batch's 3", n)
	}
	if drops.Hits() == 0 {
		t.Fatal("no pooled connection was dropped: the test proved nothing")
	}

	drops.Remove()
	w.emu.SetPassword(original)
	consume(t, inst, batch("orders", 3, 3))
	w.exactlyOnce("rotation", "orders", 0, 5)
}

// "Choosing to use aws_access_key_id and aws_secret_access_key then both
// MUST be provided": one of the static keys is missing or empty.
func TestOnlyOneStaticKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const msg = "Choosing to use aws_access_key_id and aws_secret_access_key then both MUST be provided"
	for _, keys := range []map[string]any{
		{"aws_secret_access_key": nil},
		{"aws_access_key_id": nil, "aws_secret_access_key": "s3cr3t-only-this-one"},
		{"aws_access_key_id": "", "aws_secret_access_key": "s3cr3t-only-this-one"},
		{"aws_secret_access_key": ""},
	} {
		se := w.openErr("one_key", w.config(keys))
		if se.Code != hostclient.StatusBadConfig || se.Message != msg {
			t.Errorf("%v: got %v, want BAD_CONFIG %q", keys, se, msg)
		}
		redshifttest.NoSecret(t, []string{se.Message, logText(w.host.Logs())}, "s3cr3t-only-this-one", w.svc.S3SecretKey)
	}
	if n := w.emu.CountStatements(`.`); n != 0 {
		t.Errorf("open connected before validating: %d statements", n)
	}
}

// "Redshift COPY failed": aws_iam_role is not attached to the cluster. The
// batch fails RETRY after one attempt (the error is permanent) with the
// cluster's message; the file is deleted and nothing is visible.
func TestRedshiftCopyFailed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, role := range []string{"arn:aws:iam::123456789012:role/NotAttached", "arn:aws:iam::123:role/Malformed"} {
		inst := w.open("copy_failed", w.config(map[string]any{"target_table": "cf", "aws_iam_role": role, "max_retries": 3}))
		w.emu.ResetStatements()
		err := inst.Consume(batch("orders", 0, 5))
		wantStatus(t, err, hostclient.StatusRetry, "Redshift COPY failed after 1 attempt: ERROR: ", "(SQLSTATE XX000)", role)
		if n := w.emu.CountStatements(`^COPY`); n != 1 {
			t.Errorf("%s: COPY sent %d times", role, n)
		}
		w.nothingVisible("cf", "")
	}
	// The cluster's own message for a role that is not attached.
	inst := w.open("copy_failed_msg", w.config(map[string]any{"target_table": "cf", "aws_iam_role": "arn:aws:iam::123456789012:role/NotAttached"}))
	wantStatus(t, inst.Consume(batch("orders", 0, 5)), hostclient.StatusRetry,
		"Redshift COPY failed after 1 attempt: ERROR: Not authorized to get credentials of role arn:aws:iam::123456789012:role/NotAttached (SQLSTATE XX000)")
}
