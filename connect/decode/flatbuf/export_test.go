package flatbuf

// ErrInternal is errInternal for the black-box tests: a panic the
// boundary recovered, which no input may cause.
var ErrInternal = errInternal
