package deltalog

import (
	"fmt"
	"strconv"
	"strings"
)

// LogDir is the log directory relative to the table root, with its slash.
const LogDir = "_delta_log/"

// LastCheckpointPath is the _last_checkpoint hint file.
const LastCheckpointPath = LogDir + "_last_checkpoint"

// CommitPath returns the path of the commit file for version.
func CommitPath(version int64) string {
	return fmt.Sprintf("%s%020d.json", LogDir, version)
}

// versionPrefix is the listing position just before every file of version v:
// "…/00000000000000000042" sorts before "…/00000000000000000042.json" and
// after every file of v-1.
func versionPrefix(v int64) string { return fmt.Sprintf("%s%020d", LogDir, v) }

type logFileKind int

const (
	fileCommit logFileKind = iota + 1
	fileCheckpointClassic
	fileCheckpointMultiPart
	fileCheckpointV2JSON
	fileCheckpointV2Parquet
)

// logFile is a parsed _delta_log entry that matters to snapshot loading.
type logFile struct {
	FileInfo
	kind    logFileKind
	version int64
	part    int // multi-part only: 1-based part number
	parts   int // multi-part only: number of parts
}

// parseLogFile recognizes commit and checkpoint files directly under
// _delta_log/. Everything else — .crc files, x.y.compacted.json, temp files,
// _last_checkpoint, sub-directories (_sidecars, _commits, _staged_commits),
// malformed names — returns ok=false and is ignored.
func parseLogFile(fi FileInfo) (logFile, bool) {
	name, ok := strings.CutPrefix(fi.Path, LogDir)
	if !ok || strings.Contains(name, "/") || len(name) < 21 || name[20] != '.' {
		return logFile{}, false
	}
	v, ok := parseDigits(name[:20])
	if !ok {
		return logFile{}, false
	}
	lf := logFile{FileInfo: fi, version: v}
	rest := name[21:]
	if rest == "json" {
		lf.kind = fileCommit
		return lf, true
	}
	rest, ok = strings.CutPrefix(rest, "checkpoint.")
	if !ok {
		return logFile{}, false
	}
	if rest == "parquet" {
		lf.kind = fileCheckpointClassic
		return lf, true
	}
	// Multi-part: %010d.%010d.parquet
	if len(rest) == 10+1+10+len(".parquet") && rest[10] == '.' && strings.HasSuffix(rest, ".parquet") {
		part, ok1 := parseDigits(rest[:10])
		parts, ok2 := parseDigits(rest[11:21])
		if ok1 && ok2 && parts >= 1 && part >= 1 && part <= parts {
			lf.kind = fileCheckpointMultiPart
			lf.part, lf.parts = int(part), int(parts)
			return lf, true
		}
		return logFile{}, false
	}
	// UUID-named V2: <uuid>.json | <uuid>.parquet
	id, ext, ok := strings.Cut(rest, ".")
	if !ok || !looksLikeUUID(id) {
		return logFile{}, false
	}
	switch ext {
	case "json":
		lf.kind = fileCheckpointV2JSON
	case "parquet":
		lf.kind = fileCheckpointV2Parquet
	default:
		return logFile{}, false
	}
	return lf, true
}

func parseDigits(s string) (int64, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// looksLikeUUID accepts the canonical 8-4-4-4-12 hex form.
func looksLikeUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
