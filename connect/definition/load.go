package definition

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Load reads the definitions named: each path is a .toml file, or a
// directory whose *.toml files (not its subdirectories) are read in name
// order. It checks every file and returns every problem found, and refuses
// two definitions with one key.
func Load(paths ...string) ([]*Definition, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		m, err := filepath.Glob(filepath.Join(p, "*.toml"))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no *.toml sink definitions", p)
		}
		sort.Strings(m)
		files = append(files, m...)
	}
	var defs []*Definition
	var errs []error
	byKey := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d, err := Parse(f, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, dup := byKey[strings.ToLower(d.Key)]; dup {
			errs = append(errs, &Error{File: f, Key: "key", Msg: fmt.Sprintf("%q is the key of %s too", d.Key, prev)})
			continue
		}
		byKey[strings.ToLower(d.Key)] = f
		defs = append(defs, d)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return defs, nil
}
