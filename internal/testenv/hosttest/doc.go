// Package hosttest is the test side of shared/hostclient: it builds the C
// host (cmd/picomq-host) from the current source, starts one per test, adds
// the call and start options that make requests the runtime never sends
// (to exercise the host's contract checks), and reads a process's CPU time
// and memory for the benchmarks. The e2e suites, the benchmarks and the
// demos under tools/ use it with hostclient:
//
//	bin := hosttest.BuildHost(t)
//	h := hosttest.StartTest(t, bin, hostclient.Workers(8))
//	lib, err := h.Load(pluginPath, hosttest.TableSize(64))
//
// Nothing that ships imports it: the runtime (cmd/picomq-connect) uses
// hostclient alone, and its test TestShipsNoTestCode checks that.
//
// File map: build.go (Build, BuildHost), testing.go (StartTest),
// options.go (Wrapper, Quarantine, ErrCap, OutCap, CallCount, TableSize,
// ABI, Batch1_0, Batch1_2, Batch1_3, Batch1_4, NoLog), cpu.go (ProcessCPU, ProcessUserSys), memory.go
// (ProcessMemory, ResetPeakMemory), children.go (Children).
package hosttest
