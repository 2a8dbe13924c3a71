// Package spec is where the container image puts things and how it starts
// picomq-connect: tools/ociimage builds the image by it, and the tests of
// the image (e2e/release) and of the Kubernetes manifests (deploy/kubernetes)
// check against it, so the three cannot drift apart.
package spec

import "strconv"

const (
	// AppDir holds the release's files: picomq-connect, picomq-host, the
	// plugin libraries (--plugin-dir), the header, MANIFEST.txt, sbom/.
	AppDir = "/opt/picomq"
	// DefinitionsDir is where the sink definitions are mounted: the
	// image's default argument.
	DefinitionsDir = "/etc/picomq/definitions"
	// HTTPPort serves /healthz, /readyz, /status and /metrics.
	HTTPPort = 9464
	// UID and GID of the user nonroot the image runs as.
	UID = 65532
	// Repository is the image's name; its tag is the release version.
	Repository = "picomq/heavy-sinks"
)

// Entrypoint is the image's entrypoint; Cmd (the definitions directory)
// follows it, or the arguments that replace Cmd.
func Entrypoint() []string {
	return []string{AppDir + "/picomq-connect", "--plugin-dir", AppDir, "--http", ":" + strconv.Itoa(HTTPPort)}
}
