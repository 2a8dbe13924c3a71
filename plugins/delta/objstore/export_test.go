package objstore

import "golang.org/x/sys/unix"

// OnSync makes l call f with the name of every file or directory it has
// synced, for tests that check what is durable before a commit.
func OnSync(l *Local, f func(name string)) { l.onSync = f }

// KernelAtLeast is kernelAtLeast, for its table test.
var KernelAtLeast = kernelAtLeast

// FailSyncfsOnce makes the next syncfs fail with err and later ones
// succeed, as the kernel reports a write-back error to one syncfs per open
// file. The returned function restores syncfs.
func FailSyncfsOnce(err error) (restore func()) {
	failed := false
	syncfs = func(fd int) error {
		if !failed {
			failed = true
			return err
		}
		return unix.Syncfs(fd)
	}
	return func() { syncfs = unix.Syncfs }
}
