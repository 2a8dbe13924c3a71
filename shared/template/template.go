package template

import (
	"fmt"
	"strconv"
	"strings"
)

// Template is a parsed destination-name template. It is immutable and safe
// for concurrent use.
type Template struct {
	src          string
	parts        []part
	literalBytes int // sum of literal lengths, to size Resolve's buffer
	placeholders int
}

type kind uint8

const (
	literal kind = iota
	wholeTopic
	topicSegment
)

type part struct {
	kind  kind
	lit   string // literal only
	index int    // topicSegment only; negative counts from the end
}

const segmentPrefix = "topic_segment["

// SyntaxError is returned by Parse for a malformed template.
type SyntaxError struct {
	Template string // the text given to Parse
	Offset   int    // 0-based byte offset of the problem in Template
	Msg      string // what is wrong, e.g. `unknown placeholder "{foo}"`
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("template %q: %s at byte %d", e.Template, e.Msg, e.Offset)
}

// Parse parses s. Every syntax problem is reported here, so that a bad
// template fails when the sink opens; the only error left for Resolve is a
// segment index that the given topic does not have.
func Parse(s string) (*Template, error) {
	t := &Template{src: s}
	for i := 0; i < len(s); {
		switch s[i] {
		case '}':
			return nil, &SyntaxError{s, i, `unexpected "}"`}
		case '{':
			p, next, err := parsePlaceholder(s, i)
			if err != nil {
				return nil, err
			}
			t.parts = append(t.parts, p)
			t.placeholders++
			i = next
		default:
			n := strings.IndexAny(s[i:], "{}")
			if n < 0 {
				n = len(s) - i
			}
			t.parts = append(t.parts, part{kind: literal, lit: s[i : i+n]})
			t.literalBytes += n
			i += n
		}
	}
	return t, nil
}

// parsePlaceholder parses the placeholder whose "{" is at s[start] and
// returns the offset just past its "}".
func parsePlaceholder(s string, start int) (part, int, error) {
	n := strings.IndexAny(s[start+1:], "{}")
	if n < 0 || s[start+1+n] == '{' {
		return part{}, 0, &SyntaxError{s, start, `unclosed "{"`}
	}
	end := start + 1 + n // the "}"
	name := s[start+1 : end]
	switch {
	case name == "topic":
		return part{kind: wholeTopic}, end + 1, nil
	case strings.HasPrefix(name, segmentPrefix):
		from := start + 1 + len(segmentPrefix)
		n := strings.IndexByte(s[from:end], ']')
		if n < 0 {
			return part{}, 0, &SyntaxError{s, end, `missing "]"`}
		}
		to := from + n // the "]"
		if to+1 != end {
			return part{}, 0, &SyntaxError{s, to + 1, fmt.Sprintf(`unexpected %q after "]"`, s[to+1:end])}
		}
		index, msg := parseIndex(s[from:to])
		if msg != "" {
			return part{}, 0, &SyntaxError{s, from, msg}
		}
		return part{kind: topicSegment, index: index}, end + 1, nil
	default:
		return part{}, 0, &SyntaxError{s, start, fmt.Sprintf("unknown placeholder %q", s[start:end+1])}
	}
}

// parseIndex accepts -?[0-9]+ only; strconv.Atoi alone would also let "+1"
// through, which the syntax does not promise.
func parseIndex(s string) (int, string) {
	if s == "" {
		return 0, "missing segment index"
	}
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, fmt.Sprintf("segment index %q is not a decimal integer", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Sprintf("segment index %q does not fit in an int", s)
	}
	return n, ""
}

// String returns the text the template was parsed from.
func (t *Template) String() string { return t.src }

// IsStatic reports whether the template has no placeholders, so that it
// resolves to the same name for every topic and the destination can be
// prepared before the first batch.
func (t *Template) IsStatic() bool { return t.placeholders == 0 }

// Resolve returns the destination name for topic. It fails only when a
// {topic_segment[n]} refers to a segment that topic does not have.
//
// Resolve is on the per-batch path: a static template or one made of a
// single placeholder does not allocate, anything else allocates once.
func (t *Template) Resolve(topic string) (string, error) {
	if t.placeholders == 0 {
		return t.src, nil
	}
	if len(t.parts) == 1 {
		return t.value(t.parts[0], topic)
	}
	var b strings.Builder
	// A segment is never longer than the topic, so this never regrows.
	b.Grow(t.literalBytes + t.placeholders*len(topic))
	for _, p := range t.parts {
		v, err := t.value(p, topic)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

func (t *Template) value(p part, topic string) (string, error) {
	switch p.kind {
	case wholeTopic:
		return topic, nil
	case topicSegment:
		count := strings.Count(topic, ".") + 1
		i := p.index
		if i < 0 {
			i += count
		}
		if i < 0 || i >= count {
			return "", t.rangeError(topic, count, p.index)
		}
		return segment(topic, i), nil
	default:
		return p.lit, nil
	}
}

// segment returns the i-th dot-separated segment of topic; i must be in range.
func segment(topic string, i int) string {
	for range i {
		topic = topic[strings.IndexByte(topic, '.')+1:]
	}
	if end := strings.IndexByte(topic, '.'); end >= 0 {
		topic = topic[:end]
	}
	return topic
}

func (t *Template) rangeError(topic string, count, index int) error {
	noun := "segments"
	if count == 1 {
		noun = "segment"
	}
	return fmt.Errorf("template %q: topic %q has %d %s, index %d is out of range",
		t.src, topic, count, noun, index)
}
