package template

import (
	"fmt"
	"net/url"
	"strings"
)

// ResolvePath is Resolve for a destination that is a path or a URL, such as
// a Delta table_uri. A placeholder's value may add path segments below the
// template text before it but never change the path above it, so
// ResolvePath refuses a topic whose values make a path segment that is "."
// or ".." (normalisation would turn it into a climb) or empty (the
// destination would become its parent, or merge with another topic's), once
// decoded the way a URL consumer decodes it; or whose values contain "?" or
// "#" (they would end the path early) or control characters.
//
// Percent-decoding is repeated until nothing changes, so that "%252e%252e"
// is refused even by a consumer that decodes twice, and both "/" and "\"
// separate segments, since some stores (Azure Blob) turn one into the
// other. Dot segments in the template's own text are the operator's and are
// left alone. The error names the topic.
func (t *Template) ResolvePath(topic string) (string, error) {
	s, err := t.Resolve(topic)
	if err != nil || t.placeholders == 0 {
		return s, err
	}
	start, end := pathBounds(s)
	off := 0
	for _, p := range t.parts {
		v, _ := t.value(p, topic) // Resolve succeeded, so every value does
		if p.kind != literal {
			if msg := checkValue(s, start, end, off, off+len(v)); msg != "" {
				return "", fmt.Errorf("template %q: topic %q would leave %q: %s",
					t.src, topic, t.literalPrefix(), msg)
			}
		}
		off += len(v)
	}
	return s, nil
}

// literalPrefix is the template text before its first placeholder: what
// every resolution must stay under.
func (t *Template) literalPrefix() string {
	if len(t.parts) > 0 && t.parts[0].kind == literal {
		return t.parts[0].lit
	}
	return ""
}

// pathBounds returns where the path of URL s starts (past a leading "/")
// and ends, splitting it
// the way net/url.Parse does: the fragment and query are cut off first,
// then a scheme, then an authority after "//".
func pathBounds(s string) (start, end int) {
	end = len(s)
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		end = i
	}
	if i := schemeEnd(s[:end]); i > 0 {
		start = i + 1
	}
	if strings.HasPrefix(s[start:end], "//") {
		start += 2
		if i := strings.IndexByte(s[start:end], '/'); i >= 0 {
			start += i
		} else {
			start = end
		}
	}
	if start < end && s[start] == '/' {
		start++ // the root of an absolute path is not a segment
	}
	return start, end
}

// schemeEnd returns the index of the ":" ending a URL scheme, or -1.
func schemeEnd(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.':
			if i == 0 {
				return -1
			}
		case c == ':':
			return i
		default:
			return -1
		}
	}
	return -1
}

// checkValue checks the placeholder value s[from:to] of the resolved
// destination s, whose path is s[start:end]. It returns what is wrong, or "".
func checkValue(s string, start, end, from, to int) string {
	for _, c := range []byte(s[from:to]) {
		switch {
		case c == '?' || c == '#':
			return fmt.Sprintf("a placeholder value may not contain %q", c)
		case isControl(c):
			return "a placeholder value may not contain control characters"
		}
	}
	// Every path segment the value touches, including one it adds nothing
	// to but its emptiness.
	for i := start; i <= end; {
		j := end
		if n := strings.IndexByte(s[i:end], '/'); n >= 0 {
			j = i + n
		}
		if i <= to && from <= j {
			if msg := checkSegment(s[i:j]); msg != "" {
				return msg
			}
		}
		i = j + 1
	}
	return ""
}

// checkSegment checks one raw path segment a placeholder contributed to.
func checkSegment(seg string) string {
	decoded := seg
	for strings.IndexByte(decoded, '%') >= 0 {
		d, err := url.PathUnescape(decoded)
		if err != nil || d == decoded {
			break // a malformed escape is the URL parser's to refuse
		}
		decoded = d
	}
	for rest := decoded; ; {
		sub, tail, more := cutSeparator(rest)
		switch {
		case sub == "." || sub == "..":
			return fmt.Sprintf("a placeholder value may not make the path segment %q (from %q)", sub, seg)
		case sub == "":
			return fmt.Sprintf("a placeholder value may not make an empty path segment (in %q)", seg)
		case strings.IndexFunc(sub, func(r rune) bool { return r < 0x80 && isControl(byte(r)) }) >= 0:
			return fmt.Sprintf("a placeholder value may not contain control characters (in %q)", seg)
		}
		if !more {
			return ""
		}
		rest = tail
	}
}

// cutSeparator splits s around its first "/" or "\".
func cutSeparator(s string) (before, after string, found bool) {
	if i := strings.IndexAny(s, `/\`); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

func isControl(c byte) bool { return c < 0x20 || c == 0x7f }
