#!/usr/bin/env bash
# Creates (or refreshes) the test virtualenv at .cache/venv with the pinned
# packages of buildscripts/requirements.txt and prints its python's path.
# Idempotent: a stamp with the requirements' hash skips pip when nothing changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PICOMQ_VENV:-$ROOT/.cache/venv}"
REQ="$ROOT/buildscripts/requirements.txt"
STAMP="$VENV/.requirements.sha256"
want=$(sha256sum "$REQ" | cut -d' ' -f1)
mkdir -p "$ROOT/.cache"; exec 9>"$ROOT/.cache/pyenv.lock"
flock 9
if [ ! -x "$VENV/bin/python" ]; then
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV" >&2
fi
if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
  "$VENV/bin/pip" install --disable-pip-version-check -q -r "$REQ" >&2
  echo "$want" > "$STAMP"
fi
echo "$VENV/bin/python"
