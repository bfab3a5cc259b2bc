#!/bin/bash
# Jobs of two "nodes" (two mtf-launch processes on this machine, over
# loopback) given bad input: each case must end with a clear error naming
# the problem, well within the deadline, never hang.
#   - an unresolvable coordinator host name;
#   - a coordinator nobody listens on (set-up deadline 3 s);
#   - nodes that disagree on --nnodes;
#   - two nodes claiming the same --node_rank;
#   - a node with another job token;
#   - a job across machines without a token; a --node_rank out of range.
# Usage: multinode_bad_input_test.sh MTF_LAUNCH MNIST
set -u
launch=$1 mnist=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export MTF_JOB_TOKEN
MTF_JOB_TOKEN=$("$launch" --new_token)
args=(--steps 5 --eval_every 5 --batch_size 40 --hidden 64 --layout batch:all)
failed=0
port=$((29600 + $$ % 300))

# expect NAME SECONDS PATTERN FILE...: every FILE matches PATTERN, and the
# case ended within SECONDS of $start.
expect() {
  local name=$1 limit=$2 pattern=$3
  shift 3
  local elapsed
  elapsed=$(echo "$(date +%s.%N) - $start" | bc)
  for f in "$@"; do
    if ! grep -qE -e "$pattern" "$f"; then
      echo "FAIL ($name): no \"$pattern\" in:"; cat "$f"; failed=1; return
    fi
    if ! grep -qE "exit [1-9]" "$f"; then
      echo "FAIL ($name): a launcher exited 0:"; cat "$f"; failed=1; return
    fi
  done
  if [ "$(echo "$elapsed > $limit" | bc)" -eq 1 ]; then
    echo "FAIL ($name): took ${elapsed}s (limit ${limit}s)"; failed=1; return
  fi
  echo "ok ($name, ${elapsed}s): $(grep -hoE -e "$pattern" "$1" | head -1)"
}
# node RANK NNODES OUT [ENV...]: one node's launcher in the background, its
# ranks' set-up deadline $connect ms.
connect=20000
node() {
  local rank=$1 nnodes=$2 out=$3
  shift 3
  ( env "$@" timeout 60 "$launch" --nnodes "$nnodes" --node_rank "$rank" --nproc_per_node 2 \
      --coordinator "127.0.0.1:$port" --connect_timeout_ms "$connect" -- \
      "$mnist" "${args[@]}" --mesh_shape "all:$((2 * nnodes))" >"$out" 2>&1
    echo "exit $?" >>"$out" ) &
}

start=$(date +%s.%N)
( timeout 60 "$launch" --nnodes 2 --node_rank 0 -n 2 --coordinator no-such-host.invalid:29500 \
    -- "$mnist" "${args[@]}" >"$work/resolve" 2>&1; echo "exit $?" >>"$work/resolve" )
expect "unresolvable host" 5 'cannot resolve "no-such-host.invalid"' "$work/resolve"

start=$(date +%s.%N)
( timeout 60 "$launch" --nnodes 2 --node_rank 1 -n 2 --coordinator "127.0.0.1:$port" \
    --connect_timeout_ms 3000 -- "$mnist" "${args[@]}" --mesh_shape all:4 >"$work/unreachable" 2>&1
  echo "exit $?" >>"$work/unreachable" )
expect "coordinator unreachable" 15 "could not connect to rank 0 \(the coordinator\)" "$work/unreachable"

port=$((port + 1)) start=$(date +%s.%N)
node 1 3 "$work/nnodes1"
node 0 2 "$work/nnodes0"
wait
expect "nodes disagree on --nnodes" 15 "rank [23] is in a job of 6 processes but rank 0 in one of 4" \
  "$work/nnodes0" "$work/nnodes1"

port=$((port + 1)) start=$(date +%s.%N)
node 1 3 "$work/same1a"
node 1 3 "$work/same1b"
sleep 0.5
node 0 3 "$work/same0"
wait
expect "two nodes claim one --node_rank" 15 "two processes claim rank [23]" "$work/same0"
if ! grep -qE "two processes claim rank [23]" "$work/same1a" "$work/same1b"; then
  echo "FAIL (two nodes claim one --node_rank): neither node 1 was told"; failed=1
fi

port=$((port + 1)) start=$(date +%s.%N)
connect=5000  # rank 0 waits for the set-up deadline: a stranger cannot end a job
node 1 2 "$work/token1" MTF_JOB_TOKEN=another-token-entirely
node 0 2 "$work/token0"
wait
expect "another job token (node 1)" 15 "does not know the job token" "$work/token1"
expect "another job token (node 0)" 15 "has another job token" "$work/token0"

start=$(date +%s.%N)
( env -u MTF_JOB_TOKEN "$launch" --nnodes 2 --node_rank 0 -n 2 --coordinator "127.0.0.1:$port" \
    -- "$mnist" >"$work/notoken" 2>&1; echo "exit $?" >>"$work/notoken" )
expect "no token across machines" 5 "needs the same token on every node" "$work/notoken"
( "$launch" --nnodes 2 --node_rank 2 -n 2 --coordinator "127.0.0.1:$port" -- "$mnist" \
    >"$work/range" 2>&1; echo "exit $?" >>"$work/range" )
expect "--node_rank out of range" 5 "--node_rank 2 is outside 0..1" "$work/range"

left=$(pgrep -f -- "$mnist ${args[*]}" | wc -l)
[ "$left" -eq 0 ] || { echo "FAIL: $left rank processes left running"; failed=1; }
[ $failed -eq 0 ] && echo "PASS: every bad input was a clear error within its deadline"
exit $failed
