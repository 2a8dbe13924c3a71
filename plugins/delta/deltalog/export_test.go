package deltalog

import (
	"bytes"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog/ckptfile"
)

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

// CheckpointColumnLookup opens a Parquet checkpoint or sidecar and runs the
// readers' column lookup over it: refused names the columns present by a
// name the readers look up but of a shape they do not decode, createdBy is
// the footer's writer.
func CheckpointColumnLookup(data []byte) (refused []string, createdBy string, err error) {
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, "", err
	}
	l := ckptfile.Lookup{Root: pf.Root()}
	lookupCheckpointColumns(&l)
	lookupFileColumns(&l)
	return l.Refused, pf.Metadata().CreatedBy, nil
}
