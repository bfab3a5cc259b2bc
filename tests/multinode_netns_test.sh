#!/bin/bash
# Two "machines" as two network namespaces joined by a veth pair, each running
# its own `mtf-launch --nnodes 2 --node_rank R --nproc_per_node 2` (4 ranks),
# the coordinator given by host name (an /etc/hosts entry of each namespace):
#   1. the MNIST hybrid run (mesh 2x2) prints the in-process run's losses, to
#      the last bit, with shared memory between the ranks of a namespace and
#      TCP between namespaces;
#   2. kill -9 of node 1's launcher mid-training stops node 0 within 10 s,
#      its output naming a lost rank of node 1, with nothing left running.
# Skips (77) where network namespaces are not available (not root, no `ip`).
# Usage: multinode_netns_test.sh MTF_LAUNCH MNIST
set -u
launch=$1 mnist=$2
id=$$
host0=mtf-node0-$id
. "$(dirname "$0")/netns_pair.sh"
netns_pair mtfn 10.78.0
for ns in "$ns0" "$ns1"; do
  # `ip netns exec` mounts /etc/netns/NS/hosts over /etc/hosts.
  mkdir -p "/etc/netns/$ns"
  printf '127.0.0.1 localhost\n10.78.0.1 %s\n10.78.0.2 mtf-node1-%s\n' "$host0" "$id" \
    >"/etc/netns/$ns/hosts"
done
ip netns exec "$ns1" getent hosts "$host0" >/dev/null ||
  { echo "FAIL: $host0 does not resolve inside $ns1"; exit 1; }

export MTF_JOB_TOKEN
MTF_JOB_TOKEN=$("$launch" --new_token)
node() {  # node RANK OUT ARGS...: node RANK's launcher, in its namespace, in the background
  local rank=$1 out=$2
  shift 2
  local ns=$ns0
  [ "$rank" -eq 1 ] && ns=$ns1
  ip netns exec "$ns" "$launch" --nnodes 2 --node_rank "$rank" --nproc_per_node 2 \
    --coordinator "$host0:29531" --connect_timeout_ms 30000 -- "$mnist" "$@" >"$out" 2>&1 &
}
lines() { grep -E "^step|^test accuracy" "$1"; }

# 1. Bit-identical to in-process.
args=(--steps 20 --eval_every 10 --batch_size 40 --hidden 64 --loss_digits 17
      --mesh_shape "rows:2,cols:2" --layout "batch:rows,hidden:cols")
node 1 "$work/n1" "${args[@]}"
p1=$!
node 0 "$work/n0" "${args[@]}"
p0=$!
wait $p0; s0=$?
wait $p1; s1=$?
"$mnist" "${args[@]}" >"$work/single" 2>&1 || { echo "FAIL: the in-process run failed"; exit 1; }
if [ $s0 -ne 0 ] || [ $s1 -ne 0 ]; then
  echo "FAIL: the nodes exited $s0 and $s1"; cat "$work/n0" "$work/n1"; exit 1
fi
if [ "$(lines "$work/single")" != "$(lines "$work/n0")" ] || [ -z "$(lines "$work/n0")" ]; then
  echo "FAIL: node 0 differs from the in-process run:"; lines "$work/single"; cat "$work/n0"; exit 1
fi
grep -q "rank 0 of 4 processes over TCP" "$work/n0" || { echo "FAIL: not 4 ranks"; cat "$work/n0"; exit 1; }
# Each namespace is a machine: shared memory within, TCP between.
grep -q "(shared memory with 1 rank on this machine, TCP with 2 others; 2 machines, collectives hierarchical)" "$work/n0" ||
  { echo "FAIL: rank 0 does not use shared memory within its node and TCP across"; cat "$work/n0"; exit 1; }
if grep -q "^step" "$work/n1"; then echo "FAIL: node 1 printed its ranks' lines"; exit 1; fi
echo "two nodes (coordinator $host0:29531) trained bit-identically to the in-process 2x2 run"

# 2. Killing node 1's launcher stops node 0.
long=(--steps 1000000 --eval_every 1000000 --batch_size 40 --hidden 64
      --mesh_shape "rows:2,cols:2" --layout "batch:rows,hidden:cols")
node 1 "$work/k1" "${long[@]}"
p1=$!
node 0 "$work/k0" "${long[@]}"
p0=$!
for _ in $(seq 1 300); do  # all 4 ranks joined: rank 0 prints its mesh line
  grep -q "processes over TCP" "$work/k0" && break
  sleep 0.1
done
grep -q "processes over TCP" "$work/k0" ||
  { echo "FAIL: training did not start"; cat "$work/k0" "$work/k1"; exit 1; }
sleep 1
kill -9 $p1
start=$(date +%s.%N)
for _ in $(seq 1 100); do
  kill -0 $p0 2>/dev/null || break
  sleep 0.1
done
if kill -0 $p0 2>/dev/null; then
  echo "FAIL: node 0 still runs 10 s after node 1's launcher was killed"; cat "$work/k0"; exit 1
fi
wait $p0; s0=$?
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
sleep 0.5  # node 1's ranks die with their launcher (PR_SET_PDEATHSIG)
left=$(pgrep -f -- "--steps 1000000 --eval_every 1000000" | wc -l)
tail -6 "$work/k0"
[ $s0 -ne 0 ] || { echo "FAIL: node 0 exited 0"; exit 1; }
[ "$left" -eq 0 ] || { echo "FAIL: $left rank processes left running"; exit 1; }
grep -qE "rank [23] is lost" "$work/k0" || { echo "FAIL: node 0 did not name a lost rank of node 1"; exit 1; }
echo "PASS: two nodes bit-identical; node 0 stopped ${elapsed}s after node 1's launcher was killed"
