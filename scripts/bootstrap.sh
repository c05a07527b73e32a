#!/usr/bin/env bash
# Sets up a fresh Debian machine for this project, idempotently: pnpm, PostgreSQL and Redis (installed
# with apt-get when absent, started when not running), promtool, then the workspace dependencies from the
# lockfile. Node 24 itself comes from the lockfile as the `node` package: nothing global is changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf '[bootstrap] %s\n' "$*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=0
apt_install() {
  if [ "$apt_updated" -eq 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# --- npm and pnpm 10 ------------------------------------------------------------------------------
if ! command -v npm >/dev/null 2>&1; then
  log "installing nodejs and npm (only to bootstrap pnpm; the project runs on its pinned Node 24)"
  apt_install nodejs npm
fi
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version | cut -d. -f1)" != "10" ]; then
  log "installing pnpm 10"
  as_root npm install -g pnpm@10 >/dev/null 2>&1
fi

# --- PostgreSQL ---------------------------------------------------------------------------------
pg_installed_here=0
if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
  log "installing PostgreSQL"
  apt_install postgresql
  pg_installed_here=1
fi
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  log "starting PostgreSQL"
  as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start
fi
for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
pg_isready -h 127.0.0.1 -p 5432
if ! psql -w -h 127.0.0.1 -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1; then
  if [ "$pg_installed_here" -eq 1 ]; then
    # A PostgreSQL we just installed for local development and tests: trust loopback connections,
    # as the project's local defaults (postgres://postgres@127.0.0.1:5432) expect.
    log "allowing passwordless loopback connections on the PostgreSQL just installed"
    hba="$(ls /etc/postgresql/*/main/pg_hba.conf | sort -V | tail -n 1)"
    as_root sed -i -E 's/^(host\s+all\s+all\s+(127\.0\.0\.1\/32|::1\/128)\s+)\S+/\1trust/' "$hba"
    as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main reload
    sleep 1
  fi
  psql -w -h 127.0.0.1 -U postgres -d postgres -Atc 'select 1' >/dev/null
fi

# --- Redis --------------------------------------------------------------------------------------
if ! command -v redis-server >/dev/null 2>&1; then
  log "installing Redis"
  apt_install redis-server
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  log "starting Redis"
  as_root mkdir -p /var/lib/redis /var/log/redis
  as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
fi
for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null
# `pnpm test` also starts local Redis Clusters of its own (packages/stack: redis-server in cluster mode on
# free ports, then `redis-cli --cluster create`): Debian's redis-server package brings both, Redis 7.
# The help text is read whole before it is searched: `grep -q` stops at the first match, redis-cli then dies
# of SIGPIPE, and under `pipefail` that failure would read as "no cluster support".
cluster_help() { redis-cli --cluster help 2>&1 || true; }
if [[ "$(cluster_help)" != *create* ]]; then
  log "redis-cli has no --cluster create (Redis 5 or later is needed by the cluster tests); upgrading Redis"
  apt_install redis-server redis-tools
  [[ "$(cluster_help)" == *create* ]]
fi

# --- promtool -----------------------------------------------------------------------------------
# Prometheus's own checker validates and unit-tests the alerting rules and the dashboards' queries in
# `pnpm test` (test/observability.test.ts). Debian's prometheus package ships it; no daemon is started
# here (without systemd, none runs; with it, the service is stopped again).
if ! command -v promtool >/dev/null 2>&1; then
  log "installing promtool (Debian's prometheus package)"
  apt_install --no-install-recommends prometheus
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
    as_root systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
fi
promtool --version >/dev/null

# --- Dependencies (and Node 24) from the lockfile -----------------------------------------------
log "installing dependencies from pnpm-lock.yaml"
pnpm install --frozen-lockfile --reporter=append-only
test -x node_modules/.bin/node
log "ready: $(pnpm exec node --version) with pnpm $(pnpm --version), PostgreSQL and Redis up"
