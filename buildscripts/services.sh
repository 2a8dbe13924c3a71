#!/usr/bin/env bash
# Starts and stops the real services the integration tests talk to:
# a throwaway PostgreSQL 15 cluster and a MinIO server, both on loopback.
#
#   buildscripts/services.sh start   install what is missing, start both, verify, write .services.env
#   buildscripts/services.sh stop    stop both (data stays under the state directory)
#   buildscripts/services.sh env     print `export KEY=VALUE` lines (eval "$(buildscripts/services.sh env)")
#   buildscripts/services.sh status  say what runs
#
# Every command is idempotent. Quiet on success; logs go to $STATE/logs.
#
# Knobs (environment):
#   PICOMQ_SERVICES_DIR   state directory          (default /tmp/picomq-services)
#   PICOMQ_PG_PORT        PostgreSQL port          (default 54329)
#   PICOMQ_MINIO_PORT     MinIO S3 API port        (default 9000)
#   PICOMQ_MINIO_CONSOLE  MinIO console port       (default 9001)
#   PICOMQ_PG_BIN         PostgreSQL bin directory (default /usr/lib/postgresql/15/bin)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${PICOMQ_SERVICES_DIR:-/tmp/picomq-services}"
LOGS="$STATE/logs"
ENV_FILE="$ROOT/.services.env"

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
    if port_open "$PG_PORT"; then
      die "port $PG_PORT is taken by another process; stop it or set PICOMQ_PG_PORT"
    fi
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
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$LOGS/postgres.log" -w -t 60 start >>"$LOGS/postgres-ctl.log" 2>&1 \
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

minio_bin() {
  local gobin
  gobin="$(go env GOBIN 2>/dev/null || true)"
  [ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
  echo "$gobin/minio"
}

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
    if port_open "$MINIO_PORT"; then
      die "port $MINIO_PORT is taken by another process; stop it or set PICOMQ_MINIO_PORT"
    fi
    MINIO_ROOT_USER="$MINIO_USER" MINIO_ROOT_PASSWORD="$MINIO_PASSWORD" MINIO_UPDATE=off \
      setsid "$(minio_bin)" server --quiet --address "127.0.0.1:$MINIO_PORT" \
      --console-address "127.0.0.1:$MINIO_CONSOLE" "$MINIO_DATA" \
      >>"$LOGS/minio.log" 2>&1 </dev/null &
    echo $! >"$MINIO_PID"
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

# ----------------------------------------------------------------- env file

write_env() {
  cat >"$ENV_FILE.tmp" <<EOF
PICOMQ_TEST_PG_DSN=postgres://$PG_USER:$PG_PASSWORD@127.0.0.1:$PG_PORT/$PG_DB?sslmode=disable
PICOMQ_TEST_S3_ENDPOINT=http://127.0.0.1:$MINIO_PORT
PICOMQ_TEST_S3_ACCESS_KEY=$MINIO_USER
PICOMQ_TEST_S3_SECRET_KEY=$MINIO_PASSWORD
PICOMQ_TEST_S3_REGION=$S3_REGION
EOF
  mv "$ENV_FILE.tmp" "$ENV_FILE"
}

cmd="${1:-}"
case "$cmd" in
  start)
    need_python
    mkdir -p "$STATE" "$LOGS"
    chmod 755 "$STATE"
    start_pg
    start_minio
    write_env
    ;;
  stop)
    mkdir -p "$LOGS"
    stop_minio
    if [ -x "$PG_BIN/pg_ctl" ]; then stop_pg; fi
    ;;
  env)
    [ -f "$ENV_FILE" ] || die "$ENV_FILE is missing: run buildscripts/services.sh start"
    sed -e "s/^\([A-Z0-9_]*\)=\(.*\)$/export \1='\2'/" "$ENV_FILE"
    ;;
  status)
    if pg_running; then echo "postgres: running on 127.0.0.1:$PG_PORT ($PG_DATA)"; else echo "postgres: stopped"; fi
    if minio_running; then echo "minio: running on 127.0.0.1:$MINIO_PORT (pid $(cat "$MINIO_PID"))"; else echo "minio: stopped"; fi
    ;;
  *)
    echo "usage: $0 start|stop|env|status" >&2
    exit 2
    ;;
esac
