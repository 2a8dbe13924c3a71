package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/template"
)

// What `picomq-connect audit` (connect/audit) needs of a Delta sink,
// decided here so that it reads the tables exactly where the sink writes
// them: the plugin_config decoded with its environment overrides, the table
// of each topic, the stores opened read-only, the txn application id of a
// partition and the rejections a commit recorded.

// Audit is a Delta sink's configuration as an audit reads it.
type Audit struct {
	cfg        Config
	uri        *template.Template
	storage    objstore.Options
	redactText func(string) string // replaces the secret keys' values in every error
}

// NewAudit decodes pluginConfig (the definition's [plugin_config] as
// JSON) for the sink key with env's PICOMQ_CONNECTORS_SINK_<KEY>_PLUGIN_CONFIG_*
// overrides, as the sink's open() would, and checks the storage settings
// (fetching a first token when they use default credentials).
func NewAudit(ctx context.Context, pluginConfig json.RawMessage, key string, env sdk.Env) (*Audit, error) {
	schema, err := sdk.SchemaOf[Config]()
	if err != nil {
		return nil, err
	}
	a := &Audit{}
	dec, err := schema.Decode(pluginConfig, key, env, &a.cfg)
	if err != nil {
		return nil, err
	}
	a.redactText = sdk.Redactor(dec.Secrets)
	if a.storage, err = a.cfg.storageOptions(); err != nil {
		return nil, err
	}
	if a.uri, err = template.Parse(a.cfg.TableURI); err != nil {
		return nil, sdk.BadConfigf("plugin_config key %q: %v", keyTableURI, err)
	}
	if err := authenticate(ctx, &a.storage); err != nil {
		return nil, a.redact(err)
	}
	return a, nil
}

// MetadataColumns is metadata_columns: whether the sink fills the table's
// pico_* columns.
func (a *Audit) MetadataColumns() bool { return a.cfg.MetadataColumns }

// SkipEmptyPayloads is skip_empty_payloads: whether the sink leaves empty
// payloads out.
func (a *Audit) SkipEmptyPayloads() bool { return a.cfg.SkipEmptyPayloads }

// Upsert is write_mode = "upsert": the table keeps each key's last change
// only, so its rows cannot prove the changes before it were written.
func (a *Audit) Upsert() bool { return a.cfg.WriteMode == writeUpsert }

// ExactlyOnce is exactly_once: whether the sink writes txn actions.
func (a *Audit) ExactlyOnce() bool { return a.cfg.ExactlyOnce }

// Table is the table URI of topic's records, resolved as Consume resolves
// it.
func (a *Audit) Table(topic string) (string, error) {
	uri, err := a.uri.ResolvePath(topic)
	if err != nil {
		return "", fmt.Errorf("plugin_config key %q: %v", keyTableURI, err)
	}
	return uri, nil
}

// Open opens the table at uri for reading: the store's writes fail.
func (a *Audit) Open(ctx context.Context, uri string) (ReadOnlyStore, error) {
	loc, err := objstore.ParseLocation(uri)
	if err != nil {
		return nil, uriError(err)
	}
	st, err := objstore.Open(ctx, loc, a.storage)
	if err != nil {
		if ue := uriError(err); ue != nil {
			return nil, a.redact(ue)
		}
		return nil, a.redact(err)
	}
	return a.readOnly(st), nil
}

// readOnly is st for the audit: writes fail, and every error has the
// sink's secrets replaced (this process has no host redacting what it
// prints, as the plugin has).
func (a *Audit) readOnly(st objstore.Store) readOnly { return readOnly{s: st, redact: a.redact} }

// redact returns err with the sink's secrets replaced in its text; its
// kind (errors.Is, errors.As) is kept.
func (a *Audit) redact(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := a.redactText(msg)
	if red == msg {
		return err
	}
	return &redactedError{msg: red, err: err}
}

// redactedError is an error whose text had secrets replaced.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// ReadOnlyStore is a table's store whose PutIfAbsent and Delete fail.
type ReadOnlyStore interface {
	deltalog.Store
	deltalog.RangeReader
}

// errReadOnly is what a write through a ReadOnlyStore returns.
var errReadOnly = errors.New("the audit reads tables only: a write was attempted")

type readOnly struct {
	s      objstore.Store
	redact func(error) error
}

func (r readOnly) List(ctx context.Context, prefix, startAfter string) ([]deltalog.FileInfo, error) {
	fs, err := r.s.List(ctx, prefix, startAfter)
	return fs, r.redact(err)
}
func (r readOnly) Get(ctx context.Context, path string) ([]byte, error) {
	b, err := r.s.Get(ctx, path)
	return b, r.redact(err)
}
func (r readOnly) GetRange(ctx context.Context, path string, off, n int64) ([]byte, error) {
	b, err := r.s.GetRange(ctx, path, off, n)
	return b, r.redact(err)
}
func (readOnly) PutIfAbsent(context.Context, string, []byte) error { return errReadOnly }
func (readOnly) Delete(context.Context, string) error              { return errReadOnly }

// AppID names the application transaction (txn appId) of one topic
// partition of sink key: the txn's version is the last offset of that
// partition the table holds.
func AppID(key, topic string, partition uint32) string {
	return "picomq-delta-sink/" + url.PathEscape(key) + "/" + url.PathEscape(topic) + "/" + strconv.FormatUint(uint64(partition), 10)
}

// RedriveAppID is the txn appId of the batches picomq-connect redrive
// delivers from partition partition of dead-letter topic dlqTopic.
func RedriveAppID(key, dlqTopic string, partition uint32) string {
	return "picomq-delta-sink/" + url.PathEscape(key) + "/redrive/" + url.PathEscape(dlqTopic) + "/" + strconv.FormatUint(uint64(partition), 10)
}

// Rejections returns the offsets commit c recorded as rejected (for a
// dead-letter topic), per txn appId: rejectedKey's belong to the commit's
// one txn, rejectedByAppKey's name theirs.
func Rejections(c deltalog.Commit) (map[string][]uint64, error) {
	var info *deltalog.CommitInfo
	var txns []string
	for _, a := range c.Actions {
		switch a := a.(type) {
		case *deltalog.Txn:
			txns = append(txns, a.AppID)
		case *deltalog.CommitInfo:
			info = a
		}
	}
	if info == nil {
		return nil, nil
	}
	out := map[string][]uint64{}
	if raw := info.Other[rejectedByAppKey]; raw != nil {
		var byApp map[string]map[string][]uint64
		if err := json.Unmarshal(raw, &byApp); err != nil {
			return nil, fmt.Errorf("commit %d: commitInfo.%s: %w", c.Version, rejectedByAppKey, err)
		}
		for app, byReason := range byApp {
			for _, offs := range byReason {
				out[app] = append(out[app], offs...)
			}
		}
		return out, nil
	}
	if raw := info.Other[rejectedKey]; raw != nil {
		if len(txns) != 1 {
			return nil, fmt.Errorf("commit %d: commitInfo.%s with %d txn actions, want 1", c.Version, rejectedKey, len(txns))
		}
		var byReason map[string][]uint64
		if err := json.Unmarshal(raw, &byReason); err != nil {
			return nil, fmt.Errorf("commit %d: commitInfo.%s: %w", c.Version, rejectedKey, err)
		}
		for _, offs := range byReason {
			out[txns[0]] = append(out[txns[0]], offs...)
		}
	}
	return out, nil
}
