package jsonw

import "encoding/base64"

// AppendBase64 appends b as a JSON string of its padded standard base64
// (what encoding/json writes for a []byte).
func AppendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}
