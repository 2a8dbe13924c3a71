package release_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/picomq/heavy-sinks/tools/ociimage/spec"
)

// imageFile is one entry of the image's file system, both layers applied.
type imageFile struct {
	hdr  tar.Header
	data []byte
}

// TestImage builds the container image (buildscripts/image.sh) of the
// amd64 release twice and reads it back without a container engine (none
// can run here): the same digest both times; an OCI layout and a docker-load
// tarball; the config's user, entrypoint, argument, environment, port and
// labels; every file of the release under spec.AppDir with its mode and
// bytes; every entry owned by 0:0 and dated at the commit; and, in the base
// layer, the ELF interpreter and the libraries the release's binaries need,
// with a libc that defines the glibc version they need.
func TestImage(t *testing.T) {
	root := repoRoot(t)
	tarball := sharedRelease(t)
	outs := []string{t.TempDir(), t.TempDir()}
	var digests []string
	for _, out := range outs {
		cmd := exec.Command(filepath.Join(root, "buildscripts", "image.sh"))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "VERSION="+version, "IMAGE_RELEASE_TARBALL="+tarball, "IMAGE_OUT="+out)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		stdout, err := cmd.Output()
		if err != nil {
			t.Fatalf("image.sh: %v\n%s", err, stderr.String())
		}
		t.Logf("image.sh (%s): %s", time.Since(start).Round(time.Second), stdout)
		digests = append(digests, strings.TrimSpace(string(stdout)))
	}
	if digests[0] != digests[1] || !strings.HasPrefix(digests[0], "sha256:") {
		t.Fatalf("two builds, digests %q and %q", digests[0], digests[1])
	}
	name := "picomq-heavy-sinks-" + version + "-image-linux-amd64"
	if a, b := readFile(t, filepath.Join(outs[0], name+".tar")), readFile(t, filepath.Join(outs[1], name+".tar")); !bytes.Equal(a, b) {
		t.Errorf("the two docker tarballs differ")
	}

	idx, err := layout.ImageIndexFromPath(filepath.Join(outs[0], name))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != digests[0] ||
		im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
		t.Fatalf("OCI layout index %+v, want one image %s tagged %s", im.Manifests, digests[0], version)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	commitTime, err := strconv.ParseInt(git(t, root, "log", "-1", "--format=%ct", "HEAD"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	checkImageConfig(t, img, time.Unix(commitTime, 0).UTC(), git(t, root, "rev-parse", "HEAD"))
	fs := imageFS(t, img, commitTime)
	files := checkReleaseFiles(t, fs, tarball)
	checkBase(t, fs, files)
	checkDockerTar(t, filepath.Join(outs[0], name+".tar"), img)
	runImage(t, fs, img)
}

// runImage runs the image's entrypoint the nearest way this machine can
// without a container engine: its file system extracted, chrooted into,
// as the image's user, with the image's environment: picomq-connect
// --check on the example definitions, which loads each plugin library in
// the image's picomq-host through the image's dynamic loader and libc.
// chroot needs root; as another user this part is reported and skipped.
// An engine adds namespaces, cgroups and mounts (/dev, /proc); of those
// picomq-host needs /dev/null, made here.
func runImage(t *testing.T, fs map[string]imageFile, img v1.Image) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Log("not root: the image's entrypoint was not run in a chroot")
		return
	}
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range slices.Sorted(maps.Keys(fs)) {
		f, dst := fs[p], filepath.Join(root, p)
		var err error
		switch f.hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(dst, 0o755)
			if err == nil {
				err = os.Chmod(dst, os.FileMode(f.hdr.Mode&0o777)|modeBits(f.hdr.Mode))
			}
		case tar.TypeReg:
			err = os.WriteFile(dst, f.data, os.FileMode(f.hdr.Mode&0o777))
			if err == nil {
				err = os.Chmod(dst, os.FileMode(f.hdr.Mode&0o777))
			}
		case tar.TypeSymlink:
			err = os.Symlink(f.hdr.Linkname, dst)
		case tar.TypeLink:
			err = os.Link(filepath.Join(root, f.hdr.Linkname), dst)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// /dev/null, which every engine provides (picomq-host's stdin): the
	// image has no /dev of its own, as images do not.
	null := filepath.Join(root, "dev", "null")
	if err := os.MkdirAll(filepath.Dir(null), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err != nil { // major 1, minor 3
		t.Fatal(err)
	}
	if err := os.Chmod(null, 0o666); err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Glob(filepath.Join(repoRoot(t), "examples", "definitions", "*.toml"))
	for _, e := range examples {
		if err := os.WriteFile(filepath.Join(root, spec.DefinitionsDir, filepath.Base(e)), readFile(t, e), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	args := append(slices.Clone(c.Entrypoint[1:]), "--check")
	args = append(args, c.Cmd...)
	cmd := exec.Command(c.Entrypoint[0], args...)
	cmd.Dir, cmd.Env = "/", c.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: spec.UID, Gid: spec.UID}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("%d definition(s) OK, %d enabled", len(examples), len(examples))) {
		t.Fatalf("%s %q in a chroot of the image as %d: %v\n%s", c.Entrypoint[0], args, spec.UID, err, out)
	}
	t.Logf("in a chroot of the image as uid %d: %s %q: %s", spec.UID, c.Entrypoint[0], args, strings.TrimSpace(string(out)))
}

// modeBits is the setuid, setgid and sticky bits of a tar mode as Go's.
func modeBits(m int64) os.FileMode {
	var b os.FileMode
	if m&0o4000 != 0 {
		b |= os.ModeSetuid
	}
	if m&0o2000 != 0 {
		b |= os.ModeSetgid
	}
	if m&0o1000 != 0 {
		b |= os.ModeSticky
	}
	return b
}

func checkImageConfig(t *testing.T, img v1.Image, created time.Time, commit string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(created) {
		t.Errorf("os %s arch %s created %v, want linux amd64 %v", cf.OS, cf.Architecture, cf.Created, created)
	}
	if c.User != "65532:65532" || spec.UID != 65532 {
		t.Errorf("user %q", c.User)
	}
	if !slices.Equal(c.Entrypoint, spec.Entrypoint()) || !slices.Equal(c.Cmd, []string{spec.DefinitionsDir}) {
		t.Errorf("entrypoint %q cmd %q, want %q %q", c.Entrypoint, c.Cmd, spec.Entrypoint(), spec.DefinitionsDir)
	}
	if !slices.Contains(c.Entrypoint, ":"+strconv.Itoa(spec.HTTPPort)) {
		t.Errorf("entrypoint %q does not serve --http on %d", c.Entrypoint, spec.HTTPPort)
	}
	if _, ok := c.ExposedPorts[strconv.Itoa(spec.HTTPPort)+"/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("exposed ports %v", c.ExposedPorts)
	}
	if !slices.ContainsFunc(c.Env, func(e string) bool { return strings.HasPrefix(e, "PATH="+spec.AppDir+":") }) ||
		!slices.Contains(c.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
		t.Errorf("env %q", c.Env)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": commit,
		"org.opencontainers.image.created":  created.Format(time.RFC3339),
	} {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if len(cf.History) != 2 || len(cf.RootFS.DiffIDs) != 2 {
		t.Errorf("history %+v, %d layers; want the base and the release", cf.History, len(cf.RootFS.DiffIDs))
	}
	for _, h := range cf.History {
		if !h.Created.Time.Equal(created) {
			t.Errorf("history entry %q created %v", h.CreatedBy, h.Created)
		}
	}
}

// imageFS reads both layers (checking every entry is owned by 0:0 and
// dated at the commit) into the file system they make.
func imageFS(t *testing.T, img v1.Image, commitTime int64) map[string]imageFile {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	fs := map[string]imageFile{}
	for i, l := range layers {
		if mt, _ := l.MediaType(); mt != types.OCILayer {
			t.Errorf("layer %d media type %s", i, mt)
		}
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		var names []string
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, h.Name)
			if h.Uid != 0 || h.Gid != 0 || h.ModTime.Unix() != commitTime || h.Uname != "" || h.Gname != "" {
				t.Errorf("layer %d %s: owner %d:%d (%q:%q) mtime %d, want 0:0 at %d", i, h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime.Unix(), commitTime)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			fs["/"+strings.TrimSuffix(h.Name, "/")] = imageFile{hdr: *h, data: data}
		}
		rc.Close()
		if !slices.IsSorted(names) {
			t.Errorf("layer %d: entries not in name order", i)
		}
	}
	return fs
}

// checkReleaseFiles: every entry of the release tarball is under
// spec.AppDir with its type, mode and bytes. It returns the release's
// files by name in the release directory (TestReleaseTarball checks them).
func checkReleaseFiles(t *testing.T, fs map[string]imageFile, tarball string) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(readFile(t, tarball)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	n := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		_, rel, _ := strings.Cut(strings.TrimSuffix(h.Name, "/"), "/")
		p := spec.AppDir
		if rel != "" {
			p += "/" + rel
		}
		data, _ := io.ReadAll(tr)
		if h.Typeflag == tar.TypeReg {
			files[rel] = data
		}
		f, ok := fs[p]
		switch {
		case !ok:
			t.Errorf("release file %s not in the image at %s", h.Name, p)
		case f.hdr.Typeflag != h.Typeflag || f.hdr.Mode != h.Mode || !bytes.Equal(f.data, data):
			t.Errorf("%s: type %c mode %o %d bytes, release has %c %o %d bytes", p, f.hdr.Typeflag, f.hdr.Mode, len(f.data), h.Typeflag, h.Mode, len(data))
		}
		n++
	}
	if n != len(contents) {
		t.Errorf("%d release entries checked, want %d", n, len(contents))
	}
	return files
}

// checkBase: the base layer runs the release's binaries: their ELF
// interpreter and needed libraries resolve in the image, and its libc
// defines the newest GLIBC_ version they reference; the user, the CA
// bundle, /tmp and the definitions' mount point are there.
func checkBase(t *testing.T, fs map[string]imageFile, files map[string][]byte) {
	t.Helper()
	floor := glibcFloor(t, files, "amd64")
	for _, name := range []string{"libpicomq_connector_delta_sink.so", "libpicomq_connector_redshift_sink.so", "picomq-host"} {
		f, err := elf.NewFile(bytes.NewReader(files[name]))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type != elf.PT_INTERP {
				continue
			}
			b, _ := io.ReadAll(p.Open())
			interp := strings.TrimRight(string(b), "\x00")
			if _, ok := resolve(fs, interp); !ok {
				t.Errorf("%s: interpreter %s not in the image", name, interp)
			}
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			t.Fatal(err)
		}
		for _, lib := range libs {
			found := false
			for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"} {
				if l, ok := resolve(fs, dir+"/"+lib); ok {
					found = true
					if lib == "libc.so.6" {
						checkDefines(t, l, "GLIBC_"+floor)
					}
					break
				}
			}
			if !found {
				t.Errorf("%s needs %s, not in the image's library directories", name, lib)
			}
		}
	}
	if f := fs["/etc/passwd"]; !strings.Contains(string(f.data), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd %q", f.data)
	}
	if f := fs["/etc/ssl/certs/ca-certificates.crt"]; bytes.Count(f.data, []byte("BEGIN CERTIFICATE")) < 100 {
		t.Errorf("CA bundle of %d certificates", bytes.Count(f.data, []byte("BEGIN CERTIFICATE")))
	}
	if f, ok := fs["/tmp"]; !ok || f.hdr.Mode != 0o1777 {
		t.Errorf("/tmp mode %o", f.hdr.Mode)
	}
	if f, ok := fs[spec.DefinitionsDir]; !ok || f.hdr.Typeflag != tar.TypeDir {
		t.Errorf("no directory %s", spec.DefinitionsDir)
	}
}

// checkDefines fails unless the library defines the symbol version v.
func checkDefines(t *testing.T, lib imageFile, v string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(lib.data))
	if err != nil {
		t.Fatalf("%s: %v", lib.hdr.Name, err)
	}
	vs, err := f.DynamicVersions()
	if err != nil {
		t.Fatalf("%s: %v", lib.hdr.Name, err)
	}
	if !slices.ContainsFunc(vs, func(d elf.DynamicVersion) bool { return d.Name == v }) {
		t.Errorf("the image's %s does not define %s", lib.hdr.Name, v)
	}
}

// resolve follows symbolic links (absolute or relative) to a regular
// file of the image.
func resolve(fs map[string]imageFile, p string) (imageFile, bool) {
	for range 16 {
		f, ok := fs[p]
		if !ok {
			return f, false
		}
		switch f.hdr.Typeflag {
		case tar.TypeReg:
			return f, true
		case tar.TypeSymlink:
			if target := f.hdr.Linkname; path.IsAbs(target) {
				p = target
			} else {
				p = path.Join(path.Dir(p), target)
			}
		case tar.TypeLink:
			p = "/" + f.hdr.Linkname
		default:
			return f, false
		}
	}
	return imageFile{}, false
}

// checkDockerTar: the docker-load tarball names the image by its tag and
// holds its config and both layers.
func checkDockerTar(t *testing.T, path string, img v1.Image) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		entries[h.Name] = b
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(entries["manifest.json"], &manifest); err != nil || len(manifest) != 1 {
		t.Fatalf("docker tarball manifest.json %s: %v", entries["manifest.json"], err)
	}
	m := manifest[0]
	if !slices.Equal(m.RepoTags, []string{spec.Repository + ":" + version}) || len(m.Layers) != 2 {
		t.Errorf("docker tarball manifest %+v", m)
	}
	cfg, _ := img.RawConfigFile()
	if !bytes.Equal(entries[m.Config], cfg) {
		t.Errorf("docker tarball config %s is not the image's", m.Config)
	}
	for _, l := range m.Layers {
		if len(entries[l]) == 0 {
			t.Errorf("docker tarball layer %s missing", l)
		}
	}
}
