#!/bin/bash
# Real Slurm on this machine: starts munged, slurmctld and slurmd (Debian's
# slurm-wlm and munge) with a generated slurm.conf for this host on free
# ports, all state in WORK, then checks that
#  - `srun -n 4` of MNIST over TCP prints the in-process run's losses, to
#    the bit (reproducible mode);
#  - `sbatch --wait` of a script that runs the same srun does too;
#  - `srun --mpi=pmix` over the MPI transport does too, when Slurm's PMIx
#    plugin loads and this build has MPI (else it says why not);
#  - a running job cancelled with `scancel` leaves no process and no
#    shared-memory segment behind.
# Skipped (status 77) with the reason when the daemons cannot run here (not
# root, not installed, or they do not come up). The daemons are stopped at
# the end whatever happens. Usage: slurm_test.sh MNIST WORK
set -u
mnist=$1 work=$2
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || skip "starting slurmctld and slurmd needs root"
for c in munged munge slurmctld slurmd srun sbatch scancel squeue sinfo scontrol; do
  command -v "$c" >/dev/null ||
    skip "$c is not installed (apt-get install slurm-wlm munge; bash scripts/setup.sh test does)"
done
rm -rf "$work" && mkdir -p "$work/state" "$work/spool" || fail "cannot make $work"
work=$(cd "$work" && pwd)
host=$(hostname -s)

cleanup() {
  scontrol shutdown >/dev/null 2>&1
  for f in slurmctld slurmd munged; do
    [ -f "$work/$f.pid" ] && kill "$(cat "$work/$f.pid")" 2>/dev/null
  done
  sleep 0.5
  for f in slurmctld slurmd munged; do
    [ -f "$work/$f.pid" ] && kill -9 "$(cat "$work/$f.pid")" 2>/dev/null
  done
}
trap cleanup EXIT

# munge: a key of our own and a socket in WORK.
head -c 1024 /dev/urandom >"$work/munge.key" && chmod 400 "$work/munge.key"
munged -f --key-file="$work/munge.key" --socket="$work/munge.sock" \
  --pid-file="$work/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munge.seed" ||
  skip "munged does not start: $(tail -2 "$work/munged.log" 2>/dev/null)"

read -r ctld_port slurmd_port < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
cat >"$work/slurm.conf" <<EOF
ClusterName=mtftest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=mtf Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$work/slurm.conf
slurmctld -c -f "$SLURM_CONF" || skip "slurmctld does not start: $(tail -3 "$work/slurmctld.log")"
slurmd -f "$SLURM_CONF" || skip "slurmd does not start: $(tail -3 "$work/slurmd.log")"
for _ in $(seq 1 100); do
  [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && break
  sleep 0.1
done
[ "$(sinfo -h -o %t 2>/dev/null)" = idle ] ||
  skip "the Slurm node did not come up: $(sinfo 2>&1 | tail -1); $(tail -3 "$work/slurmd.log")"
echo "slurm: $(sinfo -h -o '%P %a %D %t %N') (slurmctld on port $ctld_port)"

export MTF_JOB_TOKEN=slurm-test-$RANDOM$RANDOM$RANDOM
common=(--steps 300 --eval_every 50 --batch_size 40 --hidden 64 --mesh_shape "all:4"
        --layout "batch:all" --loss_digits 17)
losses() { grep -E '^(step [0-9]+ loss|test accuracy)'; }
want=$("$mnist" "${common[@]}" | losses)
[ -n "$want" ] || fail "the in-process run printed no loss"

# srun: rank 0's lines (--label) against the in-process run.
got=$(srun -n 4 --label --mpi=none "$mnist" "${common[@]}" --transport tcp 2>"$work/srun.err" |
  sed -n 's/^0: //p' | losses)
[ "$got" = "$want" ] || { cat "$work/srun.err"; fail "srun -n 4 differs from in-process:
$(diff <(echo "$want") <(echo "$got"))"; }
echo "srun -n 4 over TCP: the in-process losses to the bit"

# sbatch --wait: the same srun in a batch script.
cat >"$work/job.sh" <<EOF
#!/bin/bash
#SBATCH --ntasks=4 --output=$work/batch.out
srun --label --mpi=none "$mnist" ${common[*]@Q} --transport tcp
EOF
sbatch --wait "$work/job.sh" >"$work/sbatch.txt" 2>&1 ||
  fail "sbatch --wait failed: $(cat "$work/sbatch.txt"; tail -5 "$work/batch.out")"
got=$(sed -n 's/^0: //p' "$work/batch.out" | losses)
[ "$got" = "$want" ] || fail "sbatch --wait differs from in-process:
$(diff <(echo "$want") <(echo "$got"))"
echo "sbatch --wait: the in-process losses to the bit"

# srun --mpi=pmix over the MPI transport, where it can run.
if ! srun --mpi=list 2>&1 | grep -q pmix; then
  echo "srun --mpi=pmix: not run (this Slurm has no PMIx plugin)"
else
  got=$(srun -n 4 --label --mpi=pmix "$mnist" "${common[@]}" --transport mpi 2>"$work/pmix.err" |
    sed -n 's/^0: //p' | losses)
  if [ "$got" = "$want" ]; then
    echo "srun --mpi=pmix over MPI: the in-process losses to the bit"
  elif grep -qE "can not load PMIx|Couldn't load specified plugin|not built with MPI|no MPI transport" \
      "$work/pmix.err"; then
    echo "srun --mpi=pmix: not run here ($(grep -m1 -oE "can not load PMIx library|Couldn't load specified plugin[^:]*|[^:]*not built with MPI[^.]*|[^:]*no MPI transport[^.]*" "$work/pmix.err"))"
  else
    cat "$work/pmix.err"
    fail "srun --mpi=pmix differs from in-process:
$(diff <(echo "$want") <(echo "$got"))"
  fi
fi

# scancel of a running job: nothing left.
shm_before=$(ls /dev/shm 2>/dev/null | sort)
cat >"$work/long.sh" <<EOF
#!/bin/bash
#SBATCH --ntasks=4 --output=$work/long.out
srun --mpi=none "$mnist" --steps 100000000 --eval_every 100000000 --batch_size 40 --hidden 64 \
  --mesh_shape all:4 --layout batch:all --transport tcp --checkpoint_dir "$work/long-ckpt"
EOF
job=$(sbatch --parsable "$work/long.sh") || fail "sbatch of the long job failed"
for _ in $(seq 1 200); do
  [ "$(pgrep -f -- "--checkpoint_dir $work/long-ckpt" | wc -l)" -ge 4 ] &&
    grep -q "processes over TCP" "$work/long.out" 2>/dev/null && break
  sleep 0.1
done
[ "$(pgrep -f -- "--checkpoint_dir $work/long-ckpt" | wc -l)" -ge 4 ] ||
  fail "the long job's 4 ranks did not start: $(cat "$work/long.out" 2>/dev/null)"
sleep 1
scancel "$job"
for _ in $(seq 1 200); do
  [ "$(pgrep -f -- "--checkpoint_dir $work/long-ckpt" | wc -l)" -eq 0 ] &&
    [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 0.1
done
left=$(pgrep -f -- "--checkpoint_dir $work/long-ckpt" | wc -l)
[ "$left" -eq 0 ] || fail "$left rank processes left 20 s after scancel"
shm_after=$(ls /dev/shm 2>/dev/null | sort)
[ "$shm_before" = "$shm_after" ] ||
  fail "/dev/shm changed: $(comm -13 <(echo "$shm_before") <(echo "$shm_after") | tr '\n' ' ')"
echo "scancel: no process and no shared-memory segment left"
echo "PASS: srun and sbatch under real Slurm daemons give the in-process losses"
