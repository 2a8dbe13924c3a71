package template_test

import (
	"fmt"
	"strings"
	"testing"
)

func TestResolvePath(t *testing.T) {
	tests := []struct {
		name, tmpl, topic, want string
	}{
		{"static", "file:///data/orders", "a/../b", "file:///data/orders"},
		{"whole topic", "file:///base/{topic}", "orders.eu", "file:///base/orders.eu"},
		{"segment", "s3://lake/base/{topic_segment[-1]}", "orders.eu", "s3://lake/base/eu"},
		{"dots inside a name", "file:///base/{topic}", "a..b", "file:///base/a..b"},
		{"three dots are a name", "file:///base/{topic}", "...", "file:///base/..."},
		{"dot prefix with a name", "file:///base/.{topic}", "hidden", "file:///base/.hidden"},
		{"slash adds a segment", "file:///base/{topic}", "a/b", "file:///base/a/b"},
		{"affixes", "az://c/base/t_{topic}_v1", "..", "az://c/base/t_.._v1"},
		{"operator's own dot segment", "file:///data/../base/{topic}", "orders", "file:///data/../base/orders"},
		{"encoded but harmless", "file:///base/{topic}", "a%20b", "file:///base/a%20b"},
		{"placeholder in the query", "s3://lake/t?x={topic}", "..", "s3://lake/t?x=.."},
		{"bucket from the topic", "s3://{topic_segment[0]}/t", "lake.eu", "s3://lake/t"},
		{"whole URL from the topic", "{topic}", "file:///data/orders", "file:///data/orders"},
		{"non-ASCII", "gs://b/base/{topic}", "größe", "gs://b/base/größe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustParse(t, tt.tmpl).ResolvePath(tt.topic)
			if err != nil {
				t.Fatalf("ResolvePath(%q): %v", tt.topic, err)
			}
			if got != tt.want {
				t.Errorf("ResolvePath(%q) = %q, want %q", tt.topic, got, tt.want)
			}
		})
	}
}

func TestResolvePathRefusesEscapes(t *testing.T) {
	tests := []struct {
		name, tmpl, topic, want string
	}{
		{"parent", "file:///base/{topic}", "../other", `path segment ".."`},
		{"exactly dot-dot", "file:///base/{topic}", "..", `path segment ".."`},
		{"dot", "file:///base/{topic}/t", ".", `path segment "."`},
		{"encoded", "file:///base/{topic}", "%2e%2e/other", `path segment ".." (from "%2e%2e")`},
		{"encoded upper and mixed", "s3://lake/base/{topic}", "%2E./other", `path segment ".."`},
		{"encoded slash", "file:///base/{topic}", "a%2f..%2fother", `path segment ".."`},
		{"double encoded", "file:///base/{topic}", "%252e%252e", `path segment ".."`},
		{"deeper climb", "file:///base/{topic}", "a/../../other", `path segment ".."`},
		{"backslash", "az://c/base/{topic}", `..\other`, `path segment ".."`},
		{"encoded backslash", "az://c/base/{topic}", `a%5c..`, `path segment ".."`},
		{"completes a literal dot", "file:///base/.{topic}", ".", `path segment ".."`},
		{"empty segment between literal dots", "file:///base/.{topic_segment[1]}./t", "a..b", `path segment ".."`},
		{"empty value", "file:///base/{topic}", "", "empty path segment"},
		{"empty topic segment", "file:///base/{topic_segment[1]}", "a..b", "empty path segment"},
		{"double slash", "s3://lake/base/{topic}", "a//b", "empty path segment"},
		{"question mark", "file:///base/{topic}", "?x", `may not contain '?'`},
		{"hash", "file:///base/{topic}/t", "a#", `may not contain '#'`},
		{"NUL", "file:///base/{topic}", "a\x00b", "control characters"},
		{"encoded NUL", "file:///base/{topic}", "a%00b", "control characters"},
		{"from the authority", "s3://{topic}", "lake/../x", `path segment ".."`},
		{"whole URL from the topic", "{topic}", "file:///data/../etc", `path segment ".."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustParse(t, tt.tmpl).ResolvePath(tt.topic)
			if err == nil {
				t.Fatalf("ResolvePath(%q) = %q, want an error", tt.topic, got)
			}
			for _, want := range []string{fmt.Sprintf("topic %q", tt.topic), tt.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestResolvePathMessage(t *testing.T) {
	_, err := mustParse(t, "file:///base/{topic}").ResolvePath("../other")
	want := `template "file:///base/{topic}": topic "../other" would leave "file:///base/": a placeholder value may not make the path segment ".." (from "..")`
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n got %v\nwant %s", err, want)
	}
}

func TestResolvePathAllocations(t *testing.T) {
	tmpl := mustParse(t, "s3://lake/{topic_segment[0]}/{topic_segment[-1]}/{topic}")
	got := testing.AllocsPerRun(100, func() {
		if _, err := tmpl.ResolvePath("orders.eu.west"); err != nil {
			t.Fatal(err)
		}
	})
	if got > 1 {
		t.Errorf("ResolvePath allocates %v times, want at most 1", got)
	}
}
