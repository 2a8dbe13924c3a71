package deltalog

// SetWholeFileLimit lets black-box tests force ranged checkpoint reads on
// small files; it returns a function restoring the previous limit.
func SetWholeFileLimit(n int64) (restore func()) {
	old := wholeFileLimit
	wholeFileLimit = n
	return func() { wholeFileLimit = old }
}

// SetSidecarFullRows lets black-box tests fill sidecars with few adds; it
// returns a function restoring the previous size.
func SetSidecarFullRows(n int) (restore func()) {
	old := sidecarFullRows
	sidecarFullRows = n
	return func() { sidecarFullRows = old }
}
