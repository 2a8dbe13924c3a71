package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A plugin declares its plugin_config once, as a struct with tags:
//
//	type Config struct {
//		TableURI  string  `config:"table_uri,required,template" doc:"Table location as a URL"`
//		SecretKey string  `config:"aws_s3_secret_key,secret" doc:"S3 secret key"`
//		AllowHTTP *bool   `config:"aws_s3_allow_http" doc:"Allow http:// endpoints"`
//		BatchSize int     `config:"batch_size" default:"100" doc:"Rows per file"`
//	}
//
// Options after the key: required, secret, template (a string shown as type
// "template" in describe), destination (the key naming where records are
// written, e.g. a table URI: a runtime labels its freshness metrics with
// this key's value as configured, template placeholders unresolved; at most
// one field, never a secret one). Supported field types: string, bool, int, int64,
// float64, time.Duration, and pointers to them; a pointer stays nil when the
// key is absent and has no default. The same declaration drives decoding,
// environment overrides, describe() and the generated config reference.

// Field is one declared plugin_config key, as describe() lists it. Type is
// string, template (a string), bool, int, float or duration.
type Field struct {
	Key      string  `json:"key"`
	Type     string  `json:"type"`
	Default  *string `json:"default"`
	Required bool    `json:"required"`
	// NonEmpty marks a required string that must not be empty either (a
	// plain string field); a required pointer field may be set to "".
	// Absent from describe() when false, and from older plugins: a runtime
	// checking a definition then lets "" pass and leaves it to open.
	NonEmpty    bool   `json:"non_empty,omitempty"`
	Secret      bool   `json:"secret"`
	Description string `json:"description"`
	// Destination marks the key that names where records are written (a
	// table URI or table name, usually a template): a runtime reads its
	// configured value as a bounded label (Destination). Absent when
	// false, and from older plugins.
	Destination bool `json:"destination,omitempty"`

	index []int
	isPtr bool
}

// Schema is the parsed declaration of a config struct.
type Schema struct {
	typ    reflect.Type
	Fields []Field
}

var durationType = reflect.TypeOf(time.Duration(0))

// SchemaOf reads the declaration of the struct type T.
func SchemaOf[T any]() (*Schema, error) {
	return schemaOfType(reflect.TypeOf((*T)(nil)).Elem())
}

func schemaOfType(t reflect.Type) (*Schema, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("config type %s is not a struct", t)
	}
	s := &Schema{typ: t}
	byKey := map[string]bool{}
	destinations := 0
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("config")
		if !ok || tag == "-" {
			continue
		}
		parts := strings.Split(tag, ",")
		f := Field{Key: parts[0], Description: sf.Tag.Get("doc"), index: sf.Index}
		if f.Key == "" {
			return nil, fmt.Errorf("config field %s has an empty key", sf.Name)
		}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			f.isPtr = true
			ft = ft.Elem()
		}
		switch kind := ft.Kind(); {
		case ft == durationType:
			f.Type = "duration"
		case kind == reflect.String:
			f.Type = "string"
		case kind == reflect.Bool:
			f.Type = "bool"
		case kind == reflect.Int || kind == reflect.Int64:
			f.Type = "int"
		case kind == reflect.Float64:
			f.Type = "float"
		default:
			return nil, fmt.Errorf("config field %s: unsupported type %s", sf.Name, sf.Type)
		}
		for _, opt := range parts[1:] {
			switch opt {
			case "required":
				f.Required = true
			case "secret":
				f.Secret = true
			case "template":
				if f.Type != "string" {
					return nil, fmt.Errorf("config field %s: template needs a string", sf.Name)
				}
				f.Type = "template"
			case "destination":
				f.Destination = true
				destinations++
			default:
				return nil, fmt.Errorf("config field %s: unknown option %q", sf.Name, opt)
			}
		}
		if d, ok := sf.Tag.Lookup("default"); ok {
			f.Default = &d
			if _, err := parseString(&f, d); err != nil {
				return nil, fmt.Errorf("config field %s: bad default: %v", sf.Name, err)
			}
		}
		f.NonEmpty = f.Required && !f.isPtr && ft.Kind() == reflect.String
		if f.Destination && (f.Secret || f.Type != "string" && f.Type != "template") {
			return nil, fmt.Errorf("config field %s: a destination is a string that is not secret", sf.Name)
		}
		if byKey[f.Key] {
			return nil, fmt.Errorf("config key %q declared twice", f.Key)
		}
		byKey[f.Key] = true
		s.Fields = append(s.Fields, f)
	}
	if destinations > 1 {
		return nil, fmt.Errorf("config of %s declares %d destination keys; at most one", t, destinations)
	}
	return s, nil
}

// Env is how Decode reads the environment: a lookup and the full list (to
// find overrides that name no known key).
type Env struct {
	Lookup  func(string) (string, bool)
	Environ []string
}

// EnvFrom makes an Env of "NAME=value" entries, as os.Environ returns them.
// When a name appears twice the first entry wins, as with getenv(3).
func EnvFrom(environ []string) Env {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, dup := m[name]; !dup {
			m[name] = val
		}
	}
	return Env{
		Lookup:  func(name string) (string, bool) { v, ok := m[name]; return v, ok },
		Environ: environ,
	}
}

// EnvPrefix is the prefix of the environment overrides for a sink key:
// PICOMQ_CONNECTORS_SINK_<KEY>_PLUGIN_CONFIG_. The key is upper-cased and
// anything outside [A-Z0-9_] becomes '_' so every key yields a valid name.
func EnvPrefix(sinkKey string) string {
	return "PICOMQ_CONNECTORS_SINK_" + envName(sinkKey) + "_PLUGIN_CONFIG_"
}

func envName(s string) string {
	b := []byte(strings.ToUpper(s))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Decoded is the outcome of Decode besides the filled struct.
type Decoded struct {
	Warnings []string // things to log at warn level
	Secrets  []string // values of secret keys, to be redacted everywhere
}

// Decode fills dst (a pointer to the schema's struct) from defaults, then the
// plugin_config JSON object, then environment overrides (env wins). A value
// of the wrong type, a plugin_config key the schema does not declare, an
// override for this sink key naming no declared key, and a required key
// left unset are BAD_CONFIG errors naming the key (and the nearest declared
// one), every problem in one error: a typo such as "exactly_onse" must not
// silently leave the default in force. Secret values never appear in
// errors.
func (s *Schema) Decode(raw json.RawMessage, sinkKey string, env Env, dst any) (Decoded, error) {
	var out Decoded
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Type() != s.typ {
		return out, fmt.Errorf("Decode: dst must be *%s", s.typ)
	}
	v = v.Elem()
	r := resolve(s.Fields, raw, sinkKey, env)
	out.Warnings = r.warnings
	if len(r.problems) > 0 {
		return out, BadConfigf("%s", strings.Join(r.problems, "; "))
	}
	for i, val := range r.vals {
		if val == nil {
			continue
		}
		assign(v, &s.Fields[i], val)
		if str, ok := val.(string); ok && s.Fields[i].Secret && str != "" {
			out.Secrets = append(out.Secrets, str)
		}
	}
	return out, nil
}

// CheckConfig returns every problem Decode would refuse plugin_config raw
// for, with the environment overrides of sinkKey in env, given the fields
// as describe() lists them; nil when there is none. The messages are
// Decode's. A runtime checks a definition with it without opening
// anything: what only the plugin's open can judge (a table that does not
// exist, a URI it parses, an endpoint) passes here.
func CheckConfig(fields []Field, raw json.RawMessage, sinkKey string, env Env) []string {
	return resolve(fields, raw, sinkKey, env).problems
}

// Destination returns the value of the key fields mark as the destination
// (describe()'s "destination": true), from the defaults, plugin_config raw
// and the environment overrides of sinkKey in env, as Decode would set it:
// the configured text, a template's placeholders unresolved, so one value
// per sink. It is "" when no field is marked (an older plugin), when the
// key is unset, and for a field marked secret (never exposed).
func Destination(fields []Field, raw json.RawMessage, sinkKey string, env Env) string {
	i := slices.IndexFunc(fields, func(f Field) bool { return f.Destination })
	if i < 0 || fields[i].Secret {
		return ""
	}
	s, _ := resolve(fields, raw, sinkKey, env).vals[i].(string)
	return s
}

// resolved is a plugin_config checked against its declaration.
type resolved struct {
	vals     []any // per field, in declaration order; nil when unset
	warnings []string
	problems []string
}

// resolve applies the defaults, raw and the overrides to fields, in that
// order, and collects every problem; it needs only the declaration, not the
// struct it came from, so a runtime can run it on describe()'s fields.
func resolve(fields []Field, raw json.RawMessage, sinkKey string, env Env) resolved {
	r := resolved{vals: make([]any, len(fields))}
	obj := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(raw); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if err := json.Unmarshal(raw, &obj); err != nil {
			r.problems = []string{"plugin_config must be a JSON object"}
			return r
		}
	}
	byKey := make(map[string]int, len(fields))
	for i := range fields {
		byKey[fields[i].Key] = i
		if d := fields[i].Default; d != nil {
			r.vals[i], _ = parseString(&fields[i], *d)
		}
	}
	// A key whose value was refused is not reported as missing too.
	refused := make([]bool, len(fields))
	keys := sortedKeys(obj)
	for _, k := range keys {
		if _, ok := byKey[k]; !ok {
			r.problems = append(r.problems, unknownKey(fields, k))
		}
	}
	for _, k := range keys {
		i, ok := byKey[k]
		if !ok {
			continue
		}
		val, present, err := parseJSON(&fields[i], obj[k])
		switch {
		case err != nil:
			r.problems = append(r.problems, err.Error())
			refused[i] = true
		case present:
			r.vals[i] = val
		}
	}
	prefix := EnvPrefix(sinkKey)
	if env.Lookup != nil {
		for i := range fields {
			f := &fields[i]
			name := prefix + envName(f.Key)
			str, ok := env.Lookup(name)
			if !ok {
				continue
			}
			val, err := parseString(f, str)
			if err != nil {
				r.problems = append(r.problems, fmt.Sprintf("environment override %s for plugin_config key %q: %v", name, f.Key, redactValue(f, err)))
				refused[i] = true
				continue
			}
			r.vals[i] = val
		}
	}
	var unknown []string
	for _, kv := range env.Environ {
		name, _, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || fieldByEnvName(fields, rest) >= 0 {
			continue
		}
		if strings.Contains(rest, "_PLUGIN_CONFIG_") {
			// Another sink's key may extend this one's: the override
			// of key "a_plugin_config_b" for sink "a" reads the same
			// as field B of sink "a_plugin_config_b". Not ours to refuse.
			r.warnings = append(r.warnings, fmt.Sprintf("environment variable %s names no plugin_config key of this sink; ignored as another sink's", name))
			continue
		}
		unknown = append(unknown, unknownOverride(fields, prefix, rest))
	}
	slices.Sort(unknown)
	r.problems = append(r.problems, slices.Compact(unknown)...)
	for i := range fields {
		f := &fields[i]
		if f.Required && !refused[i] && (r.vals[i] == nil || f.NonEmpty && r.vals[i] == "") {
			r.problems = append(r.problems, fmt.Sprintf("plugin_config key %q is required", f.Key))
		}
	}
	return r
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// parseJSON reads one plugin_config value strictly by the declared type.
// JSON null counts as absent.
func parseJSON(f *Field, raw json.RawMessage) (any, bool, error) {
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("null")) {
		return nil, false, nil
	}
	wrong := func() error {
		return fmt.Errorf("plugin_config key %q: expected %s, got %s", f.Key, f.Type, jsonKind(raw))
	}
	switch f.Type {
	case "string", "template", "duration":
		var str string
		if json.Unmarshal(raw, &str) != nil {
			return nil, false, wrong()
		}
		if f.Type == "duration" {
			d, err := time.ParseDuration(str)
			if err != nil {
				return nil, false, fmt.Errorf("plugin_config key %q: %v", f.Key, redactValue(f, err))
			}
			return d, true, nil
		}
		return str, true, nil
	case "bool":
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return nil, false, wrong()
		}
		return b, true, nil
	case "float":
		var x float64
		if json.Unmarshal(raw, &x) != nil {
			return nil, false, wrong()
		}
		return x, true, nil
	case "int":
		// json.Number would also accept "10" in quotes; a config that
		// says a string where an int belongs is wrong and should say so.
		var n json.Number
		if jsonKind(raw) != "number" || json.Unmarshal(raw, &n) != nil {
			return nil, false, wrong()
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			got := n.String()
			if f.Secret {
				got = "a number that is not an int"
			}
			return nil, false, fmt.Errorf("plugin_config key %q: expected int, got %s", f.Key, got)
		}
		return i, true, nil
	default:
		// A type this SDK does not know, in a newer plugin's describe():
		// its open judges the value.
		return raw, true, nil
	}
}

func jsonKind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "number"
}

// parseString reads a default or an environment override.
func parseString(f *Field, s string) (any, error) {
	switch f.Type {
	case "duration":
		return time.ParseDuration(s)
	case "string", "template":
		return s, nil
	case "bool":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("cannot parse %q as bool", s)
		}
		return b, nil
	case "float":
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("cannot parse %q as float", s)
		}
		return x, nil
	case "int":
		i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cannot parse %q as int", s)
		}
		return i, nil
	default: // a type this SDK does not know; see parseJSON
		return s, nil
	}
}

// redactValue hides the offending value of a secret key from a parse error.
func redactValue(f *Field, err error) error {
	if f.Secret {
		return fmt.Errorf("cannot parse the value as %s", f.Type)
	}
	return err
}

func assign(v reflect.Value, f *Field, val any) {
	fv := v.FieldByIndex(f.index)
	target := fv
	if f.isPtr {
		target = reflect.New(fv.Type().Elem())
		fv.Set(target)
		target = target.Elem()
	}
	switch x := val.(type) {
	case string:
		target.SetString(x)
	case bool:
		target.SetBool(x)
	case int64:
		target.SetInt(x)
	case float64:
		target.SetFloat(x)
	case time.Duration:
		target.SetInt(int64(x))
	}
}

// Markdown renders the declaration as the config reference table used in
// the docs; a test in each plugin keeps its docs in sync with it.
func (s *Schema) Markdown() string {
	var b strings.Builder
	b.WriteString("| Key | Type | Default | Required | Secret | Meaning |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, f := range s.Fields {
		def := "none"
		if f.Default != nil {
			def = "`" + *f.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", f.Key, f.Type, def,
			yesNo(f.Required), yesNo(f.Secret), strings.ReplaceAll(f.Description, "|", "\\|"))
	}
	return b.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
