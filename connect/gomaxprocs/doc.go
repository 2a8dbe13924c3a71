// Package gomaxprocs sizes the Go scheduler of picomq-connect to the
// runtime's own load.
//
// Why: the runtime hands work between goroutines many times per batch (a
// fetch response, the batch to the child host, its answer, the commit).
// With several processors, Go wakes an idle one at each hand-off, and that
// thread spins looking for work, finds none and sleeps again. At a steady
// 5,000 records/s, one processor cut the runtime's CPU per record from 3.1
// to 2.7 µs (docs/runtime.md, Benchmark, "Processors"): with one processor
// there is nobody to wake. But with one processor a goroutine that has
// work waits while another runs, and the runtime's Go code gets one core
// at most: a backlog drain, or a runtime decoding Avro for many
// partitions, needs more.
//
// So Govern starts the runtime with one processor and gives it every
// processor Go would (runtime.SetDefaultGOMAXPROCS: the CPUs, or the
// container's CPU limit) as soon as the process uses a twentieth of a core
// over a second (a backlog drain does within its first second); it goes
// back to one after the process used less than a fortieth of a core for 30
// seconds in a row. A
// GOMAXPROCS set in the environment is the operator's choice: Govern then
// changes nothing.
//
// The decision (decide) is apart from the clock and the process CPU it is
// fed, so it is tested without either.
//
// File map: procs.go (Govern, decide).
package gomaxprocs
