#!/bin/sh
# The farm on a real single-node Slurm cluster: tests/integration/farm.sh BUILD_DIR
# (tests/run.sh passes the build folder and exports DRAPED and DRAPE).
# Prints PASS/FAIL lines and ends with "N passed, M failed".
#
# munged, slurmctld and slurmd start as root with a config written into a
# temporary folder (proctrack/linuxproc, no cgroups, no accounting, so
# `drape farm status` falls back to squeue and the frames on disk) and are
# stopped by their pid files. `drape submit` sends a 3-value wedge of the
# flag scene (cloth.material), one task is requeued with `scontrol requeue`
# in the middle of its run, and every task's frames must equal the same
# parameters run straight through with `drape run --local`, byte for byte.
# The requeued task must continue from its checkpoint: the frames it
# re-solves are only those after it (reported below).
#
# Without root, or when Slurm cannot start, the test cannot run: it says
# why, and fails under CI=true (it must not pass by not running).
set -u
B=${1:-build}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DRAPE=${DRAPE:-$TOP/$B/drape}
DRAPED=${DRAPED:-$TOP/$B/draped}
export DRAPED
FRAMES=${FARM_FRAMES:-10}
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }
cannot_run() {
	echo "farm.sh: cannot run the Slurm test: $1" >&2
	if [ "${CI:-}" = true ]; then
		fail "slurm cluster" "$1 (CI=true: the farm test must run)"
	else
		echo "SKIP slurm cluster: $1 (fails under CI=true)"
	fi
	finish
}

[ "$(id -u)" = 0 ] || cannot_run "not root (munged, slurmctld and slurmd run as root here)"
for b in munged slurmctld slurmd sbatch squeue scontrol; do
	command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] ||
		cannot_run "$b is not installed (deploy/deps.sh installs slurm-wlm and munge)"
done
PATH=$PATH:/usr/sbin

T=$(mktemp -d /tmp/drape-farm-XXXXXX)
chmod 755 "$T"
export XDG_CACHE_HOME="$T/cache"
unset DRAPE_SERVER DRAPE_TOKEN
stop_pid_file() {
	[ -f "$1" ] || return 0
	p=$(cat "$1" 2>/dev/null)
	[ -n "$p" ] || return 0
	kill "$p" 2>/dev/null
	i=0
	while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	kill -9 "$p" 2>/dev/null
}
cleanup() {
	if [ -n "${JOB:-}" ]; then scancel "$JOB" 2>/dev/null; fi
	stop_pid_file "$T/slurmd.pid"
	stop_pid_file "$T/slurmctld.pid"
	stop_pid_file "$T/munged.pid"
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- The cluster ----
dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$T/munge.key"
munged --force --socket="$T/munge.sock" --key-file="$T/munge.key" --pid-file="$T/munged.pid" \
	--log-file="$T/munged.log" --seed-file="$T/munge.seed" ||
	cannot_run "munged did not start: $(tail -3 "$T/munged.log" 2>/dev/null)"
HOST=$(hostname -s)
NODE=$(slurmd -C 2>/dev/null | head -1)
[ -n "$NODE" ] || cannot_run "slurmd -C printed no node line"
# Below the ephemeral range (32768 and up): no outgoing connection holds them.
BASEPORT=$((10000 + $$ % 20000))
mkdir -p "$T/ctld" "$T/spool"
cat >"$T/slurm.conf" <<CONF
ClusterName=drapetest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$BASEPORT
SlurmdPort=$((BASEPORT + 1))
SrunPortRange=$((BASEPORT + 2))-$((BASEPORT + 40))
AuthType=auth/munge
# cred_expire also delays a requeued job (BeginTime = now + cred_expire):
# the minimum keeps the test short.
AuthInfo=socket=$T/munge.sock,cred_expire=5
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/ctld
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
KillWait=30
SlurmctldTimeout=30
SlurmdTimeout=60
$NODE NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=farm Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
export SLURM_CONF="$T/slurm.conf"
slurmctld -f "$SLURM_CONF" -i >/dev/null 2>&1 || cannot_run "slurmctld did not start: $(tail -3 "$T/slurmctld.log")"
slurmd -f "$SLURM_CONF" >/dev/null 2>&1 || cannot_run "slurmd did not start: $(tail -3 "$T/slurmd.log")"
i=0
until sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; do
	i=$((i + 1))
	[ $i -lt 300 ] || cannot_run "the node never became idle: $(sinfo 2>&1 | tail -2); $(tail -3 "$T/slurmctld.log")"
	sleep 0.2
done
pass "single-node Slurm cluster up ($(sinfo -h -o '%N %c CPUs %T'))"

# ---- Submit a wedge ----
VALUES="cotton silk denim"
t0=$(date +%s)
JOB=$("$DRAPE" submit "$TOP/examples/flag.json" --wedge cloth.material=cotton,silk,denim \
	--frames "$FRAMES" --out "$T/out" --slurm "--cpus-per-task=1" 2>"$T/submit.err")
rc=$?
case "$JOB" in
[0-9]*) [ $rc -eq 0 ] && pass "drape submit printed job $JOB" || fail "submit" "exit $rc" ;;
*) fail "submit" "exit $rc, printed \"$JOB\": $(cat "$T/submit.err")"; finish ;;
esac
n=$(ls -d "$T/out"/task_000?/ 2>/dev/null | wc -l)
[ "$n" -eq 3 ] && pass "3 tasks, one per wedge value" || fail "tasks" "$n task folders"
grep -q '"cloth.material":[[:space:]]*"silk"' "$T/out/task_0002/params.json" &&
	[ -d "$T/out/task_0002/flag_cloth.material=silk" -o ! -e "$T/out/task_0002/flag_cloth.material=silk" ] &&
	pass "task_0002/params.json records cloth.material=silk" ||
	fail "params.json" "$(cat "$T/out/task_0002/params.json")"

# ---- Requeue task 2 in the middle of its run ----
F2="$T/out/task_0002/flag_cloth.material=silk"
i=0
while [ ! -f "$F2/frame_0002.obj" ]; do
	i=$((i + 1))
	if [ $i -gt 3000 ]; then
		fail "task 2 running" "no frame 2 after 600 s: $(squeue 2>&1); $(cat "$T/out/task_0002/slurm.out" 2>/dev/null)"
		finish
	fi
	sleep 0.2
done
before=$(ls "$F2" | grep -c '^frame_')
if scontrol requeue "${JOB}_2" 2>"$T/requeue.err"; then
	pass "scontrol requeue ${JOB}_2 with $before of $FRAMES frames written"
else
	fail "requeue" "$(cat "$T/requeue.err")"
fi

# The references, run straight through in this process while the farm works.
for v in $VALUES; do
	"$DRAPE" run "$TOP/examples/flag.json" --local --set cloth.material="$v" --frames "$FRAMES" \
		--out "$T/ref/$v" --quiet || fail "reference $v" "drape run --local exit $?"
done

# ---- Wait for the farm to finish ----
i=0
until "$DRAPE" farm status "$T/out" >"$T/status" 2>&1; do
	i=$((i + 1))
	if [ $i -gt 1800 ]; then
		fail "farm status" "not all done after 900 s: $(cat "$T/status"); $(squeue 2>&1)"
		break
	fi
	sleep 0.5
done
t1=$(date +%s)
grep -q "3 done" "$T/status" && pass "drape farm status exits 0: $(tail -1 "$T/status")" ||
	fail "farm status" "$(cat "$T/status")"
echo "farm.sh: wedge of 3 x $FRAMES frames on the local Slurm: $((t1 - t0)) s wall (submit to all done, references included)"

# ---- Every task's frames equal the straight-through run ----
k=1
for v in $VALUES; do
	d="$T/out/task_000$k/flag_cloth.material=$v"
	bad=0
	f=1
	while [ $f -le "$FRAMES" ]; do
		name=$(printf 'frame_%04d.obj' $f)
		cmp -s "$d/$name" "$T/ref/$v/$name" || bad=$((bad + 1))
		f=$((f + 1))
	done
	[ $bad -eq 0 ] && pass "task $k ($v): $FRAMES frames byte-identical to drape run --local" ||
		fail "task $k ($v)" "$bad of $FRAMES frames differ from the straight-through run"
	k=$((k + 1))
done

# ---- The requeued task continued from its checkpoint ----
out2="$T/out/task_0002/slurm.out"
resume=$(grep '"event":"resume"' "$out2" | tail -1)
if [ -n "$resume" ]; then
	done_before=$(echo "$resume" | sed 's/.*"frames_done":\([0-9]*\).*/\1/')
	resolved=$((FRAMES - done_before))
	echo "farm.sh: requeued task: checkpoint at frame $done_before on SIGTERM ($before frames written then); the second attempt solved only frames $((done_before + 1))..$FRAMES ($resolved), none of the $done_before solved before"
	[ "$done_before" -ge "$before" ] &&
		pass "requeued task resumed at its checkpoint (frame $done_before >= the $before written), solving only the $resolved frames after it" ||
		fail "resume point" "checkpoint at $done_before but $before frames were written"
	# The second attempt delivers from the first frame the folder lacked:
	# the ones solved before the requeue but not yet written come from the
	# daemon's frame cache, the rest are solved now.
	# The first attempt may write a frame or two between the requeue
	# being asked for ($before written then) and SIGTERM reaching it, so
	# the frames it wrote are counted from its own log lines.
	next=$(echo "$resume" | sed 's/.*"next_frame":\([0-9]*\).*/\1/')
	written1=$(sed '/"event":"resume"/,$d' "$out2" | grep -c '^{"frame"')
	solved2=$(sed -n '/"event":"resume"/,$p' "$out2" | grep -c '^{"frame"')
	[ "$solved2" -eq $((FRAMES - next + 1)) ] && [ "$next" -eq $((written1 + 1)) ] && [ "$written1" -ge "$before" ] &&
		pass "the second attempt delivered frames $next..$FRAMES ($solved2) after the $written1 the first wrote, $((done_before - next + 1)) of them from the checkpointed cache" ||
		fail "second attempt" "$solved2 frames after the resume from frame $next; the first attempt wrote $written1 ($before when the requeue was asked)"
else
	fail "requeued task" "no resume event in its log: $(cat "$out2")"
fi
finish
