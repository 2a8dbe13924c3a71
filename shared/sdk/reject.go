package sdk

import (
	"fmt"
	"sort"

	"github.com/picomq/heavy-sinks/shared/abi"
)

// RejectReason classifies a rejected record (ABI 1.1), abi.RejectReason.
type RejectReason = abi.RejectReason

// Reasons a record can be rejected for; abi documents each.
const (
	RejectValue    = abi.RejectValue
	RejectSize     = abi.RejectSize
	RejectEncoding = abi.RejectEncoding
)

// Rejection is one record of a batch the sink will never write.
type Rejection struct {
	Index  int // position in Batch.Records
	Reason RejectReason
	Err    error
}

// rejections is a batch's per-record outcomes; nil on a batch whose host
// does not accept them (an ABI 1.0 host, or one that did not ask).
type rejections struct {
	byIndex map[int]Rejection
}

// AcceptRejections marks b as coming from a host that accepts per-record
// rejections (picomq_batch.reject set). The C shim calls it; tests may too.
func (b *Batch) AcceptRejections() {
	if b.rejects == nil {
		b.rejects = &rejections{byIndex: map[int]Rejection{}}
	}
}

// CanReject reports whether the host accepts per-record rejections. When it
// does not, a record that can never be written fails the whole batch
// (Fatal), as in ABI 1.0.
func (b *Batch) CanReject() bool { return b.rejects != nil }

// Reject records that record i can never be written, for reason, and
// returns true; the sink then leaves the record out and writes the rest.
// It returns false when the host does not accept rejections: the sink must
// then fail the batch with err as it always did. Rejecting a record twice
// keeps the first reason.
//
// A sink must reject the same records when the same batch is delivered
// again, also when it finds the batch already written: the host may have
// lost the first answer.
func (b *Batch) Reject(i int, reason RejectReason, err error) bool {
	if b.rejects == nil {
		return false
	}
	if i < 0 || i >= len(b.Records) {
		panic(fmt.Sprintf("sdk: Batch.Reject(%d) outside a batch of %d records", i, len(b.Records)))
	}
	if _, dup := b.rejects.byIndex[i]; !dup {
		b.rejects.byIndex[i] = Rejection{Index: i, Reason: reason, Err: err}
	}
	return true
}

// Rejected reports whether record i was rejected.
func (b *Batch) Rejected(i int) bool {
	if b.rejects == nil {
		return false
	}
	_, ok := b.rejects.byIndex[i]
	return ok
}

// Rejections returns the rejected records in index order.
func (b *Batch) Rejections() []Rejection {
	if b.rejects == nil || len(b.rejects.byIndex) == 0 {
		return nil
	}
	out := make([]Rejection, 0, len(b.rejects.byIndex))
	for _, r := range b.rejects.byIndex {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// ForgetRejections drops what was rejected so far: the SDK calls it when
// Consume fails (the batch as a whole did not happen, and the host ignores
// rejections without OK), and a sink that builds the batch again from the
// start (Delta, after another writer changed the table's schema) calls it
// first, so a record the new schema takes is not both written and
// rejected.
func (b *Batch) ForgetRejections() {
	if b.rejects != nil {
		clear(b.rejects.byIndex)
	}
}
