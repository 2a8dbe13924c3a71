//go:build !linux

package delta

import "sync/atomic"

// threadCPU measures nothing off Linux (no per-thread CPU time).
func threadCPU(*atomic.Int64) func() { return func() {} }
