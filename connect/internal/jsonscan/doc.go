// Package jsonscan checks and skips JSON text without decoding it: the
// runtime's check of every schema = "json" payload (Valid) and the
// scanning steps the transforms split a record with (SkipSpace,
// StringEnd, NumberEnd, LiteralEnd). One implementation, fuzzed against
// encoding/json's json.Valid, for both.
//
// File map: scan.go (Valid and the scanning steps).
package jsonscan
