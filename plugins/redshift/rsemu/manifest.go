package rsemu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// manifest is a COPY manifest as Redshift documents it ("Using a manifest
// to specify data files", COPY's MANIFEST parameter): the exact objects to
// load, each with an optional mandatory flag (default false) and, for ORC
// and Parquet, meta.content_length, the object's size in bytes.
type manifest struct {
	Entries []manifestEntry `json:"entries"`
}

type manifestEntry struct {
	URL       *string `json:"url"`
	Mandatory bool    `json:"mandatory"`
	Meta      *struct {
		ContentLength *int64 `json:"content_length"`
	} `json:"meta"`
}

// manifestSources reads the manifest at bucket/key and returns the files it
// lists that exist, in its order (a file listed twice is loaded twice).
// The manifest must be one object (not a prefix) and well-formed JSON; each
// url names a whole object, in any bucket; a Parquet entry without
// meta.content_length, a missing mandatory file, or no file found at all
// fails the COPY. Redshift's wording of these errors is not documented; the
// texts are the emulator's.
func (s *Server) manifestSources(ctx context.Context, bucket, key string) ([]source, *Error) {
	raw, e := s.getObject(ctx, bucket, key)
	if e != nil {
		return nil, e
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&m); err != nil || dec.More() || m.Entries == nil {
		why := "no \"entries\" array"
		if err != nil {
			why = err.Error()
		} else if dec.More() {
			why = "text after the JSON object"
		}
		return nil, manifestError(bucket, key, "Manifest file is not in correct json format: "+why)
	}
	var out []source
	for i, en := range m.Entries {
		if en.URL == nil || !strings.HasPrefix(*en.URL, "s3://") {
			return nil, manifestError(bucket, key, fmt.Sprintf("Manifest entry %d has no s3:// url", i))
		}
		if en.Meta == nil || en.Meta.ContentLength == nil || *en.Meta.ContentLength < 0 {
			return nil, manifestError(bucket, key, fmt.Sprintf(
				"Manifest entry %d (%s) has no meta.content_length: it is required to load Parquet files", i, *en.URL))
		}
		b, k, _ := strings.Cut(strings.TrimPrefix(*en.URL, "s3://"), "/")
		if b == "" || k == "" || strings.HasSuffix(k, "/") {
			return nil, manifestError(bucket, key, fmt.Sprintf("Manifest entry %d url %s does not name an object", i, *en.URL))
		}
		body, missing, e := s.getIfExists(ctx, b, k)
		if e != nil {
			return nil, e
		}
		if missing {
			if en.Mandatory {
				return nil, manifestError(bucket, key, fmt.Sprintf("Manifest entry %d: mandatory file %s is not found", i, *en.URL))
			}
			continue
		}
		out = append(out, source{bucket: b, key: k, length: *en.Meta.ContentLength, body: body})
	}
	if len(out) == 0 {
		return nil, manifestError(bucket, key, "None of the files listed in the manifest were found")
	}
	return out, nil
}

// getIfExists reads an object, reporting a missing key apart from other
// failures.
func (s *Server) getIfExists(ctx context.Context, bucket, key string) ([]byte, bool, *Error) {
	body, err := s.readObject(ctx, bucket, key)
	var nsk *types.NoSuchKey
	switch {
	case err == nil:
		return body, false, nil
	case errors.As(err, &nsk) || strings.Contains(err.Error(), "NoSuchKey"):
		return nil, true, nil
	}
	return nil, false, s3Error(err, bucket, key)
}

func manifestError(bucket, key, msg string) *Error {
	return &Error{Code: CodeInternal, Message: msg,
		Detail: "error: " + msg + "\ncode: 8001\ncontext: s3://" + bucket + "/" + key}
}
