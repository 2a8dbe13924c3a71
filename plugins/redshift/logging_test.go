package redshift_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsemu"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

func TestVerboseLogging(t *testing.T) {
	r := newRig(t)
	hv, verbose := r.open("verbose", r.config(map[string]any{"target_table": "logged", "verbose_logging": true}))
	hq, quiet := r.open("quiet", r.config(map[string]any{"target_table": "logged"}))
	mustConsume(t, hv, batch("orders", 0, 3))
	mustConsume(t, hq, batch("orders", 10, 3))
	if !strings.Contains(verbose.String(), "INFO batch loaded topic=orders table=logged records=3 offsets=0..2 chunks=1 inserted=3 skipped_duplicates=0 duration=") {
		t.Errorf("verbose_logging = true logs no batch line at info:\n%s", verbose.String())
	}
	if strings.Contains(quiet.String(), "batch loaded") {
		t.Errorf("verbose_logging = false logged the batch at info:\n%s", quiet.String())
	}

	t.Setenv(sdk.LogLevelEnv, "debug")
	hd, debug := r.open("debug", r.config(map[string]any{"target_table": "logged"}))
	mustConsume(t, hd, batch("orders", 20, 3))
	if !strings.Contains(debug.String(), "DEBUG batch loaded topic=orders") {
		t.Errorf("no debug batch line:\n%s", debug.String())
	}
}

// Secrets never leave an instance: not in logs, not in errors, not in
// metrics, whatever goes wrong.
func TestSecretsStayInside(t *testing.T) {
	r := newRig(t)
	u, err := url.Parse(r.emu.DSN(r.db.Name))
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	secrets := []string{password, r.svc.S3SecretKey, r.svc.S3AccessKey}

	t.Setenv(sdk.LogLevelEnv, "debug")
	h, logs := r.open("secrets", r.config(map[string]any{"target_table": "sec", "verbose_logging": true, "max_retries": 2}))
	var texts []string
	mustConsume(t, h, batch("orders", 0, 3))
	r.emu.FailNext(`^COPY`, 2, &rsemu.Error{Code: "XX000", Message: "1023", Detail: "connection to " + r.emu.DSN(r.db.Name)})
	if err := sdk.Consume(h, batch("orders", 3, 3)); err != nil {
		texts = append(texts, err.Error())
	} else {
		t.Fatal("the load survived two failures with max_retries = 2")
	}
	raw, err := sdk.Metrics(h)
	if err != nil {
		t.Fatal(err)
	}
	texts = append(texts, string(raw), logs.String())
	if err := sdk.Close(h); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "[REDACTED]") {
		t.Fatalf("the test did not provoke any text with a secret in it:\n%s", all)
	}
	for _, s := range secrets {
		if strings.Contains(all, s) {
			t.Fatalf("secret %q leaked:\n%s", s, all)
		}
	}
}
