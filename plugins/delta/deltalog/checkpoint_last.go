package deltalog

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// _last_checkpoint (PROTOCOL.md "Last Checkpoint File Schema"): the hint
// readers start from, written after a checkpoint and never moved backwards,
// with its checksum.

// LastCheckpoint is the _last_checkpoint file.
type LastCheckpoint struct {
	Version       int64  `json:"version"`
	Size          int64  `json:"size"`
	Parts         *int64 `json:"parts,omitempty"`
	SizeInBytes   int64  `json:"sizeInBytes"`
	NumOfAddFiles int64  `json:"numOfAddFiles"`
	// Checksum is filled in by WriteLastCheckpoint.
	Checksum string `json:"checksum,omitempty"`
}

// Putter is implemented by stores with an unconditional write (objstore's
// Put). WriteLastCheckpoint uses it to replace _last_checkpoint in one
// request where the store allows; a Put that refuses to replace an
// existing object (ErrAlreadyExists) falls back to delete + PutIfAbsent.
type Putter interface {
	Put(ctx context.Context, path string, data []byte) error
}

// WriteLastCheckpoint points _last_checkpoint at lc.Version unless it
// already names that version or a newer one; it reports whether it wrote.
// The file is only a hint (readers list the log from it and use any newer
// checkpoint they find), and the store offers no compare-and-swap on an
// existing object, so two writers racing here can at worst leave an older
// version in it for a moment; each re-reads after writing and repairs a
// regression it sees.
func WriteLastCheckpoint(ctx context.Context, store Store, lc LastCheckpoint) (bool, error) {
	lc.Checksum = ""
	raw, err := json.Marshal(lc)
	if err != nil {
		return false, err
	}
	sum, err := LastCheckpointChecksum(raw)
	if err != nil {
		return false, err
	}
	lc.Checksum = sum
	data, _ := json.Marshal(lc)
	wrote := false
	for attempt := 0; attempt < 4; attempt++ {
		cur, ok, err := readLastCheckpoint(ctx, store)
		if err != nil {
			return wrote, err
		}
		if ok && cur >= lc.Version {
			return wrote, nil
		}
		exists := ok
		if !ok {
			_, exists, err = StatObject(ctx, store, LastCheckpointPath)
			if err != nil {
				return wrote, err
			}
		}
		err = replaceObject(ctx, store, LastCheckpointPath, data, exists)
		if errors.Is(err, ErrAlreadyExists) {
			continue // someone wrote it in between: look again
		}
		if err != nil {
			return wrote, err
		}
		wrote = true
	}
	return wrote, nil
}

func replaceObject(ctx context.Context, store Store, path string, data []byte, exists bool) error {
	if !exists {
		return store.PutIfAbsent(ctx, path, data)
	}
	if p, ok := store.(Putter); ok {
		err := p.Put(ctx, path, data)
		if err == nil || !errors.Is(err, ErrAlreadyExists) {
			return err
		}
	}
	if err := store.Delete(ctx, path); err != nil {
		return err
	}
	return store.PutIfAbsent(ctx, path, data)
}

// LastCheckpointChecksum computes the checksum field of a _last_checkpoint
// JSON (PROTOCOL.md "JSON checksum"): MD5 over the canonical form, any
// top-level checksum key ignored.
func LastCheckpointChecksum(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("deltalog: _last_checkpoint: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return "", errors.New("deltalog: _last_checkpoint is not a JSON object")
	}
	delete(obj, "checksum")
	var pairs [][2]string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		join := func(seg string) string {
			if path == "" {
				return seg
			}
			return path + "+" + seg
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(join(`"`+canonicalEscape(k)+`"`), e)
			}
		case []any:
			for i, e := range x {
				walk(join(strconv.Itoa(i)), e)
			}
		case string:
			pairs = append(pairs, [2]string{path, `"` + canonicalEscape(x) + `"`})
		case json.Number:
			pairs = append(pairs, [2]string{path, x.String()})
		case bool:
			pairs = append(pairs, [2]string{path, strconv.FormatBool(x)})
		case nil:
			pairs = append(pairs, [2]string{path, "null"})
		}
	}
	walk("", obj)
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p[0] + "=" + p[1])
	}
	sum := md5.Sum([]byte(b.String()))
	return hex.EncodeToString(sum[:]), nil
}

// canonicalEscape percent-encodes every octet but a-z A-Z 0-9 - . _ ~.
func canonicalEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
	return b.String()
}
