#!/usr/bin/env bash
# Builds the release artifacts into dist/:
#   dist/libpicomq_connector_<name>_sink.so  one per plugins/<name>/cmd/sink
#   dist/test/libpicomq_connector_test_{a,b}_sink.so  the ABI test plugin, twice
#                                        (two libraries = two Go runtimes in one host)
#   dist/picomq_sink.h                   the ABI header
#   dist/picomq-host                     the C host (cmd/picomq-host)
#   dist/picomq-connect                  the sink runtime (cmd/picomq-connect)
#   dist/SHA256SUMS
# The version is stamped from git (describe, or the commit when untagged).
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
LDFLAGS="-X github.com/picomq/heavy-sinks/shared/sdk.Version=${VERSION}"
export CGO_ENABLED=1

mkdir -p dist/test
build_so() { # <package dir> <output .so>
  go build -buildmode=c-shared -trimpath -ldflags "$LDFLAGS" -o "$2" "./$1"
  rm -f "${2%.so}.h" # cgo's generated header; the contract is include/picomq_sink.h
}

for cmd in plugins/*/cmd/sink; do
  [ -f "$cmd/main.go" ] || continue
  name=$(basename "$(dirname "$(dirname "$cmd")")")
  build_so "$cmd" "dist/libpicomq_connector_${name}_sink.so"
done
build_so e2e/testplugin dist/test/libpicomq_connector_test_a_sink.so
build_so e2e/testplugin dist/test/libpicomq_connector_test_b_sink.so

cp include/picomq_sink.h dist/
${CC:-gcc} -std=c11 -Wall -Wextra -Werror -O2 -pthread -Iinclude \
  -o dist/picomq-host cmd/picomq-host/picomq_host.c -ldl
# The runtime is pure Go: it never loads a plugin, it runs picomq-host.
CGO_ENABLED=0 go build -trimpath -o dist/picomq-connect ./cmd/picomq-connect

(cd dist && sha256sum $(ls *.so test/*.so 2>/dev/null) picomq_sink.h picomq-host picomq-connect > SHA256SUMS)
echo "built $VERSION:"
sed 's/^/  /' dist/SHA256SUMS
