package sdk

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLineHandlerFormatsAttributes(t *testing.T) {
	var got []string
	s := &logSink{out: func(l slog.Level, line string) { got = append(got, l.String()+"|"+line) }, minLevel: slog.LevelDebug, redact: &redactor{}}
	s.redact.add("s3cret")
	s.redact.add("s3cret-longer")
	lg := newLogger(s).With("table", "orders").WithGroup("g")
	lg.Debug("batch written", "version", 42, "uri", "s3://b/a b", "pw", "s3cret-longer", slog.Group("sub", "n", 1),
		"at", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "empty", "")
	want := `DEBUG|batch written table=orders g.version=42 g.uri="s3://b/a b" g.pw=[REDACTED] g.sub.n=1 g.at=2026-01-02T03:04:05Z g.empty=""`
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	s.minLevel = slog.LevelInfo
	lg.Debug("hidden")
	s.close()
	lg.Error("after close")
	if len(got) != 1 {
		t.Fatalf("got %q", got)
	}
}

func TestRedactorIgnoresTinyValues(t *testing.T) {
	r := &redactor{}
	r.add("ab")
	r.add("abc")
	if got := r.apply("ab abc abcd"); got != "ab [REDACTED] [REDACTED]d" {
		t.Fatalf("%q", got)
	}
	if !strings.Contains((*redactor)(nil).apply("x"), "x") {
		t.Fatal("nil redactor")
	}
}

func TestRedactionSurvivesQuotingAndJSON(t *testing.T) {
	var got []string
	s := &logSink{out: func(l slog.Level, line string) { got = append(got, line) }, minLevel: slog.LevelDebug, redact: &redactor{}}
	secret := "p\"ss\\w\x01rd"
	s.redact.add(secret)
	newLogger(s).Info("failed", "error", "auth with "+secret+" refused")
	if len(got) != 1 || strings.Contains(got[0], "ss") {
		t.Fatalf("quoted secret leaked: %q", got)
	}
	j, _ := json.Marshal(map[string]string{"last_error": "x " + secret})
	if out := s.redact.apply(string(j)); strings.Contains(out, "ss") {
		t.Fatalf("JSON-escaped secret leaked: %s", out)
	}
}
