package deltalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Action is one line of a commit file (PROTOCOL.md "Actions"). The concrete
// types are *Protocol, *Metadata, *Add, *Remove, *Txn, *DomainMetadata,
// *CommitInfo, *CDC, *CheckpointMetadata, *Sidecar and *UnknownAction.
type Action interface {
	// Kind is the action's JSON key ("add", "metaData", ...).
	Kind() string
}

// Action keys as they appear in the log.
const (
	KindProtocol           = "protocol"
	KindMetadata           = "metaData"
	KindAdd                = "add"
	KindRemove             = "remove"
	KindTxn                = "txn"
	KindDomainMetadata     = "domainMetadata"
	KindCommitInfo         = "commitInfo"
	KindCDC                = "cdc"
	KindCheckpointMetadata = "checkpointMetadata"
	KindSidecar            = "sidecar"
)

// Protocol is the protocol action. ReaderFeatures/WriterFeatures are only
// meaningful at reader version 3 / writer version 7.
type Protocol struct {
	MinReaderVersion int32    `json:"minReaderVersion"`
	MinWriterVersion int32    `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
}

func (*Protocol) Kind() string { return KindProtocol }

// HasReaderFeature reports whether name is listed in readerFeatures.
func (p *Protocol) HasReaderFeature(name string) bool { return slices.Contains(p.ReaderFeatures, name) }

// HasWriterFeature reports whether name is listed in writerFeatures.
func (p *Protocol) HasWriterFeature(name string) bool { return slices.Contains(p.WriterFeatures, name) }

// Format is metaData.format.
type Format struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

// Metadata is the metaData action. SchemaString stays as written; use
// ParseSchema (or Snapshot.Schema) for the parsed form.
type Metadata struct {
	ID               string            `json:"id"`
	Name             string            `json:"name,omitempty"`
	Description      string            `json:"description,omitempty"`
	Format           Format            `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	CreatedTime      *int64            `json:"createdTime,omitempty"`
	Configuration    map[string]string `json:"configuration"`
}

func (*Metadata) Kind() string { return KindMetadata }

// PartitionValues maps partition column name to its serialized value; a nil
// pointer is a null partition value (written as JSON null, never omitted).
type PartitionValues map[string]*string

// Add is the add action. DeletionVector is kept raw: this package never
// interprets deletion vectors (appends do not need them).
type Add struct {
	Path                    string            `json:"path"`
	PartitionValues         PartitionValues   `json:"partitionValues"`
	Size                    int64             `json:"size"`
	ModificationTime        int64             `json:"modificationTime"`
	DataChange              bool              `json:"dataChange"`
	Stats                   string            `json:"stats,omitempty"`
	Tags                    map[string]string `json:"tags,omitempty"`
	DeletionVector          json.RawMessage   `json:"deletionVector,omitempty"`
	BaseRowID               *int64            `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64            `json:"defaultRowCommitVersion,omitempty"`
	ClusteringProvider      string            `json:"clusteringProvider,omitempty"`
}

func (*Add) Kind() string { return KindAdd }

// Remove is the remove action.
type Remove struct {
	Path                    string            `json:"path"`
	DeletionTimestamp       *int64            `json:"deletionTimestamp,omitempty"`
	DataChange              bool              `json:"dataChange"`
	ExtendedFileMetadata    *bool             `json:"extendedFileMetadata,omitempty"`
	PartitionValues         PartitionValues   `json:"partitionValues,omitempty"`
	Size                    *int64            `json:"size,omitempty"`
	Stats                   string            `json:"stats,omitempty"`
	Tags                    map[string]string `json:"tags,omitempty"`
	DeletionVector          json.RawMessage   `json:"deletionVector,omitempty"`
	BaseRowID               *int64            `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64            `json:"defaultRowCommitVersion,omitempty"`
}

func (*Remove) Kind() string { return KindRemove }

// MarshalJSON writes partitionValues whenever extendedFileMetadata is true:
// PROTOCOL.md says partitionValues, size and tags are then present, and
// omitempty would drop an unpartitioned table's empty map.
func (r Remove) MarshalJSON() ([]byte, error) {
	type plain Remove
	if r.ExtendedFileMetadata == nil || !*r.ExtendedFileMetadata {
		return json.Marshal(plain(r))
	}
	pv := r.PartitionValues
	if pv == nil {
		pv = PartitionValues{}
	}
	return json.Marshal(struct {
		plain
		PartitionValues PartitionValues `json:"partitionValues"`
	}{plain(r), pv})
}

// Txn is an application transaction identifier (the "txn" action), the
// mechanism behind exactly-once appends.
type Txn struct {
	AppID       string `json:"appId"`
	Version     int64  `json:"version"`
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
}

func (*Txn) Kind() string { return KindTxn }

// DomainMetadata is the domainMetadata action.
type DomainMetadata struct {
	Domain        string `json:"domain"`
	Configuration string `json:"configuration"`
	Removed       bool   `json:"removed"`
}

func (*DomainMetadata) Kind() string { return KindDomainMetadata }

// CDC is the cdc action (change data files).
type CDC struct {
	Path            string            `json:"path"`
	PartitionValues PartitionValues   `json:"partitionValues"`
	Size            int64             `json:"size"`
	DataChange      bool              `json:"dataChange"`
	Tags            map[string]string `json:"tags,omitempty"`
}

func (*CDC) Kind() string { return KindCDC }

// CheckpointMetadata appears only in V2 checkpoints.
type CheckpointMetadata struct {
	Version int64             `json:"version"`
	Tags    map[string]string `json:"tags,omitempty"`
}

func (*CheckpointMetadata) Kind() string { return KindCheckpointMetadata }

// Sidecar appears only in V2 checkpoints and points at a file of add/remove
// actions under _delta_log/_sidecars.
type Sidecar struct {
	Path             string            `json:"path"`
	SizeInBytes      int64             `json:"sizeInBytes"`
	ModificationTime int64             `json:"modificationTime"`
	Tags             map[string]string `json:"tags,omitempty"`
}

func (*Sidecar) Kind() string { return KindSidecar }

// UnknownAction is an action kind this package does not know. The protocol
// requires readers to ignore those; keeping the raw JSON lets a caller
// re-emit or inspect them.
type UnknownAction struct {
	Key string
	Raw json.RawMessage
}

func (u *UnknownAction) Kind() string { return u.Key }

// CommitInfo is the free-form commitInfo action. The fields this package
// writes or reads are typed; everything else a writer put there survives in
// Other, so a parsed commitInfo marshals back to the same content.
type CommitInfo struct {
	Timestamp           *int64
	InCommitTimestamp   *int64
	Operation           string
	OperationParameters map[string]any
	ReadVersion         *int64
	IsolationLevel      string
	IsBlindAppend       *bool
	EngineInfo          string
	TxnID               string
	// Other holds every key not mapped to a field above.
	Other map[string]json.RawMessage
}

func (*CommitInfo) Kind() string { return KindCommitInfo }

var commitInfoKnown = []string{"timestamp", "inCommitTimestamp", "operation", "operationParameters",
	"readVersion", "isolationLevel", "isBlindAppend", "engineInfo", "txnId"}

// UnmarshalJSON implements json.Unmarshaler.
func (c *CommitInfo) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*c = CommitInfo{}
	var errs []error
	take := func(key string, dst any) {
		raw, ok := m[key]
		if !ok {
			return
		}
		delete(m, key)
		if string(raw) == "null" {
			return
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			errs = append(errs, fmt.Errorf("commitInfo.%s: %w", key, err))
		}
	}
	take("timestamp", &c.Timestamp)
	take("inCommitTimestamp", &c.InCommitTimestamp)
	take("operation", &c.Operation)
	take("operationParameters", &c.OperationParameters)
	take("readVersion", &c.ReadVersion)
	take("isolationLevel", &c.IsolationLevel)
	take("isBlindAppend", &c.IsBlindAppend)
	take("engineInfo", &c.EngineInfo)
	take("txnId", &c.TxnID)
	if len(m) > 0 {
		c.Other = m
	}
	return errors.Join(errs...)
}

// MarshalJSON implements json.Marshaler. inCommitTimestamp is written first
// after timestamp so a human reading the log sees it early; key order has no
// meaning to readers.
func (c CommitInfo) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	put := func(key string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("commitInfo.%s: %w", key, err)
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(key)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(b)
		return nil
	}
	var errs []error
	add := func(key string, v any, present bool) {
		if present {
			if err := put(key, v); err != nil {
				errs = append(errs, err)
			}
		}
	}
	add("timestamp", c.Timestamp, c.Timestamp != nil)
	add("inCommitTimestamp", c.InCommitTimestamp, c.InCommitTimestamp != nil)
	add("operation", c.Operation, c.Operation != "")
	add("operationParameters", c.OperationParameters, c.OperationParameters != nil)
	add("readVersion", c.ReadVersion, c.ReadVersion != nil)
	add("isolationLevel", c.IsolationLevel, c.IsolationLevel != "")
	add("isBlindAppend", c.IsBlindAppend, c.IsBlindAppend != nil)
	add("engineInfo", c.EngineInfo, c.EngineInfo != "")
	add("txnId", c.TxnID, c.TxnID != "")
	keys := make([]string, 0, len(c.Other))
	for k := range c.Other {
		if !slices.Contains(commitInfoKnown, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		add(k, c.Other[k], true)
	}
	buf.WriteByte('}')
	return buf.Bytes(), errors.Join(errs...)
}

// ParseAction decodes one commit-file line. An unknown action key yields an
// *UnknownAction, not an error; a line that is not a single-key JSON object
// is an error.
func ParseAction(line []byte) (Action, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, fmt.Errorf("deltalog: bad action line: %w", err)
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("deltalog: action line has %d keys, want 1", len(m))
	}
	for key, raw := range m {
		return decodeAction(key, raw)
	}
	panic("unreachable")
}

func decodeAction(key string, raw json.RawMessage) (Action, error) {
	var a Action
	switch key {
	case KindProtocol:
		a = new(Protocol)
	case KindMetadata:
		a = new(Metadata)
	case KindAdd:
		a = new(Add)
	case KindRemove:
		a = new(Remove)
	case KindTxn:
		a = new(Txn)
	case KindDomainMetadata:
		a = new(DomainMetadata)
	case KindCommitInfo:
		a = new(CommitInfo)
	case KindCDC:
		a = new(CDC)
	case KindCheckpointMetadata:
		a = new(CheckpointMetadata)
	case KindSidecar:
		a = new(Sidecar)
	default:
		return &UnknownAction{Key: key, Raw: slices.Clone(raw)}, nil
	}
	if err := json.Unmarshal(raw, a); err != nil {
		return nil, fmt.Errorf("deltalog: bad %s action: %w", key, err)
	}
	return a, nil
}

// ParseActions decodes a whole commit file (newline-delimited JSON, blank
// lines ignored) into its actions, in file order.
func ParseActions(data []byte) ([]Action, error) {
	var out []Action
	err := scanActions(data, projAll, func(a Action) error { out = append(out, a); return nil })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// MarshalAction renders a as a single-line {"<kind>":{...}} object.
func MarshalAction(a Action) ([]byte, error) {
	var body []byte
	var err error
	if u, ok := a.(*UnknownAction); ok {
		body = u.Raw
	} else {
		body, err = json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("deltalog: marshal %s: %w", a.Kind(), err)
		}
	}
	key, _ := json.Marshal(a.Kind())
	out := make([]byte, 0, len(body)+len(key)+3)
	out = append(out, '{')
	out = append(out, key...)
	out = append(out, ':')
	out = append(out, body...)
	out = append(out, '}')
	return out, nil
}

// EncodeActions renders actions as a commit file: one action per line, each
// line terminated by '\n'. encoding/json never emits raw newlines inside a
// value, so the one-line-per-action rule holds.
func EncodeActions(actions []Action) ([]byte, error) {
	var buf bytes.Buffer
	for _, a := range actions {
		b, err := MarshalAction(a)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// nextLine splits off the first line of data, trimming a trailing '\r' and
// surrounding blanks.
func nextLine(data []byte) (line, rest []byte) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		line, rest = data[:i], data[i+1:]
	} else {
		line, rest = data, nil
	}
	return bytes.TrimSpace(line), rest
}

// actionKey returns the key of a one-action JSON line without decoding it,
// so replay can skip the add/remove lines that make up almost all of a large
// log. ok is false when the line does not start like {"key": — including
// keys with escapes — and the caller must decode it fully.
func actionKey(line []byte) (key []byte, ok bool) {
	i := 0
	skipWS := func() {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n') {
			i++
		}
	}
	skipWS()
	if i >= len(line) || line[i] != '{' {
		return nil, false
	}
	i++
	skipWS()
	if i >= len(line) || line[i] != '"' {
		return nil, false
	}
	i++
	start := i
	for i < len(line) {
		switch line[i] {
		case '"':
			return line[start:i], true
		case '\\':
			return nil, false
		}
		i++
	}
	return nil, false
}
