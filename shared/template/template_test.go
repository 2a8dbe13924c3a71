package template_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/picomq/heavy-sinks/shared/template"
)

func mustParse(t testing.TB, s string) *template.Template {
	t.Helper()
	tmpl, err := template.Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return tmpl
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name, tmpl, topic, want string
	}{
		{"empty template", "", "a.b", ""},
		{"static", "events", "orders.eu", "events"},
		{"whole topic", "{topic}", "orders.eu", "orders.eu"},
		{"topic with affixes", "orders_{topic}_v1", "orders.eu", "orders_orders.eu_v1"},
		{"first segment", "{topic_segment[0]}", "orders.eu.west", "orders"},
		{"middle segment", "{topic_segment[1]}", "orders.eu.west", "eu"},
		{"last segment", "events_{topic_segment[-1]}", "orders.eu", "events_eu"},
		{"second last", "{topic_segment[-2]}", "orders.eu.west", "eu"},
		{"negative first", "{topic_segment[-3]}", "orders.eu.west", "orders"},
		{"leading zeros", "{topic_segment[007]}", "a.b.c.d.e.f.g.h", "h"},
		{"minus zero is first", "{topic_segment[-0]}", "a.b", "a"},
		{"no dots", "t_{topic_segment[-1]}", "orders", "t_orders"},
		{"empty topic", "t_{topic}", "", "t_"},
		{"empty middle segment", "[{topic_segment[1]}]", "a..b", "[]"},
		{"trailing dot", "[{topic_segment[-1]}]", "a.", "[]"},
		{"several placeholders", "s3://lake/{topic_segment[0]}/{topic_segment[-1]}/{topic}", "a.b.c", "s3://lake/a/c/a.b.c"},
		{"adjacent placeholders", "{topic_segment[1]}{topic_segment[0]}", "x.y", "yx"},
		{"verbatim, not sanitised", "orders_{topic}", `a b."q"/;DROP`, `orders_a b."q"/;DROP`},
		{"non-ASCII", "{topic_segment[-1]}_ü", "zürich.größe", "größe_ü"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustParse(t, tt.tmpl).Resolve(tt.topic)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.topic, err)
			}
			if got != tt.want {
				t.Errorf("Resolve(%q) = %q, want %q", tt.topic, got, tt.want)
			}
		})
	}
}

func TestResolveOutOfRange(t *testing.T) {
	tests := []struct {
		name, tmpl, topic, want string
	}{
		{
			"past the end", "x_{topic_segment[3]}", "a.b",
			`template "x_{topic_segment[3]}": topic "a.b" has 2 segments, index 3 is out of range`,
		},
		{
			"exactly the count", "{topic_segment[2]}", "a.b",
			`template "{topic_segment[2]}": topic "a.b" has 2 segments, index 2 is out of range`,
		},
		{
			"negative past the start", "{topic_segment[-3]}", "a.b",
			`template "{topic_segment[-3]}": topic "a.b" has 2 segments, index -3 is out of range`,
		},
		{
			"single segment", "{topic}_{topic_segment[1]}", "orders",
			`template "{topic}_{topic_segment[1]}": topic "orders" has 1 segment, index 1 is out of range`,
		},
		{
			"huge index", "{topic_segment[-9223372036854775808]}", "a",
			`template "{topic_segment[-9223372036854775808]}": topic "a" has 1 segment, index -9223372036854775808 is out of range`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustParse(t, tt.tmpl).Resolve(tt.topic)
			if err == nil {
				t.Fatalf("Resolve(%q) = %q, want error", tt.topic, got)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, tmpl string
		offset     int
		want       string
	}{
		{"unknown placeholder", "x_{foo}", 2, `template "x_{foo}": unknown placeholder "{foo}" at byte 2`},
		{"empty placeholder", "{}", 0, `template "{}": unknown placeholder "{}" at byte 0`},
		{"case matters", "{Topic}", 0, `template "{Topic}": unknown placeholder "{Topic}" at byte 0`},
		{"no spaces", "{ topic }", 0, `template "{ topic }": unknown placeholder "{ topic }" at byte 0`},
		{"segment without brackets", "{topic_segment}", 0, `template "{topic_segment}": unknown placeholder "{topic_segment}" at byte 0`},
		{"unclosed", "orders_{topic", 7, `template "orders_{topic": unclosed "{" at byte 7`},
		{"unclosed at end", "orders_{", 7, `template "orders_{": unclosed "{" at byte 7`},
		{"opened twice", "a{b{topic}", 1, `template "a{b{topic}": unclosed "{" at byte 1`},
		{"stray close", "orders}", 6, `template "orders}": unexpected "}" at byte 6`},
		{"stray close after placeholder", "{topic}}", 7, `template "{topic}}": unexpected "}" at byte 7`},
		{"missing index", "{topic_segment[]}", 15, `template "{topic_segment[]}": missing segment index at byte 15`},
		{"letter index", "{topic_segment[x]}", 15, `template "{topic_segment[x]}": segment index "x" is not a decimal integer at byte 15`},
		{"plus sign", "{topic_segment[+1]}", 15, `template "{topic_segment[+1]}": segment index "+1" is not a decimal integer at byte 15`},
		{"lone minus", "{topic_segment[-]}", 15, `template "{topic_segment[-]}": segment index "-" is not a decimal integer at byte 15`},
		{"double minus", "{topic_segment[--1]}", 15, `template "{topic_segment[--1]}": segment index "--1" is not a decimal integer at byte 15`},
		{"space in index", "{topic_segment[ 1]}", 15, `template "{topic_segment[ 1]}": segment index " 1" is not a decimal integer at byte 15`},
		{"missing bracket", "{topic_segment[1}", 16, `template "{topic_segment[1}": missing "]" at byte 16`},
		{"text after bracket", "{topic_segment[1]x}", 17, `template "{topic_segment[1]x}": unexpected "x" after "]" at byte 17`},
		{
			"index overflows", "t_{topic_segment[99999999999999999999]}", 17,
			`template "t_{topic_segment[99999999999999999999]}": segment index "99999999999999999999" does not fit in an int at byte 17`,
		},
		{"first error wins", "{foo}}", 0, `template "{foo}}": unknown placeholder "{foo}" at byte 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := template.Parse(tt.tmpl)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error", tt.tmpl, tmpl)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
			var se *template.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error is %T, want *template.SyntaxError", err)
			}
			if se.Offset != tt.offset || se.Template != tt.tmpl {
				t.Errorf("SyntaxError{Template: %q, Offset: %d}, want {%q, %d}", se.Template, se.Offset, tt.tmpl, tt.offset)
			}
		})
	}
}

// There is no escape for a literal brace: every way one might try to write
// one is rejected rather than silently resolving to something surprising.
func TestLiteralBracesAreRejected(t *testing.T) {
	for _, s := range []string{"{{", "}}", "a{{topic}}", `a\{b`, `a\}b`, "{{topic}"} {
		t.Run(s, func(t *testing.T) {
			if tmpl, err := template.Parse(s); err == nil {
				t.Errorf("Parse(%q) = %v, want error", s, tmpl)
			}
		})
	}
}

func TestIsStaticAndString(t *testing.T) {
	tests := []struct {
		tmpl   string
		static bool
	}{
		{"", true},
		{"events", true},
		{"s3://lake/orders", true},
		{"{topic}", false},
		{"events_{topic_segment[-1]}", false},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			tmpl := mustParse(t, tt.tmpl)
			if got := tmpl.IsStatic(); got != tt.static {
				t.Errorf("IsStatic() = %v, want %v", got, tt.static)
			}
			if got := tmpl.String(); got != tt.tmpl {
				t.Errorf("String() = %q, want %q", got, tt.tmpl)
			}
		})
	}
}

func TestResolveConcurrent(t *testing.T) {
	tmpl := mustParse(t, "t_{topic_segment[0]}_{topic_segment[-1]}")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if got, err := tmpl.Resolve("a.b.c"); err != nil || got != "t_a_c" {
					t.Errorf("Resolve = %q, %v", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestResolveAllocations(t *testing.T) {
	tests := []struct {
		tmpl string
		max  float64
	}{
		{"events", 0},
		{"{topic}", 0},
		{"{topic_segment[-1]}", 0},
		{"orders_{topic_segment[-1]}", 1},
		{"s3://lake/{topic_segment[0]}/{topic_segment[-1]}/{topic}", 1},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			tmpl := mustParse(t, tt.tmpl)
			got := testing.AllocsPerRun(100, func() {
				if _, err := tmpl.Resolve("orders.eu.west"); err != nil {
					t.Fatal(err)
				}
			})
			if got > tt.max {
				t.Errorf("Resolve allocates %v times, want at most %v", got, tt.max)
			}
		})
	}
}

func BenchmarkResolve(b *testing.B) {
	benchmarks := []struct{ name, tmpl string }{
		{"static", "events"},
		{"topic", "{topic}"},
		{"last_segment", "{topic_segment[-1]}"},
		{"prefixed_segment", "orders_{topic_segment[-1]}"},
		{"uri", "s3://lake/{topic_segment[0]}/{topic_segment[-1]}/{topic}"},
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			tmpl := mustParse(b, bm.tmpl)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tmpl.Resolve("orders.eu.west"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
