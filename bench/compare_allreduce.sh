#!/bin/bash
# Allreduce across 2, 4 and 8 processes on this machine: mtf over shared
# memory (its default between ranks of one machine), over TCP (MTF_SHM=0) and
# over MPI, OpenMPI's MPI_Allreduce over TCP (btl tcp) and shared memory (btl
# vader), and Gloo's ring allreduce over TCP, in one run. Prints a markdown
# table of time per call (us) and algorithm bandwidth (GB/s).
# A backend this build or machine lacks (Gloo, which Debian does not
# package) is skipped with one line. About 40 s on 2 CPUs (35 s measured);
# --quick (2 and 4 ranks up to 1 MiB) about 7 s.
# Usage: bench/compare_allreduce.sh [--quick] [BUILD_DIR] [MAX_BYTES]
set -euo pipefail
ranks="2 4 8"
case "${1:-}" in
  -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) [ "$1" = --quick ] || { echo "compare_allreduce.sh: unknown option $1 (--quick, or a build directory)" >&2; exit 2; } ;;
esac
if [ "${1:-}" = --quick ]; then
  shift
  ranks="2 4"
  set -- "${1:-build}" "${2:-1048576}"
fi
build=${1:-build}
max=${2:-67108864}
bin=$build/bench/allreduce_processes
launch=$build/tools/mtf-launch
if [ ! -x "$bin" ]; then
  echo "compare_allreduce.sh: $bin is missing: it is built with MPI (bash scripts/setup.sh test installs OpenMPI)" >&2
  exit 1
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none"
gloo=1
"$bin" has gloo || { gloo=0; echo "compare_allreduce.sh: this build has no Gloo; its column is left out" >&2; }
out=$(mktemp)
for n in $ranks; do
  "$launch" -n "$n" -- "$bin" mtf-tcp "$max" | sed 's/^\[0\] //; s/^mtf-tcp /mtf-shm /' >>"$out"
  MTF_SHM=0 "$launch" -n "$n" -- "$bin" mtf-tcp "$max" | sed 's/^\[0\] //' >>"$out"
  $mpi -np "$n" "$bin" mtf-mpi "$max" >>"$out"
  $mpi -np "$n" --mca btl self,tcp "$bin" mpi "$max" | sed 's/^mpi /mpi-tcp /' >>"$out"
  $mpi -np "$n" --mca btl self,vader "$bin" mpi "$max" | sed 's/^mpi /mpi-shm /' >>"$out"
  if [ "$gloo" = 1 ]; then
    store=$(mktemp -d)
    GLOO_STORE_DIR=$store "$launch" -n "$n" -- "$bin" gloo "$max" | sed 's/^\[0\] //' >>"$out"
    rm -rf "$store"
  fi
done
python3 - "$out" <<'PY'
import sys, collections
rows = collections.defaultdict(dict)
impls = ["mtf-shm", "mtf-tcp", "mtf-mpi", "mpi-tcp", "mpi-shm", "gloo"]
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 5 or f[0] not in impls: continue
    rows[(int(f[1]), int(f[2]))][f[0]] = (float(f[3]), float(f[4]))
impls = [i for i in impls if any(i in r for r in rows.values())]  # backends that ran
def size(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB" if b >= 1024 else f"{b} B"
print("| ranks | bytes | " + " | ".join(f"{i} us (GB/s)" for i in impls) +
      " | mtf-shm / mpi-shm bandwidth | mtf-tcp / mpi-tcp bandwidth |")
print("|" + "---|" * (len(impls) + 4))
for (n, b) in sorted(rows):
    r = rows[(n, b)]
    cells = [f"{r[i][0]:.1f} ({r[i][1]:.3g})" if i in r else "-" for i in impls]
    def ratio(a, b):
        return f"{r[a][1] / r[b][1]:.2f}" if a in r and b in r else "-"
    print(f"| {n} | {size(b)} | " + " | ".join(cells) +
          f" | {ratio('mtf-shm', 'mpi-shm')} | {ratio('mtf-tcp', 'mpi-tcp')} |")
PY
rm -f "$out"
