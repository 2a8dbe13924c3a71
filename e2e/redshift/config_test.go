package redshift_test

import (
	"net/url"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift/redshifttest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// The connection string with the password, injected by the host with
// setenv(3) after it loaded the library, is read at open: the file's wrong
// password fails, the environment's right one works, and once the host
// unsets it the file's applies again.
func TestConnectionStringSetAfterLoadIsRead(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	u, _ := url.Parse(w.emu.DSN(w.db.Name))
	u.User = url.UserPassword(u.User.Username(), "wrong-pw-in-file-0451")
	cfg := w.config(map[string]any{"connection_string": u.String(), "target_table": "env_orders"})
	const name = "PICOMQ_CONNECTORS_SINK_ORDERS_RS_PLUGIN_CONFIG_CONNECTION_STRING"

	se := w.openErr("orders_rs", cfg)
	texts := []string{se.Message}
	if err := w.host.Setenv(name, w.emu.DSN(w.db.Name)); err != nil {
		t.Fatal(err)
	}
	inst, err := w.lib.Open(definition("orders_rs", cfg))
	if err != nil {
		t.Fatalf("open with the connection string set by setenv after load: %v", err)
	}
	consume(t, inst, batch("orders", 0, 3))
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	w.exactlyOnce("env_orders", "orders", 0, 2)

	if err := w.host.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
	se2 := w.openErr("orders_rs", cfg)
	if se2.Code != se.Code {
		t.Errorf("after unsetenv: %v, want %v as before the setenv", se2, se.Code)
	}
	texts = append(texts, se2.Message, logText(w.host.Logs()), w.host.Stderr())
	redshifttest.NoSecret(t, texts, "wrong-pw-in-file-0451")
}

// A misspelt key is refused at open with the key meant, before any
// connection is made.
func TestUnknownKeyIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	se := w.openErr("typo", w.config(map[string]any{"batch_sise": 10}))
	if se.Code != hostclient.StatusBadConfig || se.Message != `plugin_config key "batch_sise" is not known to this plugin; did you mean "batch_size"?` {
		t.Errorf("got %v", se)
	}
	if n := w.emu.CountStatements(`.`); n != 0 {
		t.Errorf("open connected with an unknown key: %d statements", n)
	}
}
