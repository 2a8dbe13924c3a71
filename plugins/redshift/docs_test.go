package redshift_test

import (
	"flag"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift"
	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
)

var update = flag.Bool("update", false, "rewrite docs/redshift-config.md from the Config declaration")

const configDocPath = "../../docs/redshift-config.md"

// configDoc is docs/redshift-config.md: a fixed header and the table
// generated from the Config struct tags.
func configDoc(t *testing.T) string {
	t.Helper()
	schema, err := sdk.SchemaOf[redshift.Config]()
	if err != nil {
		t.Fatal(err)
	}
	return "# Redshift sink configuration\n\n" +
		"<!-- Generated from plugins/redshift/config.go. Do not edit: run\n" +
		"     go test ./plugins/redshift -run TestConfigDocs -update -->\n\n" +
		"All keys go under `[plugin_config]`. Secret keys are redacted in describe(), logs, errors and metrics.\n" +
		"Any key can be overridden from the environment as `PICOMQ_CONNECTORS_SINK_<KEY>_PLUGIN_CONFIG_<FIELD>`.\n" +
		"Behaviour, replay and the multi-writer guarantees are in [redshift.md](redshift.md).\n\n" +
		schema.Markdown()
}

func TestConfigDocs(t *testing.T) {
	sdktest.Golden(t, configDocPath, configDoc(t), *update, "go test ./plugins/redshift -run TestConfigDocs -update")
}
