package metadata

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"
)

// Field names for the metadata a sink adds next to the payload.
const (
	// Topic holds the topic the record came from.
	Topic = "pico_topic"
	// Partition holds the record's partition. A PicoMQ topic has a single
	// partition, so the value is always 0; sinks still write the batch's
	// partition rather than a literal 0, so that ids stay right if that
	// ever changes.
	Partition = "pico_partition"
	// Offset holds the record's offset in its topic.
	Offset = "pico_offset"
	// Timestamp holds the record timestamp in epoch milliseconds.
	Timestamp = "pico_timestamp"
	// Key holds the record key when there is one, base64-encoded (see
	// KeyBase64) where the destination has no binary type.
	Key = "pico_key"
	// Headers holds the record headers as a map of strings, each key and
	// value as HeaderValue renders it, where a destination keeps them.
	Headers = "pico_headers"
)

// RecordID returns the id topic:partition:offset, which identifies a record
// across replays, so sinks with primary keys can skip rows already written.
func RecordID(topic string, partition uint32, offset uint64) string {
	// Room for a typical topic and both numbers, so only the string allocates.
	var buf [96]byte
	return string(AppendRecordID(buf[:0], topic, partition, offset))
}

// AppendRecordID appends the RecordID to dst, for callers that build many
// ids into one reused buffer.
func AppendRecordID(dst []byte, topic string, partition uint32, offset uint64) []byte {
	dst = append(dst, topic...)
	dst = append(dst, ':')
	dst = strconv.AppendUint(dst, uint64(partition), 10)
	dst = append(dst, ':')
	return strconv.AppendUint(dst, offset, 10)
}

// KeyBase64 returns the key in standard, padded base64. ok is false when
// the record has no key (key == nil), which sinks store as NULL or omit; an
// empty but non-nil key is a key, and encodes to "".
func KeyBase64(key []byte) (s string, ok bool) {
	if key == nil {
		return "", false
	}
	return base64.StdEncoding.EncodeToString(key), true
}

// AppendKeyBase64 appends KeyBase64's encoding of key to dst, for
// encoders that build many values into one reused buffer. ok is false, and
// dst unchanged, when the record has no key.
func AppendKeyBase64(dst, key []byte) (_ []byte, ok bool) {
	if key == nil {
		return dst, false
	}
	return base64.StdEncoding.AppendEncode(dst, key), true
}

// KeyBase64Len is the length of KeyBase64's encoding of an n-byte key, for
// sizing buffers and checking column limits before encoding.
func KeyBase64Len(n int) int { return base64.StdEncoding.EncodedLen(n) }

// HeaderValue returns a header value as a string: the bytes themselves when
// they are valid UTF-8, standard padded base64 otherwise.
//
// The result does not say which encoding was used, so a reader cannot tell
// the text "/w==" from the single byte 0xff. That ambiguity is the runtime
// specification's rule, shared by every sink that keeps headers; do not
// work around it in one sink alone.
func HeaderValue(v []byte) string {
	if utf8.Valid(v) {
		return string(v)
	}
	return base64.StdEncoding.EncodeToString(v)
}

// AppendHeaderValue appends HeaderValue's rendering of v to dst, for
// encoders that build many values into one reused buffer.
func AppendHeaderValue(dst, v []byte) []byte {
	if utf8.Valid(v) {
		return append(dst, v...)
	}
	return base64.StdEncoding.AppendEncode(dst, v)
}
