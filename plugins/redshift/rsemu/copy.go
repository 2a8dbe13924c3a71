package rsemu

import (
	"fmt"
	"regexp"
	"strings"
)

// copyStmt is a parsed Redshift COPY from S3 in Parquet format.
type copyStmt struct {
	table   qualifiedName
	columns []string // nil: every column of the table, in order
	url     string   // s3://bucket/prefix as written
	bucket  string
	prefix  string
	roles   []string // IAM role chain; the first must be attached
	// acceptInvChars replaces invalid UTF-8 in VARCHAR values when set.
	acceptInvChars string
	// manifest: url names a manifest listing the files (MANIFEST), not a
	// key prefix.
	manifest bool
}

// copyParams are every COPY parameter Redshift knows. Those not handled by
// parseCopy are refused with Redshift's "not supported for PARQUET" error.
var copyParams = map[string]bool{
	"acceptanydate": true, "acceptinvchars": true, "access_key_id": true, "avro": true,
	"blanksasnull": true, "bzip2": true, "comprows": true, "compupdate": true, "credentials": true,
	"csv": true, "dateformat": true, "delimiter": true, "emptyasnull": true, "encoding": true,
	"encrypted": true, "escape": true, "explicit_ids": true, "fillrecord": true, "fixedwidth": true,
	"format": true, "gzip": true, "iam_role": true, "ignoreallerrors": true, "ignoreblanklines": true,
	"ignoreheader": true, "json": true, "lzop": true, "manifest": true, "master_symmetric_key": true,
	"maxerror": true, "noload": true, "null": true, "readratio": true, "region": true,
	"removequotes": true, "roundec": true, "secret_access_key": true, "session_token": true,
	"shapefile": true, "ssh": true, "statupdate": true, "timeformat": true, "trimblanks": true,
	"truncatecolumns": true, "zstd": true, "parquet": true, "orc": true, "serializetojson": true,
	"quote": true, "addquotes": true,
}

// roleARN is the shape of an IAM role ARN Redshift accepts.
var roleARN = regexp.MustCompile(`^arn:aws(-[a-z]+)*:iam::\d{12}:role/[A-Za-z0-9+=,.@_/-]+$`)

const credentialsFormat = "Invalid credentials. Must be of the format: credentials " +
	"'aws_iam_role=...' or 'aws_access_key_id=...;aws_secret_access_key=...[;token=...]'"

// parseCopy parses COPY. Only COPY ... FROM 's3://...' ... FORMAT AS
// PARQUET with role-based authorization is emulated; everything else is
// refused loudly.
func parseCopy(text string, toks []token) (*copyStmt, *Error) {
	cs := &copyStmt{}
	name, i, err := parseQualifiedName(toks, 1)
	if err != nil {
		return nil, err
	}
	cs.table = name
	if tokText(toks, i) == "(" {
		cols, next, err := parseNameList(toks, i)
		if err != nil {
			return nil, err
		}
		cs.columns, i = cols, next
	}
	switch tokText(toks, i) {
	case "from":
	case "to":
		return nil, notEmulated("COPY TO (Redshift unloads with UNLOAD)")
	default:
		return nil, syntaxError(tokText(toks, i))
	}
	i++
	if i >= len(toks) {
		return nil, syntaxError("")
	}
	if toks[i].kind != tokString {
		if toks[i].val == "stdin" || toks[i].val == "program" {
			return nil, notEmulated("COPY FROM " + strings.ToUpper(toks[i].val) + " (Redshift loads from S3)")
		}
		return nil, syntaxError(toks[i].val)
	}
	cs.url = toks[i].val
	if !strings.HasPrefix(cs.url, "s3://") {
		return nil, notEmulated("COPY from " + cs.url + " (only s3:// sources are emulated)")
	}
	cs.bucket, cs.prefix, _ = strings.Cut(strings.TrimPrefix(cs.url, "s3://"), "/")
	if cs.bucket == "" {
		return nil, &Error{Code: CodeInternal, Message: "Invalid S3 URL: " + cs.url}
	}
	i++

	// The format decides how every other parameter is judged, and it may
	// come last, so find it first.
	format := ""
	for k := i; k < len(toks); k++ {
		if toks[k].kind != tokIdent {
			continue
		}
		switch toks[k].val {
		case "parquet", "orc", "csv", "json", "avro", "fixedwidth", "shapefile":
			if format == "" {
				format = toks[k].val
			}
		}
	}
	if format != "parquet" {
		if format == "" {
			format = "the default delimited text format"
		} else {
			format = strings.ToUpper(format)
		}
		return nil, notEmulated("COPY in " + format + " (only FORMAT AS PARQUET is emulated)")
	}

	var credentials string
	haveCredentials, haveRole := false, false
	for i < len(toks) {
		t := toks[i]
		if t.kind != tokIdent {
			return nil, syntaxError(t.val)
		}
		word := t.val
		i++
		optionalAs := func() {
			if tokText(toks, i) == "as" {
				i++
			}
		}
		stringArg := func() (string, *Error) {
			if i >= len(toks) || toks[i].kind != tokString {
				return "", syntaxError(tokText(toks, i))
			}
			i++
			return toks[i-1].val, nil
		}
		switch word {
		case "credentials":
			optionalAs()
			s, err := stringArg()
			if err != nil {
				return nil, err
			}
			credentials, haveCredentials = s, true
		case "iam_role":
			if tokText(toks, i) == "default" {
				i++
				cs.roles = []string{"default"}
			} else {
				s, err := stringArg()
				if err != nil {
					return nil, err
				}
				cs.roles = splitRoles(s)
			}
			haveRole = true
		case "format":
			optionalAs()
			if tokText(toks, i) != "parquet" {
				return nil, syntaxError(tokText(toks, i))
			}
			i++
		case "parquet":
		case "statupdate":
			switch tokText(toks, i) {
			case "on", "off", "true", "false":
				i++
			}
		case "acceptinvchars":
			optionalAs()
			cs.acceptInvChars = "?"
			if i < len(toks) && toks[i].kind == tokString {
				cs.acceptInvChars = toks[i].val
				i++
			}
		case "region":
			return nil, &Error{Code: CodeFeatureNotSupp, Message: "REGION argument is not supported for PARQUET based COPY"}
		case "access_key_id", "secret_access_key", "session_token":
			return nil, notEmulated("key-based COPY authorization (" + strings.ToUpper(word) + ")")
		case "manifest":
			cs.manifest = true
		case "fillrecord", "explicit_ids", "serializetojson":
			return nil, notEmulated(strings.ToUpper(word) + " in COPY")
		default:
			if copyParams[word] {
				return nil, &Error{Code: CodeFeatureNotSupp,
					Message: strings.ToUpper(word) + " argument is not supported for PARQUET based COPY"}
			}
			return nil, syntaxError(t.val)
		}
	}
	switch {
	case haveCredentials && haveRole:
		return nil, &Error{Code: CodeSyntax, Message: "conflicting or redundant options",
			Detail: "IAM_ROLE cannot be used with CREDENTIALS"}
	case haveCredentials:
		roles, err := parseCredentials(credentials)
		if err != nil {
			return nil, err
		}
		cs.roles = roles
	case !haveRole:
		return nil, &Error{Code: CodeInternal, Message: credentialsFormat}
	}
	return cs, nil
}

func splitRoles(s string) []string {
	var out []string
	for _, r := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(r))
	}
	return out
}

// parseCredentials reads a CREDENTIALS string. Only aws_iam_role is emulated.
func parseCredentials(s string) ([]string, *Error) {
	var roles []string
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, &Error{Code: CodeInternal, Message: credentialsFormat}
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "aws_iam_role":
			roles = splitRoles(v)
		case "aws_access_key_id", "aws_secret_access_key", "token":
			return nil, notEmulated("key-based COPY authorization in CREDENTIALS")
		default:
			return nil, &Error{Code: CodeInternal, Message: credentialsFormat}
		}
	}
	if len(roles) == 0 {
		return nil, &Error{Code: CodeInternal, Message: credentialsFormat}
	}
	return roles, nil
}

// authorize checks the role chain against the roles attached to the
// emulated cluster.
func (s *Server) authorize(roles []string) *Error {
	if len(roles) == 1 && roles[0] == "default" {
		return notEmulated("IAM_ROLE default")
	}
	for _, r := range roles {
		if !roleARN.MatchString(r) {
			return notAuthorized(r)
		}
	}
	if !s.roles[roles[0]] {
		return notAuthorized(roles[0])
	}
	return nil
}

func notAuthorized(role string) *Error {
	return &Error{
		Code:    CodeInternal,
		Message: "Not authorized to get credentials of role " + role,
		Detail: fmt.Sprintf("-----------------------------------------------\n"+
			"  error:  Not authorized to get credentials of role %s\n"+
			"  code:      30000\n"+
			"  context:   \n"+
			"  query:     0\n"+
			"  location:  xen_aws_credentials_mgr.cpp:402\n"+
			"  process:   padbmaster [pid=1]\n"+
			"  -----------------------------------------------", role),
	}
}
