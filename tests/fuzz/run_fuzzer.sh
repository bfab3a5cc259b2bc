#!/bin/bash
# Runs one libFuzzer target for SECONDS over a copy of its seed corpus (the
# repository's corpus is never changed; new inputs go to WORK/corpus), and
# fails with the input that made it crash, hang or leak, written to WORK.
# Usage: run_fuzzer.sh FUZZER SEED_CORPUS SECONDS WORK
set -u
fuzzer=$1 seeds=$2 seconds=$3 work=$4
[ -x "$fuzzer" ] || { echo "FAIL: $fuzzer is not built"; exit 1; }
rm -rf "$work" && mkdir -p "$work/corpus" "$work/tmp"
export TMPDIR=$work/tmp
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$(dirname "$0")/lsan.supp}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" "$seeds" >"$work/log" 2>&1
status=$?
grep -E "^#[0-9]+.*(DONE|pulse)|stat::number_of_executed_units|stat::peak_rss_mb|cov:" "$work/log" |
  tail -4
if [ "$status" -ne 0 ]; then
  tail -60 "$work/log"
  echo "FAIL: $(basename "$fuzzer") found an input that fails (status $status):" \
    "$(ls "$work"/crash-* "$work"/timeout-* "$work"/oom-* "$work"/leak-* 2>/dev/null | tr '\n' ' ')"
  exit 1
fi
echo "PASS: $(basename "$fuzzer"), $seconds s, $(sed -n 's/^stat::number_of_executed_units: *//p' \
  "$work/log") inputs, no failure"
