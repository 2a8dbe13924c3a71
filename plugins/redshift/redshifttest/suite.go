package redshifttest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// Test is one behaviour test of the suite.
type Test struct {
	Name string
	Run  func(t *testing.T, d sinkdriver.Driver, e *Env)
	// Offline tests need no services and no cluster: Run passes them a nil
	// Env, so they run (and fail) on their own where nothing else can.
	Offline bool
}

// Tests is the suite, in the order Run runs it.
var Tests = []Test{
	{Name: "LoadRowsExactlyAsSpecified", Run: LoadRowsExactlyAsSpecified},
	{Name: "CopyStatementText", Run: CopyStatementText},
	{Name: "ColumnOptions", Run: ColumnOptions},
	{Name: "PayloadsAreStoredAsGiven", Run: PayloadsAreStoredAsGiven},
	{Name: "ConfigValidationMessages", Run: ConfigValidationMessages, Offline: true},
	{Name: "EmptyPrefixIsTheBucketRoot", Run: EmptyPrefixIsTheBucketRoot},
	{Name: "Describe", Run: Describe, Offline: true},
	{Name: "UnreachableEndpointIsRetry", Run: UnreachableEndpointIsRetry, Offline: true},
	{Name: "RefusedPasswordIsBadConfig", Run: RefusedPasswordIsBadConfig},
	{Name: "UnknownDatabaseIsBadConfig", Run: UnknownDatabaseIsBadConfig},
	{Name: "PayloadFormatWarnings", Run: PayloadFormatWarnings},
	{Name: "TwoWritersOnOneTableKeepEveryRow", Run: TwoWritersOnOneTableKeepEveryRow},
	{Name: "ReplayedBatchChangesNothing", Run: ReplayedBatchChangesNothing},
	{Name: "RowsLeftInStagingAreMovedByTheNextLoad", Run: RowsLeftInStagingAreMovedByTheNextLoad},
	{Name: "TransientFaultsAreRetriedWithLinearBackoff", Run: TransientFaultsAreRetriedWithLinearBackoff},
	{Name: "PermanentFaultsFailAtOnceWithNothingVisible", Run: PermanentFaultsFailAtOnceWithNothingVisible},
	{Name: "CloseDuringALoadSaysWhatMayHaveCommitted", Run: CloseDuringALoadSaysWhatMayHaveCommitted},
	{Name: "SchemaMismatch", Run: SchemaMismatch},
	{Name: "PreflightLimitsAreFatal", Run: PreflightLimitsAreFatal},
	{Name: "SchemaQualifiedTarget", Run: SchemaQualifiedTarget},
	{Name: "TemplatedNames", Run: TemplatedNames},
	{Name: "ArchiveOnAndOff", Run: ArchiveOnAndOff},
	{Name: "S3UploadFailed", Run: S3UploadFailed},
	{Name: "GroupedLoadsOfConcurrentPartitions", Run: GroupedLoadsOfConcurrentPartitions},
	{Name: "GroupMemberFatalAlone", Run: GroupMemberFatalAlone},
	{Name: "GroupTransactionFailureIsRetryForAll", Run: GroupTransactionFailureIsRetryForAll},
	{Name: "CloseCancelsWaitingBatches", Run: CloseCancelsWaitingBatches},
	{Name: "TwoGroupingWritersTakeTurns", Run: TwoGroupingWritersTakeTurns},
	{Name: "UpsertAppliesTheLastChangePerKey", Run: UpsertAppliesTheLastChangePerKey},
	{Name: "UpsertGroupedLoads", Run: UpsertGroupedLoads},
}

// Run runs every test of the suite through d, each as a parallel subtest
// with a destination of its own.
func Run(t *testing.T, d sinkdriver.Driver) {
	for _, tc := range Tests {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			if tc.Offline {
				tc.Run(t, d, nil)
				return
			}
			tc.Run(t, d, NewEnv(t))
		})
	}
}

// StatusError is a call's status from the plugin, in either driver.
type StatusError = hostclient.StatusError

func asStatus(t *testing.T, err error) *StatusError {
	t.Helper()
	var se *StatusError
	if !errors.As(err, &se) {
		t.Fatalf("%v, want a status from the plugin", err)
	}
	return se
}

// WantStatus checks err is a status from the plugin with code and a message
// containing each of contains.
func WantStatus(t *testing.T, err error, code hostclient.Status, contains ...string) *StatusError {
	t.Helper()
	var se *StatusError
	if !errors.As(err, &se) || se.Code != code {
		t.Fatalf("got %v, want status %v", err, code)
	}
	for _, c := range contains {
		if !strings.Contains(se.Message, c) {
			t.Fatalf("message %q does not contain %q", se.Message, c)
		}
	}
	return se
}

// Batch is n JSON records of topic from offset first. The key depends on
// the offset: off%3 == 0 has one, 1 has none, 2 has an empty one.
func Batch(topic string, first uint64, n int) sinkdriver.Batch {
	b := sinkdriver.Batch{Attempt: 1, Topic: topic, Schema: "json"}
	for i := range n {
		off := first + uint64(i)
		rec := sinkdriver.Record{Offset: off, TimestampMs: 1767225600000 + int64(off)*7,
			Payload: fmt.Appendf(nil, `{"order":%d,"item":"widget-%d","price":%d.5}`, off, off%13, off%100)}
		switch off % 3 {
		case 0:
			rec.Key = fmt.Appendf(nil, "customer-%d", off)
		case 2:
			rec.Key = []byte{}
		}
		b.Records = append(b.Records, rec)
	}
	return b
}

func consume(t *testing.T, inst sinkdriver.Instance, b sinkdriver.Batch) {
	t.Helper()
	if err := inst.Consume(b); err != nil {
		t.Fatalf("consume %s offsets %d..%d: %v", b.Topic, b.Records[0].Offset, b.Records[len(b.Records)-1].Offset, err)
	}
}

// bytesLiteral is SQL for the bytes of hexDigits in a VARBYTE column: the
// backend's bytea literal under the emulator, FROM_HEX on a real cluster.
func (e *Env) bytesLiteral(hexDigits string) string {
	if e.Emu == nil {
		return "FROM_HEX('" + hexDigits + "')"
	}
	return `'\x` + hexDigits + `'::bytea`
}
