package rsiam_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/redshift/internal/rsiam"
)

// countingSource issues credentials lasting life from the test's clock.
type countingSource struct {
	now  *time.Time
	life time.Duration
	n    int
	fail error
}

func (s *countingSource) Fetch(context.Context) (rsiam.Credentials, error) {
	if s.fail != nil {
		return rsiam.Credentials{}, s.fail
	}
	s.n++
	return rsiam.Credentials{User: "IAM:x", Password: fmt.Sprintf("pw%d", s.n), Expiration: s.now.Add(s.life)}, nil
}

// The cache hands out the same credentials until a fifth of their
// lifetime (at most five minutes) is left, then fetches new ones.
func TestCacheRefresh(t *testing.T) {
	for _, tc := range []struct {
		life, reuseUntil time.Duration
	}{
		{15 * time.Minute, 12 * time.Minute},
		{60 * time.Minute, 55 * time.Minute},
		{10 * time.Second, 8 * time.Second},
	} {
		t.Run(tc.life.String(), func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			src := &countingSource{now: &now, life: tc.life}
			c := rsiam.NewCache(src, func() time.Time { return now })
			var seen []string
			c.OnFetch = func(cr rsiam.Credentials) { seen = append(seen, cr.Password) }
			get := func() string {
				t.Helper()
				cr, err := c.Get(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				return cr.Password
			}
			start := now
			if pw := get(); pw != "pw1" {
				t.Fatalf("first Get %s", pw)
			}
			now = start.Add(tc.reuseUntil - time.Millisecond)
			if pw := get(); pw != "pw1" {
				t.Fatalf("Get %s before the refresh point: %s, want pw1", now.Sub(start), pw)
			}
			now = start.Add(tc.reuseUntil)
			if pw := get(); pw != "pw2" {
				t.Fatalf("Get %s after the first fetch: %s, want pw2", now.Sub(start), pw)
			}
			if c.Fetches() != 2 || len(seen) != 2 {
				t.Fatalf("%d fetches, %d OnFetch calls, want 2", c.Fetches(), len(seen))
			}
		})
	}
}

// A failed fetch is returned and not cached: the next Get tries again.
func TestCacheFailure(t *testing.T) {
	now := time.Now()
	src := &countingSource{now: &now, life: 15 * time.Minute, fail: errors.New("no")}
	c := rsiam.NewCache(src, func() time.Time { return now })
	if _, err := c.Get(context.Background()); err == nil {
		t.Fatal("Get succeeded with a failing source")
	}
	src.fail = nil
	if cr, err := c.Get(context.Background()); err != nil || cr.Password != "pw1" {
		t.Fatalf("Get after the source recovered: %v, %v", cr, err)
	}
}
