#!/bin/bash
# mtf-launch --max_restarts: a 4-rank MNIST job (reproducible mode, shared
# memory between the ranks) has a random rank killed (SIGKILL) at a random
# moment, KILLS times, each time after the job was started again. The job
# must finish with status 0, the launcher must name each killed rank and
# each restart, every restart must resume from a checkpoint once one exists,
# and the losses of the last attempt and the test loss must be
# bit-identical to an uninterrupted run's. Nothing may be left running or
# in /dev/shm. Usage: restart_test.sh MTF_LAUNCH MNIST WORKDIR [KILLS] [SEED]
set -u
launch=$1 mnist=$2 work=$3 kills=${4:-3} seed=${5:-$$}
RANDOM=$seed
echo "seed $seed (rerun with: $0 $launch $mnist $work $kills $seed)"
rm -rf "$work" && mkdir -p "$work"
common=(--steps 6000 --eval_every 500 --save_every 40 --batch_size 40 --hidden 256
        --mesh_shape "all:4" --layout "batch:all" --loss_digits 17)
shm_before=$(ls /dev/shm 2>/dev/null | sort)

"$launch" -n 4 -- "$mnist" "${common[@]}" --checkpoint_dir "$work/straight" >"$work/straight.txt" 2>&1 ||
  { echo "FAIL: the uninterrupted run failed"; cat "$work/straight.txt"; exit 1; }

"$launch" -n 4 --max_restarts $((kills + 2)) -- "$mnist" "${common[@]}" \
  --checkpoint_dir "$work/restarted" >"$work/restarted.txt" 2>&1 &
launcher=$!
victims=()
for k in $(seq 1 "$kills"); do
  # Wait until attempt k runs: k-1 restarts said and four ranks alive.
  for _ in $(seq 1 300); do
    [ "$(grep -c '^mtf-launch: restart ' "$work/restarted.txt")" -ge $((k - 1)) ] &&
      [ "$(pgrep -P "$launcher" | wc -l)" -eq 4 ] && break
    sleep 0.05
  done
  # A random moment of the attempt: meeting, training, saving (0-3 s).
  sleep "$((RANDOM % 3)).$((RANDOM % 10))"
  mapfile -t ranks < <(pgrep -P "$launcher")
  if [ "${#ranks[@]}" -eq 0 ]; then
    echo "FAIL: no ranks to kill for kill $k (did the job end early?)"
    cat "$work/restarted.txt"; kill -9 "$launcher" 2>/dev/null; exit 1
  fi
  victim=${ranks[$((RANDOM % ${#ranks[@]}))]}
  rank=$(tr '\0' '\n' <"/proc/$victim/environ" 2>/dev/null | sed -n 's/^MTF_RANK=//p')
  kill -9 "$victim" 2>/dev/null && victims+=("$rank")
  echo "kill $k: rank $rank (pid $victim)"
done
for _ in $(seq 1 1200); do
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$launcher" 2>/dev/null; then
  echo "FAIL: the job still runs 120 s after the last kill"; kill -9 "$launcher"
  cat "$work/restarted.txt"; exit 1
fi
wait "$launcher"; status=$?
grep "^mtf-launch" "$work/restarted.txt"
[ "$status" -eq 0 ] || { echo "FAIL: the launcher exited $status"; cat "$work/restarted.txt"; exit 1; }
for k in $(seq 1 "${#victims[@]}"); do
  grep -q "^mtf-launch: restart $k of $((kills + 2)):" "$work/restarted.txt" ||
    { echo "FAIL: restart $k was not said"; exit 1; }
done
for r in "${victims[@]}"; do
  grep -q "cause: rank $r (signal 9); restarting" "$work/restarted.txt" ||
    { echo "FAIL: the kill of rank $r was not named as a cause"; exit 1; }
done
restarts=$(grep -c '^mtf-launch: restart ' "$work/restarted.txt")
resumes=$(grep -c '^resumed from ' "$work/restarted.txt")
[ "$restarts" -ge "$kills" ] || { echo "FAIL: $restarts restarts for $kills kills"; exit 1; }
echo "restarts: $restarts, resumed from a checkpoint: $resumes"

# The last attempt's lines (after the last restart) against the same steps
# of the uninterrupted run, and the final test loss.
last=$(awk '/^mtf-launch: restart /{buf=""; next} {buf = buf $0 "\n"} END{printf "%s", buf}' \
  "$work/restarted.txt")
got=$(grep -E '^step [0-9]+ loss ' <<<"$last")
[ -n "$got" ] || { echo "FAIL: the last attempt printed no loss"; cat "$work/restarted.txt"; exit 1; }
want=$(while read -r _ s _; do grep -E "^step $s loss " "$work/straight.txt"; done <<<"$got")
if [ "$got" != "$want" ]; then
  echo "FAIL: the restarted job's losses differ from the uninterrupted run's"
  diff <(echo "$want") <(echo "$got"); exit 1
fi
test_want=$(grep -E '^test ' "$work/straight.txt")
test_got=$(grep -E '^test ' <<<"$last")
if [ -z "$test_want" ] || [ "$test_want" != "$test_got" ]; then
  echo "FAIL: test lines differ: uninterrupted '$test_want', restarted '$test_got'"; exit 1
fi
left=$(pgrep -f -- "--checkpoint_dir $work/" | wc -l)
[ "$left" -eq 0 ] || { echo "FAIL: $left rank processes left running"; exit 1; }
shm_after=$(ls /dev/shm 2>/dev/null | sort)
if [ "$shm_before" != "$shm_after" ]; then
  echo "FAIL: /dev/shm changed: $(comm -13 <(echo "$shm_before") <(echo "$shm_after") | tr '\n' ' ')"
  exit 1
fi
echo "$got" | tail -3
echo "$test_got"
echo "PASS: ${#victims[@]} kills (ranks ${victims[*]}), $restarts restarts, the same losses to the bit"
