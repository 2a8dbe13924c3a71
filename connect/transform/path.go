package transform

import (
	"errors"
	"fmt"
	"strings"
)

// modify follows path from o to the object holding its last name and calls
// fn with that object and the name; parent is nil when a level on the way
// is missing or null. When fn changed something, each nested level on the
// way is written again (into s.arena) and put back in its parent, so the
// levels a path does not cross keep their bytes. A level that is neither
// an object nor null is the record's error: the path goes through it.
func modify(s *state, o *object, path []string, fn func(parent *object, name string) (changed bool, err error)) (bool, error) {
	if len(path) == 1 {
		return fn(o, path[0])
	}
	i := o.find(path[0])
	if i < 0 || string(o.members[i].value) == "null" {
		return fn(nil, path[len(path)-1])
	}
	var child object
	if _, isObj := parseObjectInto(o.members[i].value, &child, &s.arena); !isObj {
		return false, fmt.Errorf("field %q is %s, not an object", path[0], kindOf(o.members[i].value))
	}
	changed, err := modify(s, &child, path[1:], fn)
	if err != nil {
		var pe *pathError
		if errors.As(err, &pe) {
			return false, &pathError{prefix: path[0] + "." + pe.prefix, err: pe.err}
		}
		return false, &pathError{prefix: path[0], err: err}
	}
	if changed {
		start := len(s.arena)
		s.arena = child.appendTo(s.arena)
		o.members[i].value = s.arena[start:len(s.arena):len(s.arena)]
	}
	return changed, nil
}

// pathError names the nested level an error was found under.
type pathError struct {
	prefix string
	err    error
}

func (e *pathError) Error() string { return "under " + e.prefix + ": " + e.err.Error() }

// get returns the value at path, or found false when the path (or a level
// on the way) is missing or null there.
func get(s *state, path []string) (value []byte, found bool, err error) {
	_, err = modify(s, &s.o, path, func(parent *object, name string) (bool, error) {
		if parent == nil {
			return false, nil
		}
		if i := parent.find(name); i >= 0 {
			value, found = parent.members[i].value, true
		}
		return false, nil
	})
	return value, found, err
}

// kindOf names the kind of a JSON value for messages.
func kindOf(v []byte) string {
	if len(v) == 0 {
		return "empty"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func joinPath(p []string) string { return strings.Join(p, ".") }
