#!/usr/bin/env bash
# Starts and stops the real services the integration tests talk to, all on
# loopback: a throwaway PostgreSQL 15 cluster, a MinIO server (S3), Azurite
# (Azure Blob Storage, blob service only), fake-gcs-server (GCS), a
# single-node Apache Kafka broker (KRaft, broker and controller in one JVM)
# and a Schema Registry (Apicurio Registry, in-memory, Confluent API).
#
#   buildscripts/services.sh start [NAME...]  install what is missing, start, verify, write .services.env
#   buildscripts/services.sh stop [NAME...]   stop (data stays under the state directory)
#   buildscripts/services.sh env              print `export KEY=VALUE` lines (eval "$(buildscripts/services.sh env)")
#   buildscripts/services.sh status           say what runs
#
# NAME is postgres, minio, azurite, gcs, kafka or registry; none means all. A test that
# needs instances of its own (to restart them) runs `start postgres minio`
# with its own PICOMQ_SERVICES_DIR, ports and PICOMQ_SERVICES_ENV_FILE.
#
# Every command is idempotent. Quiet on success; logs go to $STATE/logs. Start
# and stop hold a lock on the state directory, so two of them (say `make unit`
# and `make e2e` at once) run one after the other instead of racing two
# copies of a service for one port and one pid file.
#
# Knobs (environment):
#   PICOMQ_SERVICES_DIR   state directory          (default /tmp/picomq-services)
#   PICOMQ_PG_PORT        PostgreSQL port          (default 54329)
#   PICOMQ_MINIO_PORT     MinIO S3 API port        (default 9000)
#   PICOMQ_MINIO_CONSOLE  MinIO console port       (default 9001)
#   PICOMQ_PG_BIN         PostgreSQL bin directory (default /usr/lib/postgresql/15/bin)
#   PICOMQ_AZURITE_PORT   Azurite blob port        (default 10000)
#   PICOMQ_GCS_PORT       fake-gcs-server port     (default 4443)
#   PICOMQ_KAFKA_PORT     Kafka client port        (default 19092)
#   PICOMQ_KAFKA_CONTROLLER_PORT  KRaft controller port (default PICOMQ_KAFKA_PORT + 1)
#   PICOMQ_SCHEMA_REGISTRY_PORT   Schema Registry port  (default 18081)
#   PICOMQ_SERVICES_ENV_FILE      the env file written (default .services.env at the repository root)
#
# Installs: MinIO and fake-gcs-server with `go install` (pinned, into GOBIN or
# GOPATH/bin), Azurite with npm (pinned, into $STATE/azurite-<version>), Kafka's
# jars from Maven Central with Maven (pinned, into $STATE/kafka-<version>/libs;
# needs a JDK 17+ and mvn), Apicurio Registry built with Maven from its
# Central jars (pinned, into $STATE/apicurio-registry-<version>), each only
# when missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${PICOMQ_SERVICES_DIR:-/tmp/picomq-services}"
LOGS="$STATE/logs"
ENV_FILE="${PICOMQ_SERVICES_ENV_FILE:-$ROOT/.services.env}"

PG_BIN="${PICOMQ_PG_BIN:-/usr/lib/postgresql/15/bin}"
PG_PORT="${PICOMQ_PG_PORT:-54329}"
PG_DIR="$STATE/pg"
PG_DATA="$PG_DIR/data"
PG_SOCK="$PG_DIR/sock"
PG_USER="picomq"
PG_PASSWORD="picomq-secret-pw"
PG_DB="picomq"

MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"
MINIO_PORT="${PICOMQ_MINIO_PORT:-9000}"
MINIO_CONSOLE="${PICOMQ_MINIO_CONSOLE:-9001}"
MINIO_DATA="$STATE/minio/data"
MINIO_PID="$STATE/minio/minio.pid"
MINIO_USER="picomq-minio"
MINIO_PASSWORD="picomq-minio-secret"
S3_REGION="us-east-1"

# Azurite 3.37 is the first with List Blobs startFrom (the Delta sink's
# listing uses it). It declares node >= 22 but its blob service runs on the
# node 20 these machines have (checked at start: it must answer).
AZURITE_VERSION="3.37.0"
AZURITE_PORT="${PICOMQ_AZURITE_PORT:-10000}"
AZURITE_DIR="$STATE/azurite-$AZURITE_VERSION"
AZURITE_DATA="$STATE/azurite/data"
AZURITE_PID="$STATE/azurite/azurite.pid"
# Azurite's fixed development account and its well-known key (public, in
# Azure's documentation: not a secret).
AZURE_ACCOUNT="devstoreaccount1"
AZURE_KEY="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

FAKE_GCS_VERSION="v1.56.1"
GCS_PORT="${PICOMQ_GCS_PORT:-4443}"
GCS_PID="$STATE/fake-gcs/fake-gcs.pid"

# Apache Kafka 4.1 (KRaft only), run from its Maven Central jars: Apache's
# download mirrors are not reachable from every machine this runs on, Maven
# Central is. The log4j binding is the one Kafka's own distribution ships.
KAFKA_VERSION="4.1.0"
KAFKA_LOG4J_VERSION="2.24.3"
KAFKA_PORT="${PICOMQ_KAFKA_PORT:-19092}"
KAFKA_CONTROLLER_PORT="${PICOMQ_KAFKA_CONTROLLER_PORT:-$((KAFKA_PORT + 1))}"
KAFKA_HOME="$STATE/kafka-$KAFKA_VERSION"
KAFKA_DIR="$STATE/kafka"
KAFKA_DATA="$KAFKA_DIR/data"
KAFKA_PID="$KAFKA_DIR/kafka.pid"

die() { echo "services.sh: $*" >&2; exit 1; }

need_python() { command -v python3 >/dev/null 2>&1 || die "python3 is required"; }

# port_open PORT -> exit 0 when something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
s.settimeout(0.5)
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
sys.exit(0)
PY
}

# as_pg CMD... runs CMD as the cluster owner: postgres when we are root
# (initdb refuses root), the current user otherwise.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# ---------------------------------------------------------------- PostgreSQL

ensure_pg_installed() {
  [ -x "$PG_BIN/pg_ctl" ] && return 0
  [ "$(id -u)" = 0 ] || die "PostgreSQL 15 is missing at $PG_BIN and we are not root: install postgresql-15 or set PICOMQ_PG_BIN"
  echo "services.sh: installing postgresql-15 (log: $LOGS/apt.log)" >&2
  {
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15
  } >>"$LOGS/apt.log" 2>&1 || die "apt-get install postgresql-15 failed, see $LOGS/apt.log"
  [ -x "$PG_BIN/pg_ctl" ] || die "postgresql-15 installed but $PG_BIN/pg_ctl is missing"
}

pg_running() { [ -f "$PG_DATA/PG_VERSION" ] && as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; }

pg_psql() {
  as_pg "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d postgres "$@"
}

start_pg() {
  ensure_pg_installed
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    useradd --system --home-dir "$PG_DIR" --shell /usr/sbin/nologin postgres
  fi
  mkdir -p "$PG_DIR" "$PG_SOCK"
  [ "$(id -u)" = 0 ] && chown -R postgres: "$PG_DIR" "$LOGS"

  if ! pg_running; then
    need_port "$PG_PORT" PICOMQ_PG_PORT
    if [ ! -f "$PG_DATA/PG_VERSION" ]; then
      rm -rf "$PG_DATA"
      as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
        -E UTF8 --locale=C.UTF-8 >>"$LOGS/postgres-initdb.log" 2>&1 \
        || die "initdb failed, see $LOGS/postgres-initdb.log"
      cat >>"$PG_DATA/postgresql.conf" <<EOF
# picomq throwaway test cluster
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_SOCK'
max_connections = 300
password_encryption = 'scram-sha-256'
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
    fi
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$LOGS/postgres.log" -w -t 60 start >>"$LOGS/postgres-ctl.log" 2>&1 9>&- \
      || die "PostgreSQL did not start, see $LOGS/postgres.log"
  fi

  # Role and database, idempotently. CREATEDB lets tests make a database each.
  pg_psql >>"$LOGS/postgres-setup.log" 2>&1 <<SQL || die "creating role/database failed, see $LOGS/postgres-setup.log"
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$PG_USER') THEN
    CREATE ROLE $PG_USER LOGIN CREATEDB PASSWORD '$PG_PASSWORD';
  ELSE
    ALTER ROLE $PG_USER LOGIN CREATEDB PASSWORD '$PG_PASSWORD';
  END IF;
END
\$\$;
-- Tests create and drop a database each; an autovacuum worker (a superuser
-- backend) inside one makes DROP DATABASE ... WITH (FORCE) fail for picomq.
ALTER SYSTEM SET autovacuum = off;
SELECT pg_reload_conf();
SELECT 'CREATE DATABASE $PG_DB OWNER $PG_USER'
WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '$PG_DB')\gexec
SQL
}

stop_pg() {
  if pg_running; then
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w stop >>"$LOGS/postgres-ctl.log" 2>&1 \
      || die "PostgreSQL did not stop, see $LOGS/postgres-ctl.log"
  fi
}

# --------------------------------------------------------------------- MinIO

go_bin() {
  local gobin
  gobin="$(go env GOBIN 2>/dev/null || true)"
  [ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
  echo "$gobin/$1"
}

minio_bin() { go_bin minio; }

ensure_minio_installed() {
  local bin
  command -v go >/dev/null 2>&1 || die "go is required to install MinIO"
  bin="$(minio_bin)"
  [ -x "$bin" ] && return 0
  echo "services.sh: installing MinIO with go install, takes several minutes (log: $LOGS/minio-install.log)" >&2
  (cd "$STATE" && GOFLAGS= go install "github.com/minio/minio@$MINIO_VERSION") >>"$LOGS/minio-install.log" 2>&1 \
    || die "go install minio failed, see $LOGS/minio-install.log"
  [ -x "$bin" ] || die "go install minio succeeded but $bin is missing"
}

minio_running() {
  [ -f "$MINIO_PID" ] || return 1
  local pid
  pid="$(cat "$MINIO_PID")"
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "minio server"
}

start_minio() {
  ensure_minio_installed
  mkdir -p "$MINIO_DATA"
  if ! minio_running; then
    rm -f "$MINIO_PID"
    need_port "$MINIO_PORT" PICOMQ_MINIO_PORT
    spawn "$MINIO_PID" "$LOGS/minio.log" env MINIO_ROOT_USER="$MINIO_USER" MINIO_ROOT_PASSWORD="$MINIO_PASSWORD" MINIO_UPDATE=off \
      "$(minio_bin)" server --quiet --address "127.0.0.1:$MINIO_PORT" \
      --console-address "127.0.0.1:$MINIO_CONSOLE" "$MINIO_DATA"
  fi
  s3_check wait || die "MinIO did not become ready on 127.0.0.1:$MINIO_PORT, see $LOGS/minio.log"
  s3_check conditional || die "MinIO at 127.0.0.1:$MINIO_PORT does not honour conditional writes (If-None-Match: * must give 412); the Delta sink's commit protocol needs them"
}

stop_minio() {
  if minio_running; then
    local pid
    pid="$(cat "$MINIO_PID")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      [ -d "/proc/$pid" ] || break
      sleep 0.1
    done
    [ -d "/proc/$pid" ] && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$MINIO_PID"
}

# s3_check wait|conditional talks SigV4 to MinIO with nothing but the Python
# standard library, so a fresh machine needs no AWS tooling.
s3_check() {
  S3_ENDPOINT="http://127.0.0.1:$MINIO_PORT" S3_AK="$MINIO_USER" S3_SK="$MINIO_PASSWORD" S3_REGION="$S3_REGION" \
    python3 - "$1" 2>>"$LOGS/s3-check.log" <<'PY'
import datetime, hashlib, hmac, os, sys, time, urllib.error, urllib.request

ep, ak, sk, region = (os.environ[k] for k in ("S3_ENDPOINT", "S3_AK", "S3_SK", "S3_REGION"))
host = ep.split("://", 1)[1]

def hm(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()

def request(method, path, headers=None, body=b""):
    now = datetime.datetime.now(datetime.timezone.utc)
    amzdate, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    h = {k.lower(): v for k, v in (headers or {}).items()}
    h.update({"host": host, "x-amz-date": amzdate, "x-amz-content-sha256": hashlib.sha256(body).hexdigest()})
    names = sorted(h)
    canonical = "\n".join([method, path, "", "".join(f"{k}:{h[k].strip()}\n" for k in names),
                           ";".join(names), h["x-amz-content-sha256"]])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = hm(hm(hm(hm(("AWS4" + sk).encode(), day), region), "s3"), "aws4_request")
    sig = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    h["authorization"] = (f"AWS4-HMAC-SHA256 Credential={ak}/{scope}, "
                          f"SignedHeaders={';'.join(names)}, Signature={sig}")
    req = urllib.request.Request(ep + path, data=body if method in ("PUT", "POST") else None,
                                 method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code

mode = sys.argv[1]
if mode == "wait":
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(ep + "/minio/health/ready", timeout=2) as resp:
                if resp.status == 200 and request("GET", "/") == 200:
                    sys.exit(0)
        except Exception:
            pass
        time.sleep(0.5)
    print("MinIO not ready", file=sys.stderr)
    sys.exit(1)

if mode == "conditional":
    bucket = "/picomq-services-check"
    key = bucket + "/conditional-" + str(os.getpid())
    st = request("PUT", bucket)
    if st not in (200, 409):
        print(f"create bucket: HTTP {st}", file=sys.stderr)
        sys.exit(1)
    first = request("PUT", key, {"If-None-Match": "*"}, b"first")
    second = request("PUT", key, {"If-None-Match": "*"}, b"second")
    request("DELETE", key)
    request("DELETE", bucket)
    if first != 200 or second != 412:
        print(f"conditional PUT: first HTTP {first} (want 200), second HTTP {second} (want 412)", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
sys.exit(2)
PY
}

# pid_alive PIDFILE PATTERN -> exit 0 when the pid in PIDFILE runs a command
# line containing PATTERN.
pid_alive() {
  [ -f "$1" ] || return 1
  local pid
  pid="$(cat "$1")"
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$2"
}

# stop_pid PIDFILE PATTERN [TENTHS] stops that process (TERM, then KILL
# after TENTHS tenths of a second, default 50).
stop_pid() {
  if pid_alive "$1" "$2"; then
    local pid
    pid="$(cat "$1")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 "${3:-50}"); do
      [ -d "/proc/$pid" ] || break
      sleep 0.1
    done
    [ -d "/proc/$pid" ] && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$1"
}

# spawn PIDFILE LOG CMD... starts CMD in a session of its own (a signal to
# the caller's process group never reaches it), its output appended to LOG,
# and writes its pid to PIDFILE.
spawn() {
  local pidfile="$1" log="$2"
  shift 2
  setsid "$@" >>"$log" 2>&1 </dev/null 9>&- &
  echo $! >"$pidfile"
}

# need_port PORT VAR dies when PORT is taken: a service that is not ours
# answers there. VAR names the setting that moves it.
need_port() {
  if port_open "$1"; then die "port $1 is taken by another process; stop it or set $2"; fi
}

# ------------------------------------------------------------------- Azurite

azurite_bin() { echo "$AZURITE_DIR/node_modules/.bin/azurite-blob"; }

ensure_azurite_installed() {
  [ -x "$(azurite_bin)" ] && return 0
  if ! command -v npm >/dev/null 2>&1; then
    # Machines of this project's kind ship Node.js; elsewhere take Debian's.
    echo "services.sh: installing nodejs and npm with apt-get" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; } >>"$LOGS/apt.log" 2>&1 \
      || die "node and npm are required to install Azurite (apt-get install nodejs npm failed, see $LOGS/apt.log)"
  fi
  echo "services.sh: installing Azurite $AZURITE_VERSION with npm (log: $LOGS/azurite-install.log)" >&2
  local tmp="$AZURITE_DIR.tmp.$$"
  rm -rf "$AZURITE_DIR".tmp.*
  mkdir -p "$tmp"
  # Into a scratch directory first, so an interrupted install is never
  # mistaken for a finished one. engine-strict off: see AZURITE_VERSION.
  npm install --prefix "$tmp" --no-audit --no-fund --no-save --engine-strict=false \
    "azurite@$AZURITE_VERSION" >>"$LOGS/azurite-install.log" 2>&1 \
    || { rm -rf "$tmp"; die "npm install azurite@$AZURITE_VERSION failed, see $LOGS/azurite-install.log"; }
  rm -rf "$AZURITE_DIR"
  mv "$tmp" "$AZURITE_DIR"
  [ -x "$(azurite_bin)" ] || die "npm install azurite succeeded but $(azurite_bin) is missing"
}

azurite_running() { pid_alive "$AZURITE_PID" "azurite-blob"; }

start_azurite() {
  ensure_azurite_installed
  mkdir -p "$AZURITE_DATA"
  if ! azurite_running; then
    rm -f "$AZURITE_PID"
    need_port "$AZURITE_PORT" PICOMQ_AZURITE_PORT
    # --skipApiVersionCheck: the Go SDK speaks a newer service version than
    # Azurite declares. --disableTelemetry: no phoning home.
    spawn "$AZURITE_PID" "$LOGS/azurite.log" "$(azurite_bin)" --blobHost 127.0.0.1 --blobPort "$AZURITE_PORT" \
      --location "$AZURITE_DATA" --skipApiVersionCheck --disableTelemetry --silent
  fi
  az_check wait || die "Azurite did not become ready on 127.0.0.1:$AZURITE_PORT, see $LOGS/azurite.log"
  az_check conditional || die "Azurite at 127.0.0.1:$AZURITE_PORT does not honour conditional writes (If-None-Match: * on an existing blob must give 409 or 412); the Delta sink's commit protocol needs them, see $LOGS/az-check.log"
}

stop_azurite() { stop_pid "$AZURITE_PID" "azurite-blob"; }

# az_check wait|conditional talks SharedKey-signed REST to Azurite with the
# Python standard library.
az_check() {
  AZ_ENDPOINT="http://127.0.0.1:$AZURITE_PORT/$AZURE_ACCOUNT" AZ_ACCOUNT="$AZURE_ACCOUNT" AZ_KEY="$AZURE_KEY" \
    python3 - "$1" 2>>"$LOGS/az-check.log" <<'PY'
import base64, email.utils, hashlib, hmac, os, sys, time, urllib.error, urllib.parse, urllib.request

ep, account, key = os.environ["AZ_ENDPOINT"], os.environ["AZ_ACCOUNT"], os.environ["AZ_KEY"]

def request(method, path, query=None, headers=None, body=b""):
    query = query or {}
    h = {"x-ms-date": email.utils.formatdate(usegmt=True), "x-ms-version": "2021-10-04"}
    if method == "PUT":
        h["Content-Type"] = "application/octet-stream"  # else urllib adds a form type, unsigned
    h.update(headers or {})
    length = str(len(body)) if body else ""
    std = ["Content-Encoding", "Content-Language", "Content-Length", "Content-MD5", "Content-Type", "Date",
           "If-Modified-Since", "If-Match", "If-None-Match", "If-Unmodified-Since", "Range"]
    vals = {k.lower(): v for k, v in h.items()}
    vals["content-length"] = length
    u = urllib.parse.urlsplit(ep + path)
    canon_headers = "".join(f"{k}:{vals[k]}\n" for k in sorted(vals) if k.startswith("x-ms-"))
    canon_res = "/" + account + u.path + "".join(f"\n{k.lower()}:{query[k]}" for k in sorted(query))
    to_sign = "\n".join([method] + [vals.get(s.lower(), "") for s in std]) + "\n" + canon_headers + canon_res
    sig = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest()).decode()
    h["Authorization"] = f"SharedKey {account}:{sig}"
    url = ep + path + ("?" + urllib.parse.urlencode(query) if query else "")
    req = urllib.request.Request(url, data=body if method == "PUT" else None, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code

mode = sys.argv[1]
if mode == "wait":
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if request("GET", "/", {"comp": "list"}) == 200:
                sys.exit(0)
        except Exception:
            pass
        time.sleep(0.5)
    print("Azurite not ready", file=sys.stderr)
    sys.exit(1)

if mode == "conditional":
    container = "/picomq-services-check-" + str(os.getpid())
    st = request("PUT", container, {"restype": "container"})
    if st not in (201, 409):
        print(f"create container: HTTP {st}", file=sys.stderr)
        sys.exit(1)
    blob = container + "/conditional"
    hdr = {"x-ms-blob-type": "BlockBlob", "If-None-Match": "*"}
    first = request("PUT", blob, None, hdr, b"first")
    second = request("PUT", blob, None, hdr, b"second")
    request("DELETE", container, {"restype": "container"})
    if first != 201 or second not in (409, 412):
        print(f"conditional PUT: first HTTP {first} (want 201), second HTTP {second} (want 409 or 412)", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
sys.exit(2)
PY
}

# ----------------------------------------------------------- fake-gcs-server

fake_gcs_bin() { go_bin fake-gcs-server; }

ensure_fake_gcs_installed() {
  local bin
  command -v go >/dev/null 2>&1 || die "go is required to install fake-gcs-server"
  bin="$(fake_gcs_bin)"
  # The pinned version, as the binary records it (go version -m).
  [ -x "$bin" ] && go version -m "$bin" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/fsouza/fake-gcs-server[[:space:]]+$FAKE_GCS_VERSION([[:space:]]|$)" && return 0
  echo "services.sh: installing fake-gcs-server $FAKE_GCS_VERSION with go install (log: $LOGS/fake-gcs-install.log)" >&2
  (cd "$STATE" && GOFLAGS= go install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION") >>"$LOGS/fake-gcs-install.log" 2>&1 \
    || die "go install fake-gcs-server failed, see $LOGS/fake-gcs-install.log"
  [ -x "$bin" ] || die "go install fake-gcs-server succeeded but $bin is missing"
}

fake_gcs_running() { pid_alive "$GCS_PID" "fake-gcs-server"; }

start_fake_gcs() {
  ensure_fake_gcs_installed
  mkdir -p "$(dirname "$GCS_PID")"
  if ! fake_gcs_running; then
    rm -f "$GCS_PID"
    need_port "$GCS_PORT" PICOMQ_GCS_PORT
    # -public-host and -external-url are this address, so the XML-style
    # downloads delta-rs makes and the upload URLs the server hands out
    # point back at it. Memory backend: tests make a bucket each.
    spawn "$GCS_PID" "$LOGS/fake-gcs.log" "$(fake_gcs_bin)" -scheme http -host 127.0.0.1 -port "$GCS_PORT" -backend memory \
      -public-host "127.0.0.1:$GCS_PORT" -external-url "http://127.0.0.1:$GCS_PORT" -log-level warn
  fi
  gcs_check wait || die "fake-gcs-server did not become ready on 127.0.0.1:$GCS_PORT, see $LOGS/fake-gcs.log"
  gcs_check conditional || die "fake-gcs-server at 127.0.0.1:$GCS_PORT does not honour ifGenerationMatch=0 (an upload over an existing object must give 412); the Delta sink's commit protocol needs it, see $LOGS/gcs-check.log"
}

stop_fake_gcs() { stop_pid "$GCS_PID" "fake-gcs-server"; }

# gcs_check wait|conditional: media and multipart uploads (the Go client's
# single-request form) with ifGenerationMatch=0, twice each.
gcs_check() {
  GCS_ENDPOINT="http://127.0.0.1:$GCS_PORT" python3 - "$1" 2>>"$LOGS/gcs-check.log" <<'PY'
import json, os, sys, time, urllib.error, urllib.request

ep = os.environ["GCS_ENDPOINT"]

def request(method, path, body=None, ctype=None):
    req = urllib.request.Request(ep + path, data=body, method=method)
    if ctype:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code

mode = sys.argv[1]
if mode == "wait":
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if request("GET", "/storage/v1/b?project=picomq") == 200:
                sys.exit(0)
        except Exception:
            pass
        time.sleep(0.5)
    print("fake-gcs-server not ready", file=sys.stderr)
    sys.exit(1)

if mode == "conditional":
    bucket = "picomq-services-check-" + str(os.getpid())
    st = request("POST", "/storage/v1/b?project=picomq", json.dumps({"name": bucket}).encode(), "application/json")
    if st not in (200, 409):
        print(f"create bucket: HTTP {st}", file=sys.stderr)
        sys.exit(1)
    media = f"/upload/storage/v1/b/{bucket}/o?uploadType=media&name=media&ifGenerationMatch=0"
    got = [request("POST", media, b"first", "text/plain"), request("POST", media, b"second", "text/plain")]
    boundary = "picomq-boundary"
    def multipart(data):
        return (f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n" +
                json.dumps({"name": "multipart"}) + f"\r\n--{boundary}\r\nContent-Type: text/plain\r\n\r\n" +
                data + f"\r\n--{boundary}--\r\n").encode()
    mp = f"/upload/storage/v1/b/{bucket}/o?uploadType=multipart&ifGenerationMatch=0"
    got += [request("POST", mp, multipart("first"), f"multipart/related; boundary={boundary}"),
            request("POST", mp, multipart("second"), f"multipart/related; boundary={boundary}")]
    for obj in ("media", "multipart"):
        request("DELETE", f"/storage/v1/b/{bucket}/o/{obj}")
    request("DELETE", f"/storage/v1/b/{bucket}")
    if got != [200, 412, 200, 412]:
        print(f"ifGenerationMatch=0 uploads (media, media, multipart, multipart): HTTP {got}, want [200, 412, 200, 412]", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
sys.exit(2)
PY
}

# --------------------------------------------------------------------- Kafka

# ensure_java_maven installs a JDK and Maven when missing (Kafka and the
# Schema Registry are built from Maven Central). start calls it before the
# installs that run side by side, so apt-get runs once.
ensure_java_maven() {
  if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || die "Kafka and the Schema Registry need java (17+) and mvn on PATH: install a JDK and Maven"
    echo "services.sh: installing a JDK and Maven with apt-get (log: $LOGS/apt.log)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openjdk-17-jdk-headless maven; } \
      >>"$LOGS/apt.log" 2>&1 || die "apt-get install openjdk-17-jdk-headless maven failed, see $LOGS/apt.log"
  fi
  # Kafka 4 needs Java 17: an older JDK would otherwise surface only as a
  # broker that never becomes ready. "1.8" style versions read as 8.
  local v
  v="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
  v="${v#1.}"
  [ "${v%%.*}" -ge 17 ] 2>/dev/null || die "Kafka $KAFKA_VERSION needs Java 17 or later; java on PATH is ${v:-of unknown version}"
}

ensure_kafka_installed() {
  [ -f "$KAFKA_HOME/libs/kafka_2.13-$KAFKA_VERSION.jar" ] && return 0
  ensure_java_maven
  echo "services.sh: installing Kafka $KAFKA_VERSION from Maven Central (log: $LOGS/kafka-install.log)" >&2
  local tmp="$KAFKA_HOME.tmp.$$"
  rm -rf "$KAFKA_HOME".tmp.*
  mkdir -p "$tmp"
  # The broker's runtime dependency closure, resolved by Maven from a pom
  # of two dependencies. Into a scratch directory first, so an interrupted
  # install is never mistaken for a finished one.
  cat >"$tmp/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>picomq.services</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>$KAFKA_VERSION</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$KAFKA_LOG4J_VERSION</version></dependency>
  </dependencies>
</project>
EOF
  mvn -B -f "$tmp/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/libs" \
    >>"$LOGS/kafka-install.log" 2>&1 \
    || { rm -rf "$tmp"; die "resolving Kafka $KAFKA_VERSION with Maven failed, see $LOGS/kafka-install.log"; }
  rm -rf "$KAFKA_HOME"
  mv "$tmp" "$KAFKA_HOME"
  [ -f "$KAFKA_HOME/libs/kafka_2.13-$KAFKA_VERSION.jar" ] || die "Maven succeeded but the Kafka jar is missing from $KAFKA_HOME/libs"
}

kafka_running() { pid_alive "$KAFKA_PID" "kafka.Kafka"; }

# write_kafka_config writes server.properties and the log4j2 configuration
# from the knobs, at every start.
write_kafka_config() {
  cat >"$KAFKA_DIR/server.properties" <<EOF
# picomq throwaway test broker: one node, broker and KRaft controller
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$KAFKA_DATA
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
  cat >"$KAFKA_DIR/log4j2.properties" <<EOF
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $LOGS/kafka.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
EOF
}

# The java command line for Kafka's tools and broker: a small heap and the
# serial collector (a test broker on a small shared machine).
KAFKA_JAVA=(java -Xmx512m -Xms128m -XX:+UseSerialGC "-Dlog4j2.configurationFile=$KAFKA_DIR/log4j2.properties"
  -cp "$KAFKA_HOME/libs/*")

start_kafka() {
  ensure_kafka_installed
  mkdir -p "$KAFKA_DIR"
  if ! kafka_running; then
    rm -f "$KAFKA_PID"
    need_port "$KAFKA_PORT" PICOMQ_KAFKA_PORT
    need_port "$KAFKA_CONTROLLER_PORT" PICOMQ_KAFKA_CONTROLLER_PORT
    write_kafka_config
    if [ ! -f "$KAFKA_DATA/meta.properties" ]; then
      rm -rf "$KAFKA_DATA"
      local cluster_id
      cluster_id="$(python3 -c 'import base64, uuid; print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))')"
      "${KAFKA_JAVA[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$KAFKA_DIR/server.properties" \
        >>"$LOGS/kafka-format.log" 2>&1 || die "formatting the Kafka log directory failed, see $LOGS/kafka-format.log"
    fi
    spawn "$KAFKA_PID" "$LOGS/kafka-stdout.log" "${KAFKA_JAVA[@]}" kafka.Kafka "$KAFKA_DIR/server.properties"
  fi
  kafka_check || die "Kafka did not become ready on 127.0.0.1:$KAFKA_PORT, see $LOGS/kafka.log and $LOGS/kafka-check.log"
}

# A clean shutdown (TERM) closes the log segments; it takes a few seconds.
stop_kafka() { stop_pid "$KAFKA_PID" "kafka.Kafka" 300; }

# kafka_check waits until the broker answers a Metadata request (v4) over
# the Kafka protocol with itself as a broker and an elected controller,
# with nothing but the Python standard library.
kafka_check() {
  KAFKA_PORT="$KAFKA_PORT" python3 - 2>>"$LOGS/kafka-check.log" <<'PY'
import os, socket, struct, sys, time

port = int(os.environ["KAFKA_PORT"])

def metadata():
    client = b"picomq-services"
    # header v1: api_key 3 (Metadata), version 4, correlation id, client id;
    # body: no topics, allow_auto_topic_creation false
    body = struct.pack(">hhih", 3, 4, 7, len(client)) + client + struct.pack(">ib", 0, 0)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        def read(n):
            buf = b""
            while len(buf) < n:
                chunk = s.recv(n - len(buf))
                if not chunk:
                    raise OSError("connection closed")
                buf += chunk
            return buf
        size, = struct.unpack(">i", read(4))
        resp = read(size)
    pos = 0
    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from(fmt, resp, pos)
        pos += struct.calcsize(fmt)
        return vals
    def string():
        nonlocal pos
        n, = take(">h")
        if n < 0:
            return None
        v = resp[pos:pos + n].decode()
        pos += n
        return v
    corr, _throttle, nbrokers = take(">iii")
    assert corr == 7, f"correlation id {corr}"
    brokers = []
    for _ in range(nbrokers):
        node, = take(">i")
        host = string()
        bport, = take(">i")
        string()  # rack
        brokers.append((node, host, bport))
    string()  # cluster id
    controller, = take(">i")
    return brokers, controller

deadline = time.time() + 120
last = None
while time.time() < deadline:
    try:
        brokers, controller = metadata()
        if any(p == port for _, _, p in brokers) and controller >= 0:
            sys.exit(0)
        last = f"brokers {brokers}, controller {controller}"
    except Exception as e:
        last = repr(e)
    time.sleep(0.5)
print(f"Kafka not ready: {last}", file=sys.stderr)
sys.exit(1)
PY
}

# ---------------------------------------------------------- Schema Registry

# Apicurio Registry 2.4.2 (in-memory storage, H2) serving the Confluent
# Schema Registry API under /apis/ccompat/v6. Maven Central has its
# application jar but no runnable build, and not every artifact it was built
# with: the install builds the Quarkus runner from a pom that depends on
# the app jar (with the Quarkus version of Apicurio's own parent POM), with
# the app's application.properties, one producer standing in for the
# config-index extension (whose deployment module Central lacks: it only
# lists the runtime-editable properties, empty here) and the JSON Schema
# validator (not on Central; JSON schemas are not decoded) left out. Newer
# Apicurio (2.6.x, 3.x), Confluent's registry and Karapace cannot be had
# from the reachable registries: docs/decode.md "Schema Registry" says why.
APICURIO_VERSION="2.4.2.Final"
REGISTRY_PORT="${PICOMQ_SCHEMA_REGISTRY_PORT:-18081}"
REGISTRY_HOME="$STATE/apicurio-registry-$APICURIO_VERSION"
REGISTRY_DIR="$STATE/schema-registry"
REGISTRY_PID="$REGISTRY_DIR/registry.pid"
REGISTRY_JAR="$REGISTRY_HOME/apicurio-registry-runner.jar"

# Maven for the registry build goes to Central alone (Apicurio's parent POM
# names other repositories, which are not reachable from every machine), into
# a local repository of its own: it runs beside Kafka's resolution, and two
# Maven 3.8 processes must not write one repository at once.
registry_mvn() {
  mvn -B -s "$REGISTRY_HOME.build/settings.xml" -Dmaven.repo.local="$STATE/registry-m2" "$@"
}

ensure_registry_installed() {
  [ -f "$REGISTRY_JAR" ] && [ -d "$REGISTRY_HOME/lib" ] && return 0
  ensure_java_maven
  echo "services.sh: building Apicurio Registry $APICURIO_VERSION from Maven Central (log: $LOGS/registry-install.log)" >&2
  local b="$REGISTRY_HOME.build"
  rm -rf "$b"
  mkdir -p "$b/src/main/resources" "$b/src/main/java/picomq/services"
  cat >"$b/settings.xml" <<'EOF'
<settings><mirrors><mirror><id>central-only</id><mirrorOf>*</mirrorOf><url>https://repo.maven.apache.org/maven2</url></mirror></mirrors></settings>
EOF
  cat >"$b/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <parent>
    <groupId>io.apicurio</groupId><artifactId>apicurio-registry</artifactId><version>$APICURIO_VERSION</version><relativePath/>
  </parent>
  <groupId>picomq.services</groupId>
  <artifactId>apicurio-registry</artifactId>
  <version>$APICURIO_VERSION</version>
  <dependencies>
    <dependency>
      <groupId>io.apicurio</groupId><artifactId>apicurio-registry-app</artifactId><version>$APICURIO_VERSION</version>
      <exclusions>
        <exclusion><groupId>com.github.everit-org.json-schema</groupId><artifactId>org.everit.json.schema</artifactId></exclusion>
        <exclusion><groupId>io.apicurio</groupId><artifactId>apicurio-common-app-components-config-index</artifactId></exclusion>
      </exclusions>
    </dependency>
  </dependencies>
  <build>
    <finalName>apicurio-registry</finalName>
    <plugins>
      <plugin>
        <groupId>io.quarkus</groupId><artifactId>quarkus-maven-plugin</artifactId><version>\${quarkus.version}</version>
        <executions><execution><goals><goal>build</goal></goals></execution></executions>
      </plugin>
    </plugins>
  </build>
</project>
EOF
  cat >"$b/src/main/java/picomq/services/DynamicConfigProducer.java" <<'EOF'
package picomq.services;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import java.util.ArrayList;
import javax.enterprise.context.ApplicationScoped;
import javax.enterprise.inject.Produces;

// Stands in for the config-index extension (its deployment module is not on
// Maven Central): no runtime-editable properties.
@ApplicationScoped
public class DynamicConfigProducer {
    @Produces
    @ApplicationScoped
    public DynamicConfigPropertyList dynamicConfigPropertyList() {
        return new DynamicConfigPropertyList(new ArrayList<>());
    }
}
EOF
  local skip=(-DskipTests -Dcheckstyle.skip -Denforcer.skip -Dlicense.skip -Dmaven.javadoc.skip -Dmaven.source.skip)
  {
    registry_mvn -f "$b/pom.xml" dependency:copy -Dartifact="io.apicurio:apicurio-registry-app:$APICURIO_VERSION" \
      -DoutputDirectory="$b/app" &&
    # The app's own configuration (build-time settings such as the H2
    # datasource), plus indexing its classes: a dependency jar's beans are
    # not discovered otherwise.
    python3 - "$b/app/apicurio-registry-app-$APICURIO_VERSION.jar" "$b/src/main/resources/application.properties" <<'PY' &&
import sys, zipfile
props = zipfile.ZipFile(sys.argv[1]).read("application.properties").decode()
props += "\nquarkus.index-dependency.registryapp.group-id=io.apicurio\nquarkus.index-dependency.registryapp.artifact-id=apicurio-registry-app\n"
open(sys.argv[2], "w").write(props)
PY
    registry_mvn -f "$b/pom.xml" package "${skip[@]}"
  } >>"$LOGS/registry-install.log" 2>&1 || die "building Apicurio Registry $APICURIO_VERSION failed, see $LOGS/registry-install.log"
  [ -f "$b/target/apicurio-registry-runner.jar" ] || die "the Apicurio build succeeded but its runner jar is missing, see $LOGS/registry-install.log"
  rm -rf "$REGISTRY_HOME"
  mkdir -p "$REGISTRY_HOME"
  mv "$b/target/apicurio-registry-runner.jar" "$REGISTRY_JAR"
  mv "$b/target/lib" "$REGISTRY_HOME/lib"
  rm -rf "$b"
}

registry_running() { pid_alive "$REGISTRY_PID" "apicurio-registry-runner.jar"; }

start_registry() {
  ensure_registry_installed
  mkdir -p "$REGISTRY_DIR"
  if ! registry_running; then
    rm -f "$REGISTRY_PID"
    need_port "$REGISTRY_PORT" PICOMQ_SCHEMA_REGISTRY_PORT
    # In-memory storage: every start is an empty registry (tests register
    # what they use under subjects of their own).
    spawn "$REGISTRY_PID" "$LOGS/registry.log" java -Xmx384m -Xms64m -XX:+UseSerialGC -Dquarkus.profile=prod \
      -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$REGISTRY_PORT" -Dquarkus.log.level=WARN \
      -jar "$REGISTRY_JAR"
  fi
  registry_check || die "the Schema Registry did not become ready on 127.0.0.1:$REGISTRY_PORT, see $LOGS/registry.log and $LOGS/registry-check.log"
}

stop_registry() { stop_pid "$REGISTRY_PID" "apicurio-registry-runner.jar"; }

# registry_check waits until the Confluent API lists subjects and answers an
# unknown schema id with the Confluent error code 40403 (the decoder tells
# an unknown id from a misconfigured URL by it).
registry_check() {
  REGISTRY_URL="$(registry_url)" python3 - 2>>"$LOGS/registry-check.log" <<'PY'
import json, os, sys, time, urllib.error, urllib.request

url = os.environ["REGISTRY_URL"]
deadline = time.time() + 180
last = None
while time.time() < deadline:
    try:
        with urllib.request.urlopen(url + "/subjects", timeout=5) as resp:
            json.load(resp)
        try:
            urllib.request.urlopen(url + "/schemas/ids/2147483647", timeout=5)
            last = "an unknown schema id was found"
        except urllib.error.HTTPError as e:
            code = json.load(e).get("error_code")
            if e.code == 404 and code == 40403:
                sys.exit(0)
            last = f"unknown schema id: HTTP {e.code}, error_code {code}"
    except Exception as e:
        last = repr(e)
    time.sleep(1)
print(f"Schema Registry not ready: {last}", file=sys.stderr)
sys.exit(1)
PY
}

registry_url() { echo "http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v6"; }

# ----------------------------------------------------------------- env file

write_env() {
  cat >"$ENV_FILE.tmp" <<EOF
PICOMQ_TEST_PG_DSN=postgres://$PG_USER:$PG_PASSWORD@127.0.0.1:$PG_PORT/$PG_DB?sslmode=disable
PICOMQ_TEST_S3_ENDPOINT=http://127.0.0.1:$MINIO_PORT
PICOMQ_TEST_S3_ACCESS_KEY=$MINIO_USER
PICOMQ_TEST_S3_SECRET_KEY=$MINIO_PASSWORD
PICOMQ_TEST_S3_REGION=$S3_REGION
PICOMQ_TEST_AZURE_ENDPOINT=http://127.0.0.1:$AZURITE_PORT/$AZURE_ACCOUNT
PICOMQ_TEST_AZURE_ACCOUNT=$AZURE_ACCOUNT
PICOMQ_TEST_AZURE_KEY=$AZURE_KEY
PICOMQ_TEST_GCS_ENDPOINT=http://127.0.0.1:$GCS_PORT
PICOMQ_KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT
PICOMQ_SCHEMA_REGISTRY_URL=$(registry_url)
EOF
  mv "$ENV_FILE.tmp" "$ENV_FILE"
}

ALL_SERVICES=(postgres minio azurite gcs kafka registry)

# wanted NAME -> exit 0 when the command line names NAME or names none.
wanted() {
  [ "${#SELECTED[@]}" = 0 ] && return 0
  local n
  for n in "${SELECTED[@]}"; do [ "$n" = "$1" ] && return 0; done
  return 1
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
SELECTED=("$@")
for n in "${SELECTED[@]}"; do
  case " ${ALL_SERVICES[*]} " in *" $n "*) ;; *) die "unknown service $n (known: ${ALL_SERVICES[*]})" ;; esac
done
# lock_state waits for any other start or stop of this state directory. The
# lock is fd 9, which every service started closes (spawn, start_pg): a
# service holding it would keep the next start or stop waiting forever.
lock_state() {
  mkdir -p "$STATE"
  exec 9>"$STATE/services.lock"
  flock 9 || die "could not lock $STATE/services.lock"
}

case "$cmd" in
  start)
    need_python
    lock_state
    mkdir -p "$STATE" "$LOGS"
    chmod 755 "$STATE"
    # Azurite's npm install and Kafka's Maven resolution are mostly
    # download: let them run beside the PostgreSQL and MinIO setup (whose go
    # install is mostly compiling).
    installs=()
    if wanted kafka || wanted registry; then ensure_java_maven; fi
    if wanted azurite; then ensure_azurite_installed & installs+=("$!:Azurite:azurite-install.log"); fi
    if wanted kafka; then ensure_kafka_installed & installs+=("$!:Kafka:kafka-install.log"); fi
    if wanted registry; then ensure_registry_installed & installs+=("$!:the Schema Registry:registry-install.log"); fi
    if wanted postgres; then start_pg; fi
    if wanted minio; then start_minio; fi
    for i in "${installs[@]}"; do
      wait "${i%%:*}" || { i="${i#*:}"; die "installing ${i%%:*} failed, see $LOGS/${i#*:}"; }
    done
    if wanted kafka; then start_kafka; fi
    if wanted azurite; then start_azurite; fi
    if wanted gcs; then start_fake_gcs; fi
    if wanted registry; then start_registry; fi
    write_env
    ;;
  stop)
    lock_state
    mkdir -p "$LOGS"
    if wanted registry; then stop_registry; fi
    if wanted kafka; then stop_kafka; fi
    if wanted gcs; then stop_fake_gcs; fi
    if wanted azurite; then stop_azurite; fi
    if wanted minio; then stop_minio; fi
    if wanted postgres && [ -x "$PG_BIN/pg_ctl" ]; then stop_pg; fi
    ;;
  env)
    [ -f "$ENV_FILE" ] || die "$ENV_FILE is missing: run buildscripts/services.sh start"
    sed -e "s/^\([A-Z0-9_]*\)=\(.*\)$/export \1='\2'/" "$ENV_FILE"
    ;;
  status)
    if pg_running; then echo "postgres: running on 127.0.0.1:$PG_PORT ($PG_DATA)"; else echo "postgres: stopped"; fi
    if minio_running; then echo "minio: running on 127.0.0.1:$MINIO_PORT (pid $(cat "$MINIO_PID"))"; else echo "minio: stopped"; fi
    if azurite_running; then echo "azurite: running on 127.0.0.1:$AZURITE_PORT (pid $(cat "$AZURITE_PID"))"; else echo "azurite: stopped"; fi
    if fake_gcs_running; then echo "fake-gcs-server: running on 127.0.0.1:$GCS_PORT (pid $(cat "$GCS_PID"))"; else echo "fake-gcs-server: stopped"; fi
    if kafka_running; then echo "kafka: running on 127.0.0.1:$KAFKA_PORT (pid $(cat "$KAFKA_PID"))"; else echo "kafka: stopped"; fi
    if registry_running; then echo "registry: running on $(registry_url) (pid $(cat "$REGISTRY_PID"))"; else echo "registry: stopped"; fi
    ;;
  *)
    echo "usage: $0 start|stop [postgres|minio|azurite|gcs|kafka|registry...] | env | status" >&2
    exit 2
    ;;
esac
