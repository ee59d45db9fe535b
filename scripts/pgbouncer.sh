#!/usr/bin/env bash
# A local PgBouncer in transaction mode in front of the run's PostgreSQL, for a run of the suites through
# it (.ci/run; test/support/test-instance.ts, GATEHOUSE_TEST_POOLER_URL):
#   scripts/pgbouncer.sh start DIR PORT   prints its URL (postgresql://postgres@127.0.0.1:PORT/)
#   scripts/pgbouncer.sh stop DIR
# Every database name is passed through to 127.0.0.1:5432, trust authentication as the shared server has.
# PgBouncer refuses to run as root: under root it runs as the postgres user.
set -euo pipefail
command=$1
dir=$2

case "$command" in
start)
  port=$3
  mkdir -p "$dir"
  chmod 0777 "$dir"
  echo '"postgres" ""' >"$dir/users.txt"
  cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=5432
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
admin_users = postgres
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 20
ignore_startup_parameters = extra_float_digits
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
  as_user=()
  [ "$(id -u)" -eq 0 ] && as_user=(-u postgres)
  pgbouncer -d "${as_user[@]}" "$dir/pgbouncer.ini"
  for _ in $(seq 1 200); do
    psql -h 127.0.0.1 -p "$port" -U postgres -d pgbouncer -Atc 'SHOW VERSION' >/dev/null 2>&1 && break
    sleep 0.05
  done
  psql -h 127.0.0.1 -p "$port" -U postgres -d pgbouncer -Atc 'SHOW VERSION' >/dev/null ||
    { echo "pgbouncer on port $port did not start" >&2; cat "$dir/pgbouncer.log" >&2; exit 1; }
  echo "postgresql://postgres@127.0.0.1:$port/"
  ;;
stop)
  [ -f "$dir/pgbouncer.pid" ] && kill "$(cat "$dir/pgbouncer.pid")" 2>/dev/null || true
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 start DIR PORT | stop DIR" >&2
  exit 2
  ;;
esac
