package deltalog_test

import (
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// FuzzParseActions: arbitrary commit bytes never panic, and whatever parses
// re-encodes to bytes that parse to the same kinds.
func FuzzParseActions(f *testing.F) {
	for _, seed := range []string{
		protocolLine + "\n" + metaDataLine(""),
		`{"add":{"path":"a","partitionValues":{"p":null},"size":1,"modificationTime":1,"dataChange":true}}`,
		`{"commitInfo":{"timestamp":1,"x":{"y":[1,2,null]}}}` + "\n\n" + `{"txn":{"appId":"a","version":1}}`,
		` { "\u0061dd" : {} }`,
		`{"domainMetadata":{"domain":"d","configuration":"","removed":true}}`,
		`{"unknown":[]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		actions, err := deltalog.ParseActions(data)
		if err != nil {
			return
		}
		out, err := deltalog.EncodeActions(actions)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		again, err := deltalog.ParseActions(out)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		if len(again) != len(actions) {
			t.Fatalf("%d actions became %d", len(actions), len(again))
		}
		for i := range actions {
			if actions[i].Kind() != again[i].Kind() {
				t.Fatalf("action %d: %s became %s", i, actions[i].Kind(), again[i].Kind())
			}
		}
	})
}

// FuzzParseColumnList: never panics; parsed names re-quoted parse back.
func FuzzParseColumnList(f *testing.F) {
	for _, seed := range []string{"a", "a.b, c", "`x.y`.z", "`a``b`", ",", "``"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		paths, err := deltalog.ParseColumnList(s)
		if err != nil {
			return
		}
		var parts []string
		for _, p := range paths {
			var q []string
			for _, n := range p {
				q = append(q, "`"+strings.ReplaceAll(n, "`", "``")+"`")
			}
			parts = append(parts, strings.Join(q, "."))
		}
		again, err := deltalog.ParseColumnList(strings.Join(parts, ","))
		if err != nil || len(again) != len(paths) {
			t.Fatalf("%q -> %q -> %q, %v", s, paths, again, err)
		}
	})
}
