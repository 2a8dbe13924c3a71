// Package jsonw writes JSON values into a byte slice: strings, floats,
// exact decimals, base64 bytes and dates, the way every decoder (connect/decode/avro, flatbuf, proto)
// and the transforms (connect/transform) write them, so that one record
// reads the same whatever its format (docs/decode.md, "JSON produced from
// each format").
//
// Strings are escaped as encoding/json escapes them, less its HTML
// escaping: \" \\ \n \r \t, the other control characters as \u00XX, U+2028
// and U+2029 as \u2028 and \u2029 (JavaScript reads them as line ends);
// <, > and & stay as they are. What to do with bytes that are not UTF-8 is
// the caller's choice: AppendString reports them (a decoder refuses the
// record: replacing bytes would change the data), AppendStringLossy writes
// U+FFFD for each, as encoding/json does.
//
// The functions allocate only when dst must grow, and append runs of bytes
// that need no escaping in one go: they run for every value of every record.
//
// File map:
//   - string.go: AppendString, AppendStringLossy
//   - number.go: AppendFloat
//   - bytes.go: AppendBase64
//   - decimal.go: AppendDecimal
//   - date.go: AppendDate, MinDay, MaxDay
package jsonw
