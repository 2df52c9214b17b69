#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests: Debian's package (installed when missing), a cluster made by initdb
# in a temporary directory, listening on loopback only (a Unix socket in the same directory as well), trust auth for
# the local user. `start` prints the URL for HOLDFAST_TEST_DATABASE_URL; `stop DIR` stops it and removes the cluster.
#
#   url=$(scripts/postgres.sh start /tmp/holdfast-pg)   # port: HOLDFAST_PG_PORT, else a free one
#   scripts/postgres.sh stop /tmp/holdfast-pg
set -euo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi; }

bindir() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1 || true)
  if [ -z "$dir" ] || [ ! -x "$dir/initdb" ]; then
    as_root apt-get update -qq > /dev/null
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql > /dev/null
    dir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  fi
  echo "$dir"
}

# PostgreSQL refuses to run as root: the cluster then belongs to the `postgres` user Debian's package creates.
as_owner() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case "${1:-}" in
  start)
    dir=${2:?usage: postgres.sh start DIR}
    port=${HOLDFAST_PG_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
    bin=$(bindir)
    rm -rf "$dir" && mkdir -p "$dir"
    if [ "$(id -u)" -eq 0 ]; then chown postgres "$dir"; fi
    user=$([ "$(id -u)" -eq 0 ] && echo postgres || id -un)
    as_owner "$bin/initdb" -D "$dir/data" -U "$user" -A trust -E UTF8 --no-locale > "$dir/initdb.log"
    # fsync stays on: the tests judge durability by what is on disk.
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200" start > /dev/null
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U "$user" holdfast_test
    echo "postgres://$user@127.0.0.1:$port/holdfast_test"
    ;;
  stop)
    dir=${2:?usage: postgres.sh stop DIR}
    bin=$(bindir)
    if [ -d "$dir/data" ]; then as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop > /dev/null || true; fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: postgres.sh start DIR | stop DIR" >&2
    exit 2
    ;;
esac
