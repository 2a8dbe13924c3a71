// Command ociimage builds the container image of a release tarball
// (buildscripts/release.sh) on a base layer made of Debian packages, with
// no container engine and nothing pulled from a registry. make image runs
// it through buildscripts/image.sh, which downloads the pinned packages.
//
//	go run ./tools/ociimage -release dist/picomq-heavy-sinks-1.2.3-linux-amd64.tar.gz \
//	    -deb libc6_2.36-9+deb12u14_amd64.deb -deb ca-certificates_20230311+deb12u1_all.deb \
//	    -epoch 1767225600 -version 1.2.3 -revision <commit> \
//	    -layout dist/image -docker-tar dist/image.tar
//
// Two layers: the base (each package's files as `dpkg-deb --fsys-tarfile`
// gives them, without documentation but each package's copyright, plus
// /etc/passwd and /etc/group with the user nonroot (65532), the CA bundle
// the packages' certificates make, /tmp and the definitions' mount point),
// and the release's files under /opt/picomq. Reproducible: entries sorted,
// owned by 0:0 and dated at -epoch, as is every time in the config, so the
// same inputs give the same digest. It prints the manifest digest.
//
// File map: main.go (flags, the image), layer.go (the two layers' tar
// streams), spec/ (the paths, user, port and entrypoint the tests check).
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/picomq/heavy-sinks/tools/ociimage/spec"
)

type debs []string

func (d *debs) String() string     { return strings.Join(*d, ",") }
func (d *debs) Set(s string) error { *d = append(*d, s); return nil }

func main() {
	var packages debs
	release := flag.String("release", "", "release tarball (buildscripts/release.sh), one linux/amd64 directory")
	flag.Var(&packages, "deb", "a Debian package of the base layer (repeat)")
	epoch := flag.Int64("epoch", -1, "SOURCE_DATE_EPOCH: every time in the image")
	version := flag.String("version", "", "the release version (image tag and label)")
	revision := flag.String("revision", "", "the commit (label)")
	arch := flag.String("arch", "amd64", "the release's and the packages' architecture")
	layoutDir := flag.String("layout", "", "write an OCI image layout directory here (replaced)")
	dockerTar := flag.String("docker-tar", "", "write a `docker load` tarball here")
	flag.Parse()
	if *release == "" || len(packages) == 0 || *epoch < 0 || *version == "" || (*layoutDir == "" && *dockerTar == "") {
		flag.Usage()
		os.Exit(2)
	}
	created := time.Unix(*epoch, 0).UTC()
	img, err := build(*release, packages, created, *version, *revision, *arch)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
	ref, err := name.NewTag(spec.Repository + ":" + *version)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
	if err := write(img, ref, *layoutDir, *dockerTar); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
	d, err := img.Digest()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
	fmt.Println(d)
}

// build assembles the image: base layer, release layer, config.
func build(release string, packages []string, created time.Time, version, revision, arch string) (v1.Image, error) {
	base, err := baseLayer(packages, created)
	if err != nil {
		return nil, err
	}
	app, err := releaseLayer(release, created)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	t := v1.Time{Time: created}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: layer(base), History: v1.History{Created: t, CreatedBy: "ociimage: Debian packages " + strings.Join(baseNames(packages), " ")}},
		mutate.Addendum{Layer: layer(app), History: v1.History{Created: t, CreatedBy: "ociimage: release " + version + " in " + spec.AppDir}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = arch, "linux", t
	cf.Config = v1.Config{
		User: fmt.Sprintf("%d:%d", spec.UID, spec.UID),
		// Probes reach /healthz and /readyz on the fixed port; the
		// definitions directory is the default argument, so that flags
		// such as --brokers go in front of it (docs/deploy.md).
		Entrypoint:   spec.Entrypoint(),
		Cmd:          []string{spec.DefinitionsDir},
		Env:          []string{"PATH=" + spec.AppDir + ":/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		WorkingDir:   "/",
		ExposedPorts: map[string]struct{}{strconv.Itoa(spec.HTTPPort) + "/tcp": {}},
		StopSignal:   "SIGTERM",
		Labels: map[string]string{
			"org.opencontainers.image.title":       "picomq-heavy-sinks",
			"org.opencontainers.image.description": "picomq-connect with the Delta Lake and Redshift sink plugins",
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.revision":    revision,
			"org.opencontainers.image.created":     created.Format(time.RFC3339),
			"org.opencontainers.image.source":      "https://github.com/picomq/heavy-sinks",
			"org.opencontainers.image.base.name":   "debian packages: " + strings.Join(baseNames(packages), " "),
		},
	}
	return mutate.ConfigFile(img, cf)
}

// layer makes an OCI layer of a tar stream, gzip-compressed by the
// library (no name or time in the gzip header: the same bytes each time).
func layer(tarBytes []byte) v1.Layer {
	l, err := tarball.LayerFromOpener(opener(tarBytes), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		panic(err) // only an opener's failure, and ours cannot fail
	}
	return l
}

// write puts img in an OCI layout directory and/or a docker-load tarball.
func write(img v1.Image, ref name.Tag, dir, dockerTar string) error {
	if dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		p, err := layout.Write(dir, empty.Index)
		if err != nil {
			return err
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": ref.TagStr(),
			"io.containerd.image.name":          ref.String(),
		})); err != nil {
			return err
		}
	}
	if dockerTar != "" {
		if err := tarball.WriteToFile(dockerTar, ref, img); err != nil {
			return err
		}
	}
	return nil
}
