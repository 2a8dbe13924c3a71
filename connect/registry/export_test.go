package registry

import "time"

// SetNow replaces d's clock (the unknown-id grace period is counted on
// it).
func SetNow(d *Decoder, now func() time.Time) { d.now = now }
