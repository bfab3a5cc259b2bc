#!/bin/bash
# A multi-process save that fails on one rank only (its file size limit, as
# a full disk on that rank's file system would): every rank stops with an
# error, and mtf-launch names that rank as the cause — not the first rank
# to exit, which is usually one that only learned of the failure (exit
# status 3). Usage: save_fails_on_one_rank_test.sh MTF_LAUNCH MNIST WORK
set -u
launch=$1 mnist=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
victim=2
out=$("$launch" -n 4 -- sh -c "trap '' XFSZ; [ \"\$MTF_RANK\" != $victim ] || ulimit -f 100;
  exec '$mnist' --hidden 400 --steps 12 --eval_every 10 --save_every 10 \
    --mesh_shape all:4 --layout hidden:all --checkpoint_dir '$work/ckpt'" 2>&1)
status=$?
echo "$out" | grep "^mtf-launch\|error" | head -12
[ "$status" -eq 1 ] || { echo "FAIL: launcher status $status, not rank $victim's 1"; exit 1; }
echo "$out" | grep -q "cause: rank $victim (status 1)" ||
  { echo "FAIL: rank $victim, whose save failed, is not named as the cause"; exit 1; }
echo "$out" | grep -q "failed on rank $victim" ||
  { echo "FAIL: the other ranks do not say that rank $victim failed"; exit 1; }
echo "PASS: rank $victim's failed save is named as the cause"
