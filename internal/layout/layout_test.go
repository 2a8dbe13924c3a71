package layout

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv"
)

// pkgDir is one directory holding a Go package's non-test files.
type pkgDir struct {
	rel   string   // slash path from the repository root
	files []string // non-test .go files
}

func packages(t *testing.T, root string) []pkgDir {
	t.Helper()
	var out []pkgDir
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "dist" || name == "node_modules") {
			return filepath.SkipDir
		}
		ents, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		var files []string
		for _, e := range ents {
			n := e.Name()
			if !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
				files = append(files, n)
			}
		}
		if len(files) > 0 {
			rel, _ := filepath.Rel(root, path)
			out = append(out, pkgDir{rel: filepath.ToSlash(rel), files: files})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestReadmeNamesEveryPackage: each package directory is named in the
// Layout section of README.md in backticks, by its path, by a path pattern
// with * (plugins/*/cmd/sink), or, for a package below a named one, by its
// last element (`deltalog` in the plugins/delta row).
func TestReadmeNamesEveryPackage(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var named []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(section, -1) {
		named = append(named, strings.TrimSuffix(m[1], "/"))
	}
	covered := func(rel string) bool {
		for _, n := range named {
			if n == rel {
				return true
			}
			if ok, _ := filepath.Match(n, rel); ok && strings.Contains(n, "*") {
				return true
			}
		}
		// A sub-package by its path below a named parent
		// (plugins/delta's `internal/encode`).
		for _, n := range named {
			if i := strings.LastIndex(rel, "/"+n); strings.Contains(n, "/") && i > 0 && i+1+len(n) == len(rel) && slices.Contains(named, rel[:i]) {
				return true
			}
		}
		// A sub-package by its last element, under a named parent.
		parent, last := filepath.Dir(rel), filepath.Base(rel)
		return slices.Contains(named, last) && slices.ContainsFunc(named, func(n string) bool {
			return n == parent || strings.HasPrefix(parent, n+"/")
		})
	}
	for _, p := range packages(t, root) {
		if !covered(p.rel) {
			t.Errorf("README.md's Layout table does not name %s", p.rel)
		}
	}
}

var goFile = regexp.MustCompile(`\b[a-z0-9_]+\.go\b`)

// TestFileMapsNameTheirFiles: a package doc comment with a "File map"
// names every non-test .go file of its package but doc.go (the comment's
// own file), and only files that exist (tests may be named).
func TestFileMapsNameTheirFiles(t *testing.T) {
	root := repoRoot(t)
	maps := 0
	for _, p := range packages(t, root) {
		dir := filepath.Join(root, filepath.FromSlash(p.rel))
		var fileMap string
		for _, f := range p.files {
			af, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, f), nil, parser.ParseComments|parser.PackageClauseOnly)
			if err != nil {
				t.Fatal(err)
			}
			if af.Doc == nil {
				continue
			}
			if _, m, ok := strings.Cut(af.Doc.Text(), "File map"); ok {
				fileMap = m
				break
			}
		}
		if fileMap == "" {
			continue
		}
		maps++
		mentioned := goFile.FindAllString(fileMap, -1)
		for _, f := range p.files {
			if f != "doc.go" && !slices.Contains(mentioned, f) {
				t.Errorf("%s: the file map does not name %s", p.rel, f)
			}
		}
		for _, f := range mentioned {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s: the file map names %s, which is not a file of the package", p.rel, f)
			}
		}
	}
	if maps == 0 {
		t.Fatal("found no file map: the test looks in the wrong place")
	}
}

// TestCmdHoldsWhatShips: every program under cmd/ is built into the release
// by buildscripts/release.sh; developer programs live under tools/.
func TestCmdHoldsWhatShips(t *testing.T) {
	root := repoRoot(t)
	script, err := os.ReadFile(filepath.Join(root, "buildscripts", "release.sh"))
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() && !strings.Contains(string(script), "cmd/"+e.Name()) {
			t.Errorf("cmd/%s is not built by buildscripts/release.sh: a developer program belongs under tools/", e.Name())
		}
	}
	if len(ents) == 0 {
		t.Fatal("cmd/ is empty: the test looks in the wrong place")
	}
}
