// Package abi holds the numbers of the sink plugin C ABI
// (include/picomq_sink.h) that both sides of it use: the ABI version, the
// result codes and the reasons a record is rejected for. The plugin SDK
// (shared/sdk) and the host client (shared/hostclient) take them from here,
// so neither imports the other for a constant; shared/sdk/cabi checks every
// value against the header at compile time.
//
// It imports nothing but fmt, so that anything may import it.
//
// File map: abi.go (version, Status, RejectReason).
package abi
