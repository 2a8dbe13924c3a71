package retry

import (
	"context"
	"time"
)

// SetSleep replaces the wait between attempts, so tests can check delays
// without sleeping.
func SetSleep(p *Policy, sleep func(ctx context.Context, d time.Duration) error) {
	p.sleep = sleep
}
