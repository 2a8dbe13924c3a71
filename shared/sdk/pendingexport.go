package sdk

// NewPending returns a Pending for b, unanswered, and the function that
// answers it (ok: answered OK), for tests of a sink's pipelining (set
// b.Self, and a follower's Pred, to it). The SDK's sequencer makes the
// Pendings of real batches itself; a sink never calls this.
func NewPending(b *Batch) (p *Pending, answer func(ok bool)) {
	p = newPending(b)
	return p, p.finish
}
