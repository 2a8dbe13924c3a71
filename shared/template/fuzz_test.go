package template_test

import (
	"errors"
	"fmt"
	"net/url"
	"path"
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

// safeTopic matches topics whose every segment is a plain name: ResolvePath
// must never refuse those.
var safeTopic = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// safeSuffix keeps fuzzed template text after the placeholder free of what
// would itself leave the directory: that is the operator's business.
var safeSuffix = regexp.MustCompile(`^[A-Za-z0-9_/-]*$`)

// FuzzResolvePath checks ResolvePath's promise the way a consumer would see
// it: whatever the topic, the destination either is refused with an error
// naming the topic, or, once parsed as a URL and decoded (repeatedly, with
// "\" read as "/"), keeps the template's scheme and host, has no query or
// fragment, no "." or ".." segment and no control character below the
// template's directory, and stays strictly under that directory after
// normalisation.
func FuzzResolvePath(f *testing.F) {
	prefixes := []struct{ text, scheme, host string }{
		{"file:///base/", "file", ""},
		{"s3://lake/base/", "s3", "lake"},
		{"az://c/base/t_", "az", "c"},
		{"gs://b/base/.", "gs", "b"},
		{"file:///base/{topic_segment[0]}/", "file", ""},
	}
	for _, topic := range []string{
		"orders.eu", "../other", "%2e%2e/other", "%2E./other", ".%2e/x", "..", ".", "", "a//b", "a/", "/a",
		"%2f..%2fother", `..\other`, `a%5c..%5cb`, "%252e%252e", "a\x00b", "a%00", "?x", "#x", "a/./b", "..a.b",
		"a..b", "x/../../y", "%2e", "a%2F%2Fb",
	} {
		for i := range prefixes {
			f.Add(topic, uint8(i), "")
			f.Add(topic, uint8(i)|8, "/t")
		}
	}
	f.Fuzz(func(t *testing.T, topic string, which uint8, suffix string) {
		pre := prefixes[int(which&7)%len(prefixes)]
		placeholder := "{topic}"
		if which&8 != 0 {
			placeholder = "{topic_segment[-1]}"
		}
		if !safeSuffix.MatchString(suffix) {
			suffix = ""
		}
		tmpl, err := template.Parse(pre.text + placeholder + suffix)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.ResolvePath(topic)
		if err != nil {
			if !strings.Contains(err.Error(), fmt.Sprintf("topic %q", topic)) {
				t.Fatalf("error does not name the topic: %v", err)
			}
			if safeTopic.MatchString(topic) {
				t.Fatalf("ResolvePath(%q) with %q refused a plain topic: %v", topic, tmpl, err)
			}
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			return // the consumer refuses it as an invalid URL
		}
		if u.Scheme != pre.scheme || u.Host != pre.host || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
			t.Fatalf("ResolvePath(%q) with %q = %q: the URL's structure changed: %#v", topic, tmpl, got, u)
		}
		p := u.Path
		for strings.Contains(p, "%") {
			d, err := url.PathUnescape(p)
			if err != nil || d == p {
				break
			}
			p = d
		}
		p = strings.ReplaceAll(p, `\`, "/")
		const dir = "/base/"
		rest, ok := strings.CutPrefix(p, dir)
		if !ok {
			t.Fatalf("ResolvePath(%q) with %q = %q, decoded %q: not under %s", topic, tmpl, got, p, dir)
		}
		for _, seg := range strings.Split(rest, "/") {
			if seg == "." || seg == ".." || strings.ContainsFunc(seg, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("ResolvePath(%q) with %q = %q, decoded %q: segment %q", topic, tmpl, got, p, seg)
			}
		}
		if clean := path.Clean(p); !strings.HasPrefix(clean, dir) {
			t.Fatalf("ResolvePath(%q) with %q = %q: normalises to %q, outside %s", topic, tmpl, got, clean, dir)
		}
	})
}
