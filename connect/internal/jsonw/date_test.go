package jsonw_test

import (
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

// TestAppendDate holds AppendDate to time.Time's proleptic Gregorian
// calendar over its whole range, the bounds included.
func TestAppendDate(t *testing.T) {
	epoch := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := epoch.AddDate(0, 0, jsonw.MinDay).Format(time.DateOnly); got != "0000-01-01" {
		t.Fatalf("MinDay is %s, want 0000-01-01", got)
	}
	if got := epoch.AddDate(0, 0, jsonw.MaxDay).Format(time.DateOnly); got != "9999-12-31" {
		t.Fatalf("MaxDay is %s, want 9999-12-31", got)
	}
	for days := int64(jsonw.MinDay); days <= jsonw.MaxDay; days++ {
		want := epoch.AddDate(0, 0, int(days)).Format(time.DateOnly)
		if got := string(jsonw.AppendDate(nil, days)); got != want {
			t.Fatalf("AppendDate(%d) = %s, want %s", days, got, want)
		}
	}
}
