package delta_test

import (
	"flag"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta"
	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
)

var update = flag.Bool("update", false, "rewrite docs/delta-config.md from the Config declaration")

// TestConfigDocs keeps docs/delta-config.md generated from the Config tags.
func TestConfigDocs(t *testing.T) {
	schema, err := sdk.SchemaOf[delta.Config]()
	if err != nil {
		t.Fatal(err)
	}
	doc := "# Delta Lake sink configuration\n\n" +
		"<!-- Generated from plugins/delta/config.go. Do not edit: run\n" +
		"     go test ./plugins/delta -run TestConfigDocs -update -->\n\n" +
		"All keys go under `[plugin_config]`. Secret keys are redacted in describe(), logs, errors and metrics.\n" +
		"Any key can be overridden from the environment as `PICOMQ_CONNECTORS_SINK_<KEY>_PLUGIN_CONFIG_<FIELD>`.\n" +
		"Behaviour, replay and troubleshooting are in [delta.md](delta.md).\n\n" +
		schema.Markdown()
	sdktest.Golden(t, "../../docs/delta-config.md", doc, *update, "go test ./plugins/delta -run TestConfigDocs -update")
}
