#!/usr/bin/env bash
# A local three-primary Redis Cluster for a run of the suites in cluster mode (.ci/run):
#   scripts/redis-cluster.sh start DIR FIRST_PORT   prints REDIS_CLUSTER_NODES for it
#   scripts/redis-cluster.sh stop DIR
# Nodes listen on FIRST_PORT, +1, +2 (cluster buses 100 above), keep nothing but nodes.conf in DIR,
# and judge a peer failed after a second. The fault suite starts a cluster of its own instead
# (test/support/own-redis-cluster.ts): this one is never stopped under a test.
set -euo pipefail
command=$1
dir=$2

case "$command" in
start)
  first=$3
  mkdir -p "$dir"
  nodes=()
  for port in $first $((first + 1)) $((first + 2)); do
    mkdir -p "$dir/$port"
    redis-server --port "$port" --bind 127.0.0.1 --dir "$dir/$port" --daemonize yes \
      --pidfile "$dir/$port/redis.pid" --logfile "$dir/$port/redis.log" \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-port $((port + 100)) \
      --cluster-node-timeout 1000 --save "" --appendonly no
    nodes+=("127.0.0.1:$port")
  done
  for node in "${nodes[@]}"; do
    for _ in $(seq 1 100); do redis-cli -p "${node#*:}" ping >/dev/null 2>&1 && break; sleep 0.05; done
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-yes >"$dir/create.log" 2>&1 ||
    { cat "$dir/create.log" >&2; exit 1; }
  for node in "${nodes[@]}"; do
    for _ in $(seq 1 600); do
      redis-cli -p "${node#*:}" cluster info | grep -q 'cluster_state:ok' && break
      sleep 0.05
    done
    redis-cli -p "${node#*:}" cluster info | grep -q 'cluster_state:ok' ||
      { echo "the Redis Cluster on ${nodes[*]} did not come up" >&2; exit 1; }
  done
  (IFS=,; echo "${nodes[*]/#/redis://}")
  ;;
stop)
  for pidfile in "$dir"/*/redis.pid; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 start DIR FIRST_PORT | stop DIR" >&2
  exit 2
  ;;
esac
