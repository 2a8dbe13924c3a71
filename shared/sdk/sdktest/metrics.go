package sdktest

import (
	"slices"
	"testing"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

// CheckDeclared fails t unless decls (a plugin's Plugin.Metrics) declare
// exactly the numbers of fields (its sink's Metrics() map), each validly:
// a field left undeclared is exported untyped, and a declaration without
// its field exports nothing.
func CheckDeclared(t testing.TB, fields map[string]any, decls []sdk.Metric) {
	t.Helper()
	declared := map[string]bool{}
	for _, d := range decls {
		if err := d.Check(); err != nil {
			t.Errorf("declaration of %s: %v", d.Field, err)
		}
		declared[d.Field] = true
	}
	var numbers []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			switch v := v.(type) {
			case map[string]any:
				walk(prefix+k+".", v)
			case string, bool, nil, []any:
			default:
				numbers = append(numbers, prefix+k)
			}
		}
	}
	walk("", fields)
	slices.Sort(numbers)
	for _, f := range numbers {
		if !declared[f] {
			t.Errorf("metrics field %s has no declaration", f)
		}
		delete(declared, f)
	}
	for f := range declared {
		t.Errorf("declared metric %s is not a number of Metrics()", f)
	}
}
