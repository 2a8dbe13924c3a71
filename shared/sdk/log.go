package sdk

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// LogFunc receives one finished log line: the message followed by its
// attributes as key=value pairs. It is called from any goroutine.
type LogFunc func(level slog.Level, line string)

// logSink is shared by every handler derived from one instance's logger. It
// stops forwarding once closed, so nothing is logged after close returns.
type logSink struct {
	mu       sync.RWMutex
	closed   bool
	out      LogFunc
	minLevel slog.Level
	redact   *redactor
}

func (s *logSink) emit(level slog.Level, line string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return
	}
	s.out(level, s.redact.apply(line))
}

func (s *logSink) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// lineHandler is a slog.Handler that formats records as "msg k=v k=v".
type lineHandler struct {
	sink   *logSink
	prefix string // group prefix for attributes added later, "g1.g2."
	attrs  string // preformatted attributes from WithAttrs
}

func newLogger(s *logSink) *slog.Logger { return slog.New(&lineHandler{sink: s}) }

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.sink.minLevel }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.prefix, a)
		return true
	})
	h.sink.emit(r.Level, b.String())
	return nil
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range as {
		appendAttr(&b, h.prefix, a)
	}
	return &lineHandler{sink: h.sink, prefix: h.prefix, attrs: b.String()}
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &lineHandler{sink: h.sink, prefix: h.prefix + name + ".", attrs: h.attrs}
}

func appendAttr(b *strings.Builder, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			appendAttr(b, p, g)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(prefix)
	b.WriteString(a.Key)
	b.WriteByte('=')
	var v string
	switch a.Value.Kind() {
	case slog.KindTime:
		v = a.Value.Time().UTC().Format(time.RFC3339Nano)
	default:
		v = a.Value.String()
	}
	if needsQuote(v) {
		v = strconv.Quote(v)
	}
	b.WriteString(v)
}

func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for _, r := range s {
		if r <= ' ' || r == '"' || r == '=' || r == utf8.RuneError || r > 0x7e {
			return true
		}
	}
	return false
}

// ParseLevel reads debug, info, warn or error (case-insensitive).
func ParseLevel(s string) (slog.Level, bool) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo, false
	}
	return l, true
}

// redactor replaces secret values in outgoing text.
type redactor struct {
	mu      sync.RWMutex
	secrets []string
}

// minSecretLen keeps a one- or two-character "secret" from shredding every
// message; such values are not secrets worth the name.
const minSecretLen = 3

const redacted = "[REDACTED]"

// add registers a secret in every form it can take in outgoing text: as
// is, escaped by strconv.Quote (log attribute values) and escaped by JSON
// (metrics), so a secret containing a quote, backslash or control
// character is still found after quoting.
func (r *redactor) add(s string) {
	if len(s) < minSecretLen {
		return
	}
	q := strconv.Quote(s)
	j, _ := json.Marshal(s)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, form := range []string{s, q[1 : len(q)-1], string(j[1 : len(j)-1])} {
		if !slices.Contains(r.secrets, form) {
			r.secrets = append(r.secrets, form)
		}
	}
	// Longest first, so a secret containing another is replaced whole.
	slices.SortStableFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
}

// Redactor returns what replaces secrets in text exactly as the SDK does in
// a plugin's logs and errors (each secret in every quoted form, longest
// first), for code that reads a plugin's configuration outside a host:
// picomq-connect audit, which has no host redacting what it prints.
func Redactor(secrets []string) func(string) string {
	r := &redactor{}
	for _, s := range secrets {
		r.add(s)
	}
	return r.apply
}

func (r *redactor) apply(s string) string {
	if r == nil {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, redacted)
		}
	}
	return s
}
