package definition

import (
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Client is what a block's properties table sets on its Kafka client,
// from the librdkafka consumer keys users actually set. A zero field keeps
// the client's default.
type Client struct {
	Brokers        []string      // bootstrap.servers; overrides the runtime's --brokers
	ClientID       string        // client.id
	SessionTimeout time.Duration // session.timeout.ms
	Heartbeat      time.Duration // heartbeat.interval.ms
	FetchMaxBytes  int32         // fetch.max.bytes
	PartitionBytes int32         // max.partition.fetch.bytes
	FetchMinBytes  int32         // fetch.min.bytes
	FetchMaxWait   time.Duration // fetch.wait.max.ms
	TLS            bool          // security.protocol SSL or SASL_SSL
	CAFile         string        // ssl.ca.location
	SASLMechanism  string        // sasl.mechanism(s): PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
	SASLUser       string        // sasl.username
	SASLPassword   Secret        // sasl.password
}

// Secret is a value never printed: fmt and slog show "[redacted]".
type Secret string

func (Secret) String() string   { return "[redacted]" }
func (Secret) GoString() string { return `"[redacted]"` }

// propertyByName indexes properties.
var propertyByName = func() map[string]*property {
	m := make(map[string]*property, len(properties))
	for i := range properties {
		m[properties[i].name] = &properties[i]
	}
	return m
}()

// PropertyNames lists the properties keys understood, sorted.
func PropertyNames() []string {
	names := make([]string, 0, len(properties))
	for _, p := range properties {
		names = append(names, p.name)
	}
	sort.Strings(names)
	return names
}

// client checks a block's properties table. Values may be TOML strings or,
// for the numeric keys, integers; librdkafka takes both as strings.
func (p *parsed) client(i int, props map[string]any) Client {
	var c Client
	k := func(name string) string { return blockKey(i, "properties."+name) }
	str := map[string]string{}
	for _, name := range sortedKeys(props) {
		prop, ok := propertyByName[name]
		if !ok {
			p.errorf(k(name), "not a property this runtime maps to its Kafka client (it understands %s)", strings.Join(PropertyNames(), ", "))
			continue
		}
		var s string
		var n int64
		switch v := props[name].(type) {
		case string:
			s = v
		case int64:
			s = strconv.FormatInt(v, 10)
		default:
			p.errorf(k(name), "want a string or an integer, got %T", v)
			continue
		}
		if prop.kind != "string" {
			var err error
			n, err = strconv.ParseInt(s, 10, 32)
			if err != nil || n <= 0 {
				p.errorf(k(name), "%q: want an integer in [1, %d]", s, int32(1<<31-1))
				continue
			}
		} else if s == "" {
			p.errorf(k(name), "empty")
			continue
		}
		str[name] = s
		if prop.set != nil {
			prop.set(&c, s, n)
		}
	}
	if _, ok := str["sasl.mechanism"]; ok {
		if _, both := str["sasl.mechanisms"]; both {
			p.errorf(k("sasl.mechanisms"), "set together with sasl.mechanism; keep one")
		}
	}
	protocols := propertyByName["security.protocol"].values
	switch proto := strings.ToUpper(str["security.protocol"]); {
	case proto == "" || slices.Contains(protocols, proto):
		c.TLS = strings.HasSuffix(proto, "SSL")
		sasl := strings.HasPrefix(proto, "SASL_")
		if sasl != (c.SASLMechanism != "") {
			p.errorf(k("security.protocol"), "%q with sasl.mechanism %q: SASL_PLAINTEXT or SASL_SSL go with a mechanism, the others without", str["security.protocol"], c.SASLMechanism)
		}
		if c.CAFile != "" && !c.TLS {
			p.errorf(k("ssl.ca.location"), "set without security.protocol SSL or SASL_SSL")
		}
	default:
		p.errorf(k("security.protocol"), "%q: want %s", str["security.protocol"], oneOf(protocols))
	}
	mechanisms := propertyByName["sasl.mechanism"].values
	switch {
	case c.SASLMechanism == "":
		if c.SASLUser != "" || c.SASLPassword != "" {
			p.errorf(k("sasl.username"), "sasl.username or sasl.password set without sasl.mechanism")
		}
	case slices.Contains(mechanisms, c.SASLMechanism):
		if c.SASLUser == "" || c.SASLPassword == "" {
			p.errorf(k("sasl.mechanism"), "%s needs sasl.username and sasl.password", c.SASLMechanism)
		}
	default:
		p.errorf(k("sasl.mechanism"), "%q: want %s", c.SASLMechanism, oneOf(mechanisms))
	}
	if c.CAFile != "" {
		if _, err := os.Stat(c.CAFile); err != nil {
			p.errorf(k("ssl.ca.location"), "%v", err)
		}
	}
	return c
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
