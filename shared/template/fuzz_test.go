package template_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/template"
)

// placeholderRE and reference resolve templates a second, independent way
// (regexp plus strings.Split) so the fuzzer can compare results, not just
// look for panics.
var placeholderRE = regexp.MustCompile(`\{topic\}|\{topic_segment\[(-?[0-9]+)\]\}`)

func reference(tmpl, topic string) (string, bool) {
	segments := strings.Split(topic, ".")
	ok := true
	out := placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		if m == "{topic}" {
			return topic
		}
		i, _ := strconv.Atoi(placeholderRE.FindStringSubmatch(m)[1])
		if i < 0 {
			i += len(segments)
		}
		if i < 0 || i >= len(segments) {
			ok = false
			return ""
		}
		return segments[i]
	})
	return out, ok
}

func FuzzParseResolve(f *testing.F) {
	seeds := []struct{ tmpl, topic string }{
		{"", ""},
		{"events", "orders.eu"},
		{"{topic}", "orders.eu"},
		{"events_{topic_segment[-1]}", "orders.eu"},
		{"s3://lake/{topic_segment[0]}/{topic_segment[-2]}/{topic}", "a.b.c"},
		{"x_{topic_segment[3]}", "a.b"},
		{"{topic_segment[-0]}", "a..b."},
		{"{topic_segment[99999999999999999999]}", "a"},
		{"{topic_segment[-9223372036854775808]}", "a"},
		{"{topic_segment[1}", "a.b"},
		{"{topic_segment[]}", "a.b"},
		{"{topic_segment[x]}", "a.b"},
		{"{topic_segment[1]]}", "a.b"},
		{"{foo}", "a"},
		{"a{b{topic}", "a"},
		{"{{topic}}", "a"},
		{"}", "a"},
		{"{", "a"},
		{"zürich_{topic}", "größe.\xff"},
	}
	for _, s := range seeds {
		f.Add(s.tmpl, s.topic)
	}
	f.Fuzz(func(t *testing.T, s, topic string) {
		tmpl, err := template.Parse(s)
		if err != nil {
			var se *template.SyntaxError
			if !errors.As(err, &se) || se.Template != s || se.Offset < 0 || se.Offset > len(s) {
				t.Fatalf("Parse(%q): bad error %#v", s, err)
			}
			return
		}
		if tmpl.String() != s {
			t.Fatalf("String() = %q, want %q", tmpl.String(), s)
		}
		if tmpl.IsStatic() != !strings.ContainsAny(s, "{}") {
			t.Fatalf("IsStatic() = %v for %q", tmpl.IsStatic(), s)
		}
		got, err := tmpl.Resolve(topic)
		want, ok := reference(s, topic)
		switch {
		case !ok && err == nil:
			t.Fatalf("Resolve(%q) with %q = %q, want an out-of-range error", topic, s, got)
		case ok && err != nil:
			t.Fatalf("Resolve(%q) with %q: %v, want %q", topic, s, err, want)
		case ok && got != want:
			t.Fatalf("Resolve(%q) with %q = %q, want %q", topic, s, got, want)
		case err != nil && !strings.Contains(err.Error(), fmt.Sprintf("topic %q has ", topic)):
			t.Fatalf("out-of-range error does not name the topic: %v", err)
		}
		if tmpl.IsStatic() && got != s {
			t.Fatalf("static %q resolved to %q", s, got)
		}

		whole, err := template.Parse("{topic}")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := whole.Resolve(topic); err != nil || got != topic {
			t.Fatalf("{topic} resolved %q to %q, %v", topic, got, err)
		}
	})
}
