package delta

import "context"

// background is the loop of the sink's background goroutines (checkpointer,
// compactor): it runs step each time wake's channel fires, in a context
// that ends with own (the goroutine's owner) or host (Host.Go's context),
// whichever ends first. It returns when that context ends or when step
// returns false.
func background[T any](own, host context.Context, wake func() <-chan T, step func(ctx context.Context) bool) {
	ctx, cancel := context.WithCancel(own)
	defer cancel()
	defer context.AfterFunc(host, cancel)()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake():
		}
		if !step(ctx) {
			return
		}
	}
}
