#!/usr/bin/env bash
# Builds the release tarballs (make release VERSION=x.y.z), one per architecture:
#   dist/picomq-heavy-sinks-<version>-linux-<arch>.tar.gz
#   dist/picomq-heavy-sinks-<version>.SHA256SUMS      the tarballs' checksums
# Each tarball holds one directory, picomq-heavy-sinks-<version>-linux-<arch>/:
#   libpicomq_connector_{delta,redshift}_sink.so     the plugins, stripped
#   picomq-connect, picomq-host                      the runtime and the C host it runs plugins in
#   include/picomq_sink.h                            the ABI header
#   MANIFEST.txt      version, commit, Go version, glibc floor, `go version -m` of every Go artifact
#   sbom/<artifact>.cdx.json   a CycloneDX SBOM per Go artifact (cyclonedx-gomod, pinned below)
#   SHA256SUMS        of every other file in the directory
# The flat layout is dist/'s: picomq-connect --plugin-dir <that directory> finds the libraries, and
# it finds picomq-host next to itself.
#
# Reproducible: the same commit gives the same bytes, wherever it is checked out (make release-check
# tests it). Go builds with -trimpath, -buildvcs=false and an empty build ID; C compiles map the source
# directory away; tar entries are sorted, owned by 0:0 and dated from the commit (SOURCE_DATE_EPOCH);
# gzip writes no name or time. buildscripts/build.sh stays the development build.
#
# Environment:
#   VERSION              required, x.y.z (optionally -suffix); stamped into the plugins' describe()
#   RELEASE_ARCHES       default "amd64 arm64"; a non-native arch cross-compiles cgo with Debian's
#                        <triple>-gcc, apt-installed here when missing (as root, or with sudo)
#   RELEASE_OUT          output directory, default dist
#   RELEASE_TOOLS        where the pinned SBOM tool is installed, default .cache/tools
#   RELEASE_ALLOW_DIRTY  1 to build from a working tree with uncommitted changes (not a release)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

CYCLONEDX_GOMOD=github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0

die() { echo "release: $*" >&2; exit 1; }

VERSION=${VERSION:-}
[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
  die "VERSION must be x.y.z (got '${VERSION}'): make release VERSION=1.2.3"
ARCHES=${RELEASE_ARCHES:-amd64 arm64}
OUT=${RELEASE_OUT:-dist}
TOOLS=${RELEASE_TOOLS:-$ROOT/.cache/tools}
NAME=picomq-heavy-sinks-$VERSION

if [ -n "$(git status --porcelain)" ]; then
  [ "${RELEASE_ALLOW_DIRTY:-}" = 1 ] ||
    die "the working tree has uncommitted changes; a release is built from a commit (RELEASE_ALLOW_DIRTY=1 overrides)"
  echo "release: WARNING: building from a dirty tree" >&2
fi
COMMIT=$(git rev-parse HEAD)
# Every timestamp in the tarballs is the commit's.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}

# The environment must not change the bytes: only the flags below reach go build.
unset GOFLAGS GOEXPERIMENT CGO_CPPFLAGS CGO_CXXFLAGS CGO_LDFLAGS GOAMD64 GOARM64
export GOOS=linux CGO_ENABLED=1 LC_ALL=C TZ=UTC
GO_LDFLAGS="-s -w -buildid= -X github.com/picomq/heavy-sinks/shared/sdk.Version=${VERSION}"
GO_FLAGS=(-trimpath -buildvcs=false)
# gcc records the source directory in debug info and __FILE__; map it away. Go
# records CGO_CFLAGS in the build info only without -trimpath.
C_FLAGS="-O2 -ffile-prefix-map=$ROOT=."

# cross_cc <arch>: the C compiler for arch, installing Debian's cross gcc when missing.
cross_cc() {
  local triple pkg
  case $1 in
    amd64) triple=x86_64-linux-gnu pkg=x86-64-linux-gnu ;;
    arm64) triple=aarch64-linux-gnu pkg=aarch64-linux-gnu ;;
    *) die "unsupported arch $1 (amd64, arm64)" ;;
  esac
  if [ "$1" = "$(go env GOHOSTARCH)" ]; then
    echo "${CC:-gcc}"
    return
  fi
  if ! command -v "$triple-gcc" >/dev/null; then
    local sudo=
    if [ "$(id -u)" != 0 ]; then
      command -v sudo >/dev/null || die "linux/$1 needs $triple-gcc: apt-get install gcc-$pkg libc6-dev-$1-cross as root"
      sudo=sudo
    fi
    echo "release: installing gcc-$pkg and libc6-dev-$1-cross with apt-get (${sudo:-root})" >&2
    $sudo apt-get update -qq >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "gcc-$pkg" "libc6-dev-$1-cross" >&2
  fi
  echo "$triple-gcc"
}

# The pinned SBOM tool, built for this machine once.
SBOM_TOOL=$TOOLS/cyclonedx-gomod-${CYCLONEDX_GOMOD##*@}
if [ ! -x "$SBOM_TOOL" ]; then
  mkdir -p "$TOOLS"
  tmp=$(mktemp -d)
  GOOS= CGO_ENABLED=0 GOBIN=$tmp go install "$CYCLONEDX_GOMOD"
  mv "$tmp/cyclonedx-gomod" "$SBOM_TOOL"
  rmdir "$tmp"
fi

# glibc_floor <file>...: the newest GLIBC_x.y symbol version the files need.
glibc_floor() {
  readelf -W -V "$@" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1
}

# check_exports <so>: the library exports exactly the header's functions and the
# picomq_sink_v1_<member> shims its function table points at.
check_exports() {
  local want got
  want=$( {
    grep -oE '^[a-z_]+ \**picomq_[a-z0-9_]+\(' include/picomq_sink.h | grep -oE 'picomq_[a-z0-9_]+\(' | tr -d '('
    sed -n '/typedef struct picomq_sink_api/,/} picomq_sink_api;/p' include/picomq_sink.h |
      grep -oE '\(\*[a-z_]+\)' | tr -d '(*)' | sed 's/^/picomq_sink_v1_/'
  } | sort -u)
  got=$(readelf -W --dyn-syms "$1" |
    awk '$4 == "FUNC" && $5 == "GLOBAL" && $7 != "UND" && $8 ~ /^picomq_/ { print $8 }' | sort -u)
  [ "$want" = "$got" ] || die "$1 exports
$got
want
$want"
}

# size_budget <library>: the most bytes a stripped release library may have (issue 14). A dependency
# that drags in a large tree (Arrow through azblob >= v1.8.1, a generated cloud client) fails the
# release instead of shipping quietly.
size_budget() {
  case $1 in
    *_delta_sink.so) echo 25000000 ;;
    *_redshift_sink.so) echo 20000000 ;;
    *) echo 0 ;;
  esac
}

machine_of() { case $1 in amd64) echo 'Advanced Micro Devices X86-64' ;; arm64) echo AArch64 ;; esac; }

mkdir -p "$OUT"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
TARBALLS=()

for arch in $ARCHES; do
  cc=$(cross_cc "$arch")
  dir=$STAGE/$NAME-linux-$arch
  mkdir -p "$dir/include" "$dir/sbom"
  echo "== linux/$arch (CC=$cc)"
  export GOARCH=$arch CC=$cc CGO_CFLAGS=$C_FLAGS

  libs=()
  for cmd in plugins/*/cmd/sink; do
    [ -f "$cmd/main.go" ] || continue
    plugin=$(basename "$(dirname "$(dirname "$cmd")")")
    lib=libpicomq_connector_${plugin}_sink.so
    go build -buildmode=c-shared "${GO_FLAGS[@]}" -ldflags "$GO_LDFLAGS" -o "$dir/$lib" "./$cmd"
    rm -f "$dir/${lib%.so}.h" # cgo's generated header; the contract is include/picomq_sink.h
    libs+=("$lib")
  done
  # The runtime is pure Go: it never loads a plugin, it runs picomq-host.
  CGO_ENABLED=0 go build "${GO_FLAGS[@]}" -ldflags "$GO_LDFLAGS" -o "$dir/picomq-connect" ./cmd/picomq-connect
  "$cc" -std=c11 -Wall -Wextra -Werror $C_FLAGS -pthread -Iinclude -s \
    -o "$dir/picomq-host" cmd/picomq-host/picomq_host.c -ldl
  cp include/picomq_sink.h "$dir/include/"

  machine=$(machine_of "$arch")
  for f in "${libs[@]}" picomq-host picomq-connect; do
    readelf -h "$dir/$f" | grep -q "Machine: *$machine\$" || die "$f is not $machine"
  done
  for lib in "${libs[@]}"; do
    check_exports "$dir/$lib"
    size=$(stat -c %s "$dir/$lib") budget=$(size_budget "$lib")
    [ "$budget" = 0 ] || [ "$size" -le "$budget" ] || die "$lib is $size bytes, over its budget of $budget"
  done
  if leaked=$(grep -rlF "$ROOT" "$dir"); then die "the build directory $ROOT leaked into: $leaked"; fi
  glibc=$(cd "$dir" && glibc_floor "${libs[@]}" picomq-host)
  [ -n "$glibc" ] || die "no GLIBC_ symbol versions found in the libraries"

  gover=$(go env GOVERSION)
  for f in "${libs[@]}" picomq-connect; do
    (cd "$dir" && "$SBOM_TOOL" bin -json -std -noserial -notimestamp -version "v$VERSION" \
      -output "sbom/${f%.so}.cdx.json" "$f" 2>/dev/null)
  done
  {
    echo "$NAME linux/$arch"
    echo "version:  $VERSION"
    echo "commit:   $COMMIT"
    echo "date:     $(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
    echo "go:       $gover"
    echo "cc:       $("$cc" --version | head -1)"
    echo "glibc:    >= $glibc (newest GLIBC_ symbol version the libraries and picomq-host need; picomq-connect is static)"
    echo "sbom:     sbom/*.cdx.json, CycloneDX, by ${CYCLONEDX_GOMOD#*cmd/}"
    echo
    echo "Modules compiled into each Go artifact (go version -m):"
    for f in "${libs[@]}" picomq-connect; do
      echo
      (cd "$dir" && go version -m "$f")
    done
  } >"$dir/MANIFEST.txt"

  # Fixed modes: nothing depends on the umask.
  find "$dir" -type d -exec chmod 0755 {} +
  find "$dir" -type f -exec chmod 0644 {} +
  chmod 0755 "$dir"/*.so "$dir/picomq-host" "$dir/picomq-connect"
  (cd "$dir" && find . -type f ! -name SHA256SUMS -printf '%P\n' | sort | xargs sha256sum >SHA256SUMS)

  tarball=$OUT/$NAME-linux-$arch.tar.gz
  tar -C "$STAGE" --sort=name --format=gnu --mtime="@$SOURCE_DATE_EPOCH" \
    --owner=0 --group=0 --numeric-owner -cf - "$NAME-linux-$arch" | gzip -9n >"$tarball"
  TARBALLS+=("$tarball")

  echo "glibc floor (linux/$arch): $glibc"
  (cd "$dir" && stat -c '  %8s  %n' "${libs[@]}" picomq-host picomq-connect)
  echo "  $(stat -c %s "$tarball")  $tarball"
done

(cd "$OUT" && sha256sum "${TARBALLS[@]##*/}" >"$NAME.SHA256SUMS")
echo "== $OUT/$NAME.SHA256SUMS"
cat "$OUT/$NAME.SHA256SUMS"
