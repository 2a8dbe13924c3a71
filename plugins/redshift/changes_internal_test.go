package redshift

import (
	"strings"
	"testing"
)

func TestKeyText(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{`"abc"`, "abc", ""},
		{`"a\u00e9\"b"`, `aé"b`, ""},
		{`" lead"`, " lead", ""},
		{`"trail "`, "", "ends in a blank"},
		{`7`, "7", ""},
		{`7.0`, "7", ""},
		{`7e0`, "7", ""},
		{`-12`, "-12", ""},
		{`123456789012345678901234567890`, "123456789012345678901234567890", ""},
		{`1.5`, "", "must be an integer"},
		{`0.5e1`, "5", ""},
		{`1200e-2`, "12", ""},
		{`0.000e999999999`, "0", ""},
		{`-0e-5`, "0", ""},
		{`1e65534`, "1" + strings.Repeat("0", 65534), ""},
		{`1e65535`, "", "at most 65535 digits"},
		{`1e999999`, "", "at most 65535 digits"},
		{`1e99999999999999999999999`, "", "at most 65535 digits"},
		{`-1E-999999`, "", "must be an integer"},
		{`5e-99999999999999999999999`, "", "must be an integer"},
		{`true`, "true", ""},
		{`false`, "false", ""},
	} {
		got, err := keyText([]byte(c.in))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %q, %v, want an error with %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || string(got) != c.want):
			t.Errorf("%s: %q, %v, want %q", c.in, got, err, c.want)
		}
	}
}
