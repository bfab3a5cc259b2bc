#!/bin/bash
# Two ranks in separate network namespaces joined by a veth pair, each with
# its own address: proves nothing assumes loopback. Skips (77) where the
# machine does not allow network namespaces (not root, no `ip netns`).
# Usage: netns_test.sh MNIST
set -u
mnist=$1
. "$(dirname "$0")/netns_pair.sh"
netns_pair mtf 10.77.0
args=(--steps 20 --eval_every 10 --batch_size 40 --hidden 64 --loss_digits 17
      --mesh_shape all:2 --layout batch:all)
token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
out0=$work/out0 out1=$work/out1
common=(MTF_WORLD_SIZE=2 MTF_LOCAL_WORLD_SIZE=2 MTF_COORDINATOR=10.77.0.1:29517 MTF_JOB_TOKEN=$token MTF_TIMEOUT_MS=30000)
ip netns exec "$ns0" env "${common[@]}" MTF_RANK=0 MTF_LISTEN_HOST=10.77.0.1 "$mnist" "${args[@]}" >"$out0" 2>&1 &
p0=$!
ip netns exec "$ns1" env "${common[@]}" MTF_RANK=1 MTF_LISTEN_HOST=10.77.0.2 "$mnist" "${args[@]}" >"$out1" 2>&1 &
p1=$!
wait $p0; s0=$?
wait $p1; s1=$?
want=$("$mnist" "${args[@]}" | grep -E "^step|^test accuracy")
got=$(grep -E "^step|^test accuracy" "$out0")
if [ $s0 -ne 0 ] || [ $s1 -ne 0 ]; then echo "FAIL: ranks exited $s0 $s1"; cat "$out0" "$out1"; exit 1; fi
if [ "$want" != "$got" ]; then echo "FAIL: differs from in-process:"; echo "$want"; echo "$got"; exit 1; fi
grep -q "rank 0 of 2 processes over TCP" "$out0" || { echo "FAIL: not a 2-process run"; cat "$out0"; exit 1; }
echo "PASS: two ranks in separate network namespaces (10.77.0.1, 10.77.0.2) trained bit-identically"
