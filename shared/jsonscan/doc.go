// Package jsonscan checks and skips JSON text without decoding it: the
// runtime's check of every schema = "json" payload (Valid) and the
// scanning steps the transforms and the plugins' change records split a
// record with (SkipSpace, StringEnd, NumberEnd, LiteralEnd, ValueEnd). One
// implementation, fuzzed against encoding/json's json.Valid, for all. It
// lives in shared/ because both the runtime and the plugins use it.
//
// File map: scan.go (Valid and the scanning steps).
package jsonscan
