package rsiam

import (
	"context"
	"sync"
	"time"
)

// maxMargin caps how long before Expiration the Cache fetches new
// credentials: a connection may take its time to log in (TLS, a busy
// leader node), and clocks drift a little.
const maxMargin = 5 * time.Minute

// Cache hands out one set of credentials until it is close to expiry, then
// fetches the next. Close means less than a fifth of the lifetime left, at
// most maxMargin: with the 15-minute default, a refresh after 12 minutes.
// Callers wait on one fetch at a time; a failed fetch is not cached, so the
// next caller tries again.
type Cache struct {
	src Source
	now func() time.Time
	// OnFetch, when set, is called with each new set of credentials (the
	// sink logs the user and expiry, never the password).
	OnFetch func(Credentials)

	mu      sync.Mutex
	cur     Credentials
	refresh time.Time // when cur stops being handed out
	fetches int
}

// NewCache returns a Cache in front of src. now is the clock (nil for
// time.Now), so tests can move time.
func NewCache(src Source, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	return &Cache{src: src, now: now}
}

// Get returns credentials valid for a login now, fetching new ones when the
// current ones are due for refresh.
func (c *Cache) Get(ctx context.Context) (Credentials, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fetches > 0 && c.now().Before(c.refresh) {
		return c.cur, nil
	}
	start := c.now()
	cr, err := c.src.Fetch(ctx)
	if err != nil {
		return Credentials{}, err
	}
	c.cur, c.refresh = cr, refreshAt(start, cr.Expiration)
	c.fetches++
	if c.OnFetch != nil {
		c.OnFetch(cr)
	}
	return cr, nil
}

// Fetches is how many sets of credentials the Cache has fetched.
func (c *Cache) Fetches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetches
}

// refreshAt is when credentials fetched at start and expiring at exp are
// due for refresh. Measuring the lifetime from the request's start keeps a
// slow answer on the safe side.
func refreshAt(start, exp time.Time) time.Time {
	margin := min(exp.Sub(start)/5, maxMargin)
	return exp.Add(-max(margin, 0))
}
