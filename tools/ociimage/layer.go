package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/picomq/heavy-sinks/tools/ociimage/spec"
)

// entry is one file of a layer: its header (name without a leading "./",
// directories ending in "/") and, for a regular file, its contents.
type entry struct {
	hdr  tar.Header
	data []byte
}

// files is a layer being assembled, by name.
type files map[string]*entry

func opener(b []byte) tarball.Opener {
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}

func baseNames(packages []string) []string {
	var out []string
	for _, p := range packages {
		out = append(out, filepath.Base(p))
	}
	return out
}

// skipped reports whether a package file stays out of the image:
// documentation, except each package's copyright (the licences of what
// the image ships).
func skipped(name string) bool {
	for _, dir := range []string{"usr/share/man/", "usr/share/lintian/", "usr/share/info/"} {
		if strings.HasPrefix(name, dir) {
			return true
		}
	}
	if rest, ok := strings.CutPrefix(name, "usr/share/doc/"); ok {
		pkg, file, _ := strings.Cut(rest, "/")
		return pkg != "" && file != "" && file != "copyright"
	}
	return false
}

// baseLayer is the Debian packages' files, as dpkg-deb extracts them,
// and what their maintainer scripts or an installer would have made
// that the runtime needs: the users, the CA bundle, /tmp, the
// definitions' mount point.
func baseLayer(packages []string, created time.Time) ([]byte, error) {
	fs := files{}
	for _, p := range packages {
		out, err := exec.Command("dpkg-deb", "--fsys-tarfile", p).Output()
		if err != nil {
			return nil, fmt.Errorf("dpkg-deb --fsys-tarfile %s: %w%s", p, err, stderrOf(err))
		}
		if err := fs.addTar(bytes.NewReader(out), "", skipped); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	// update-ca-certificates would concatenate the same certificates,
	// in the order of its configuration; here in name order.
	var bundle []byte
	for _, name := range slices.Sorted(maps.Keys(fs)) {
		if strings.HasPrefix(name, "usr/share/ca-certificates/") && strings.HasSuffix(name, ".crt") {
			bundle = append(bundle, fs[name].data...)
			if len(bundle) > 0 && bundle[len(bundle)-1] != '\n' {
				bundle = append(bundle, '\n')
			}
		}
	}
	if len(bundle) > 0 {
		fs.file("etc/ssl/certs/ca-certificates.crt", 0o644, bundle)
	}
	fs.file("etc/passwd", 0o644, fmt.Appendf(nil, "root:x:0:0:root:/root:/usr/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/usr/sbin/nologin\n", spec.UID, spec.UID))
	fs.file("etc/group", 0o644, fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", spec.UID))
	fs.file("etc/nsswitch.conf", 0o644, []byte("passwd: files\ngroup: files\nhosts: files dns\n"))
	fs.dir("tmp", 0o1777)
	fs.dir("home/nonroot", 0o755)
	fs.dir(strings.TrimPrefix(spec.DefinitionsDir, "/"), 0o755)
	return fs.tar(created)
}

// releaseLayer is the release tarball's one directory, under spec.AppDir, with
// its files' modes.
func releaseLayer(release string, created time.Time) ([]byte, error) {
	f, err := os.Open(release)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", release, err)
	}
	fs := files{}
	top := ""
	strip := func(name string) bool {
		first, _, _ := strings.Cut(strings.TrimPrefix(name, "./"), "/")
		if top == "" {
			top = first
		}
		return first != top
	}
	if err := fs.addTar(gz, strings.TrimPrefix(spec.AppDir, "/"), strip); err != nil {
		return nil, fmt.Errorf("%s: %w", release, err)
	}
	if len(fs) == 0 {
		return nil, fmt.Errorf("%s: empty", release)
	}
	return fs.tar(created)
}

// addTar adds the entries of a tar stream, named without a leading "./";
// under, when set, replaces each name's first element (the release's
// directory). skip leaves an entry out by its name as in the stream.
func (fs files) addTar(r io.Reader, under string, skip func(string) bool) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(h.Name, "./")
		if name == "" || name == "." || skip(name) {
			continue
		}
		if under != "" {
			_, rest, _ := strings.Cut(name, "/")
			if rest == "" {
				continue // the release's own directory: under takes its place
			}
			name = under + "/" + rest
		}
		e := &entry{hdr: tar.Header{Typeflag: h.Typeflag, Name: name, Mode: h.Mode & 0o7777}}
		switch h.Typeflag {
		case tar.TypeDir:
			e.hdr.Name = strings.TrimSuffix(name, "/") + "/"
		case tar.TypeReg:
			if e.data, err = io.ReadAll(tr); err != nil {
				return err
			}
		case tar.TypeSymlink:
			e.hdr.Linkname = h.Linkname
		case tar.TypeLink:
			e.hdr.Linkname = strings.TrimPrefix(h.Linkname, "./")
		default:
			return fmt.Errorf("%s: unsupported tar entry type %q", h.Name, h.Typeflag)
		}
		key := strings.TrimSuffix(e.hdr.Name, "/")
		if old, ok := fs[key]; ok {
			if old.hdr.Typeflag == tar.TypeDir && e.hdr.Typeflag == tar.TypeDir {
				continue // a directory two packages share
			}
			return fmt.Errorf("%s is in two packages", key)
		}
		fs[key] = e
	}
}

func (fs files) file(name string, mode int64, data []byte) {
	fs[name] = &entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode}, data: data}
}

func (fs files) dir(name string, mode int64) {
	fs[name] = &entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode}}
}

// tar writes the entries in name order (a directory before what it
// holds; missing parents added 0755), owned by 0:0, dated created.
func (fs files) tar(created time.Time) ([]byte, error) {
	for name := range maps.Keys(fs) {
		for p := path.Dir(name); p != "." && p != "/"; p = path.Dir(p) {
			if _, ok := fs[p]; !ok {
				fs.dir(p, 0o755)
			}
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(fs)) {
		e := fs[name]
		h := e.hdr
		h.Size = int64(len(e.data))
		h.ModTime = created
		h.Format = tar.FormatPAX // long names; no other PAX record is set
		if err := tw.WriteHeader(&h); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}
