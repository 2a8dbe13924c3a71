package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A binary-format block whose format this build does not decode is
// refused at start (exit 2), naming the file, the block and the key,
// before any plugin host starts: its bytes never reach a plugin as they
// are. (The format packages fill formats; until then every such block
// takes this path.)
func TestBinarySchemaWithoutFormatRefused(t *testing.T) {
	if len(formats) != 0 {
		t.Skip("this build decodes formats; connect/decode/build's tests cover the refusal")
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "libx.so")
	os.WriteFile(lib, nil, 0o644) // found, never loaded
	def := filepath.Join(dir, "bin.toml")
	os.WriteFile(def, []byte("type = \"sink\"\nkey = \"k\"\npath = \""+lib+"\"\n[[topics]]\ntopics = [\"a\"]\nschema = \"avro\"\navro_schema_json = '\"string\"'\n"), 0o644)
	logs := captured(t)
	if code := run([]string{"--log-format", "json", "--host", "/nonexistent/picomq-host", def}); code != exitUsage {
		t.Errorf("exit code %d, want %d", code, exitUsage)
	}
	found := false
	for _, l := range lines(t, logs.String()) {
		if err, _ := l["err"].(string); l["event"] == "startup_failed" &&
			err == def+`: topics[1].schema: this build of picomq-connect does not decode schema "avro" from a schema file` {
			found = true
		}
	}
	if !found || strings.Contains(logs.String(), "sink_started") {
		t.Errorf("no startup_failed line naming the block, or a sink started:\n%s", logs)
	}
}
