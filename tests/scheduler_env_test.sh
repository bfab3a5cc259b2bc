#!/bin/bash
# Ranks started with no launcher, each finding its place in the job from the
# variables a scheduler sets: Slurm's srun (SLURM_PROCID, SLURM_STEP_NODELIST,
# ...; the job token from a file, the coordinator's port derived from the job
# id) and a torchrun-style launcher (RANK, WORLD_SIZE, MASTER_ADDR, ...). Two
# "nodes" of two tasks each, on this machine: the MNIST hybrid run (mesh 2x2)
# prints the in-process run's losses, to the last bit, on every rank.
# Usage: scheduler_env_test.sh MTF_LAUNCH MNIST
set -u
launch=$1 mnist=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(--steps 20 --eval_every 10 --batch_size 40 --hidden 64 --loss_digits 17
      --mesh_shape "rows:2,cols:2" --layout "batch:rows,hidden:cols")
lines() { grep -E "^step|^test accuracy" "$1"; }
"$mnist" "${args[@]}" >"$work/single" 2>&1 || { echo "FAIL: the in-process run failed"; exit 1; }
want=$(lines "$work/single")
"$launch" --new_token >"$work/token"
failed=0

run() {  # run NAME: starts 4 ranks with rank_env R, checks them
  local name=$1 pids=()
  for r in 0 1 2 3; do
    env -u MTF_RANK -u MTF_WORLD_SIZE -u MTF_JOB_TOKEN $(rank_env $r) \
      "$mnist" "${args[@]}" >"$work/$name.$r" 2>&1 &
    pids+=($!)
  done
  for r in 0 1 2 3; do
    if ! wait "${pids[$r]}"; then
      echo "FAIL ($name): rank $r failed:"; cat "$work/$name.$r"; failed=1; return
    fi
    if [ "$(lines "$work/$name.$r")" != "$want" ]; then
      echo "FAIL ($name): rank $r differs from the in-process run:"; cat "$work/$name.$r"
      failed=1; return
    fi
  done
  grep -q "rank 0 of 4 processes over TCP" "$work/$name.0" || {
    echo "FAIL ($name): not a 4-process TCP run"; cat "$work/$name.0"; failed=1; return; }
  echo "ok ($name): 4 ranks bit-identical to the in-process run"
}

job_id=$((1000 + $$ % 9000))
rank_env() {  # Slurm: 2 nodes x 2 tasks
  echo SLURM_JOB_ID=$job_id SLURM_STEP_ID=0 SLURM_PROCID=$1 SLURM_NTASKS=4 \
    SLURM_STEP_NUM_TASKS=4 SLURM_LOCALID=$(($1 % 2)) SLURM_NODEID=$(($1 / 2)) \
    SLURM_STEP_TASKS_PER_NODE="2(x2)" SLURM_STEP_NODELIST=localhost,localhost \
    MTF_JOB_TOKEN_FILE="$work/token"
}
run slurm

port=$((29900 + $$ % 90))
rank_env() {  # torchrun-style
  echo RANK=$1 WORLD_SIZE=4 LOCAL_RANK=$(($1 % 2)) LOCAL_WORLD_SIZE=2 GROUP_RANK=$(($1 / 2)) \
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port MTF_JOB_TOKEN=$(cat "$work/token")
}
run torchrun

[ $failed -eq 0 ] && echo "PASS: ranks started by Slurm's and torchrun's variables joined and agreed"
exit $failed
