// Package decodetest holds what the format packages' tests share: Fits,
// the check that the JSON a codec wrote has the type its value schema
// declares. Tests only; no shipped binary links it.
//
// File map: fits.go (Fits).
package decodetest
