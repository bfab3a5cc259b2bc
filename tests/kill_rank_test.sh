#!/bin/bash
# kill -9 one rank mid-training: every rank and the launcher exit non-zero
# within 10 s, the output names the lost rank, and nothing is left running
# or in /dev/shm. The ranks talk over shared memory (they share this
# machine), or over loopback TCP when MTF_SHM=0. With STOP as the third
# argument the rank is stopped (SIGSTOP) instead: the others time out
# (MTF_TIMEOUT_MS=2000) and the launcher names the stopped rank as the cause.
# Usage: kill_rank_test.sh MTF_LAUNCH MNIST [STOP]
set -u
launch=$1 mnist=$2 how=${3:-KILL}
[ "$how" = STOP ] && export MTF_TIMEOUT_MS=2000
out=$(mktemp)
shm_before=$(ls /dev/shm 2>/dev/null | sort)
"$launch" -n 4 --output all -- "$mnist" --steps 1000000 --eval_every 1000000 --batch_size 40 --hidden 64 \
  --mesh_shape "all:4" --layout "batch:all" >"$out" 2>&1 &
launcher=$!
# Wait until training runs (every rank printed its mesh line).
for _ in $(seq 1 100); do
  [ "$(grep -c 'processes over TCP' "$out")" -ge 4 ] && break
  sleep 0.1
done
sleep 0.5
if [ "${MTF_SHM:-1}" != 0 ] && ! grep -q "shared memory with 3 ranks on this machine" "$out"; then
  echo "FAIL: the ranks do not talk over shared memory"; cat "$out"; kill -9 "$launcher"; exit 1
fi
victim=$(pgrep -P "$launcher" | sed -n 3p)
[ -n "$victim" ] || { echo "FAIL: no rank processes found"; cat "$out"; exit 1; }
victim_rank=$(tr '\0' '\n' <"/proc/$victim/environ" | sed -n 's/^MTF_RANK=//p')
kill -s "$how" "$victim"
start=$(date +%s.%N)
status=0
for _ in $(seq 1 100); do
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$launcher" 2>/dev/null; then
  echo "FAIL: the launcher still runs 10 s after the kill"; kill -9 "$launcher"; cat "$out"; exit 1
fi
wait "$launcher"; status=$?
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
left=$(pgrep -f -- "--steps 1000000 --eval_every 1000000" | wc -l)
cat "$out" | tail -8
if [ "$status" -eq 0 ]; then echo "FAIL: the launcher exited 0"; exit 1; fi
if [ "$left" -ne 0 ]; then echo "FAIL: $left rank processes left running"; exit 1; fi
if [ "$how" = STOP ]; then
  if ! grep -q "rank $victim_rank was stopped by signal 19" "$out"; then
    echo "FAIL: the launcher did not name the stop of rank $victim_rank"; exit 1
  fi
  if ! grep -q "cause: rank $victim_rank (stopped by signal 19)" "$out" || [ "$status" -ne 147 ]; then
    echo "FAIL: the launcher did not report rank $victim_rank's stop as the cause (status $status)"
    exit 1
  fi
else
  if ! grep -q "rank $victim_rank was killed by signal 9" "$out"; then
    echo "FAIL: the launcher did not name the kill of rank $victim_rank"; exit 1
  fi
  if ! grep -q "cause: rank $victim_rank (signal 9)" "$out" || [ "$status" -ne 137 ]; then
    echo "FAIL: the launcher did not report rank $victim_rank's kill as the cause (status $status)"; exit 1
  fi
  if ! grep -qE "rank [0-9] is lost" "$out"; then echo "FAIL: no rank named the lost rank"; exit 1; fi
fi
shm_after=$(ls /dev/shm 2>/dev/null | sort)
if [ "$shm_before" != "$shm_after" ]; then
  echo "FAIL: /dev/shm changed: $(comm -13 <(echo "$shm_before") <(echo "$shm_after") | tr '\n' ' ')"
  exit 1
fi
echo "PASS: all ranks stopped in ${elapsed}s, launcher status $status"
