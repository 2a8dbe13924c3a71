// Package child runs sink plugin libraries for picomq-connect, each in a
// child process of its own: the project's C host (picomq-host), driven over
// pipes by shared/hostclient. The Go team does not support loading a Go
// c-shared library into a Go program, nor several Go runtimes in one
// process, so the runtime never dlopens a plugin itself: one child per
// library, one Go runtime per child, many instances inside.
//
// A Process restarts its child when it dies: the next call starts a new
// one, loads the library again, and each Instance reopens with its
// definition before it consumes. A call that was in flight when the child
// died returns an error matching ErrExited; what the plugin wrote for that
// batch is unknown, so the caller redelivers from its last committed offset.
// A Consume the caller stops waiting for (its context ended) kills the
// child, so that the plugin stops writing a batch the caller gave up on.
//
// Consume calls of one Instance run one at a time unless
// Instance.AllowOverlap (a sink with max_in_flight above 1): then each
// holds a host worker thread (WorkersFor sizes a library's child), and the
// plugin runs them together when its describe() declares
// concurrent_consume (Instance.ConcurrentConsume), one at a time otherwise.
//
// File map: process.go (the child and its restarts), instance.go (opened
// sinks), find.go (locating the picomq-host binary).
package child
