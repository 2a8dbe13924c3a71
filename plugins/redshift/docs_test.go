package redshift_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift"
	"github.com/picomq/heavy-sinks/shared/sdk"
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
	want := configDoc(t)
	if *update {
		if err := os.WriteFile(configDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(configDocPath)
	if err != nil {
		t.Fatalf("%v\nGenerate it: go test ./plugins/redshift -run TestConfigDocs -update", err)
	}
	if string(got) != want {
		path, _ := filepath.Abs(configDocPath)
		t.Fatalf("%s is stale: it no longer matches the Config declaration.\n\n%s\nRegenerate it:\n\n    go test ./plugins/redshift -run TestConfigDocs -update\n",
			path, lineDiff(string(got), want))
	}
}

// lineDiff is a minimal diff: lines only in the file (-) and only in the
// generated text (+), in order.
func lineDiff(have, want string) string {
	a, b := strings.Split(have, "\n"), strings.Split(want, "\n")
	// Longest common subsequence table; the docs are small.
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(&out, "+ %s\n", b[j])
			j++
		default:
			fmt.Fprintf(&out, "- %s\n", a[i])
			i++
		}
	}
	return out.String()
}
