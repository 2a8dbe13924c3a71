package objstore

// OnSync makes l call f with the name of every file or directory it has
// synced, for tests that check what is durable before a commit.
func OnSync(l *Local, f func(name string)) { l.onSync = f }

// KernelAtLeast is kernelAtLeast, for its table test.
var KernelAtLeast = kernelAtLeast
