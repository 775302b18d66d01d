#!/usr/bin/env bash
# with_testhosts.sh N [--spare-hosts K] [--slurm] [--fresh-dir DIR] [--event WHEN ACTION HOST]... -- command...
#
# Runs a command (a launcher call, usually under expect_exit.sh) on N fresh
# test hosts (scripts/testhosts.sh) of its own, then checks that no process
# of the job is left on any host and removes them all, even on failure.
#   --slurm                    Slurm on the hosts too (testhosts.sh slurm), and
#                              the command runs inside an allocation of all N
#                              (salloc -N N --no-kill) with no FX_HOSTFILE: the
#                              launcher takes the allocation's nodes; afterwards
#                              the allocation must be gone and every Slurm
#                              daemon stopped
#   --fresh-dir DIR            DIR is emptied first (a checkpoint directory)
#   --event WHEN ACTION HOST   once WHEN holds, do ACTION to HOST (events
#                              happen in the order given, each after the last):
#       WHEN   file:GLOB  a file matching GLOB exists (e.g. an HDF5 version's
#                         manifest: a deterministic point of the run's progress);
#                         {hosts} in GLOB is the set's name prefix, so a host's
#                         node-local files are this set's, never another's
#                         (file:/dev/shm/fx-hosts/{hosts}1/...: its first host)
#              stopped    a process on HOST is stopped: a rank froze at an
#                         injection point (FX_INJECT action SIGSTOP), the
#                         deterministic "during a checkpoint / the relaunch"
#       ACTION kill       the host is lost (testhosts.sh kill); HOST is a
#                         name or hostN (the set's N-th host), or several
#                         joined by ',' (lost together)
#              silence    its link goes down, and 0.5 s later it is lost
# The command sees FX_HOSTFILE (the first N-K hosts; the last K are spare
# hosts, for --supervise --spare-hosts K), FX_NET, FX_SSH and
# FX_MPIEXEC_ARGS. The host set is named after FX_TESTHOSTS_PREFIX (default
# fxt) on FX_TESTHOSTS_NET (default 10.231.79). Exit: the command's code;
# 1 if a process was left on a host (its sshd and slurmd aside) or the job
# ended before an event happened; 77 (skip) without root / ip netns / sshd
# (or Slurm and munge, with --slurm).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export FX_TESTHOSTS_PREFIX=${FX_TESTHOSTS_PREFIX:-fxt} FX_TESTHOSTS_NET=${FX_TESTHOSTS_NET:-10.231.79}
th="$here/testhosts.sh"
n=${1:?usage: with_testhosts.sh N [--spare-hosts K] [--slurm] [--event WHEN ACTION HOST]... -- command...}
shift
spare=0; slurm=0; events=()
while [ $# -gt 0 ]; do
  case "$1" in
    --spare-hosts) spare=$2; shift 2 ;;
    --slurm) slurm=1; shift ;;
    --fresh-dir) rm -rf "${2:?}"; mkdir -p "$2"; shift 2 ;;
    --event) events+=("$2|$3|$4"); shift 4 ;;
    --) shift; break ;;
    *) echo "with_testhosts: unknown option '$1'" >&2; exit 2 ;;
  esac
done
"$th" status >/dev/null 2>&1; [ $? -eq 77 ] && { echo "with_testhosts: test hosts unavailable here; skipped"; exit 77; }

cleanup() {
  [ -n "${job:-}" ] && kill -KILL -- -"$job" 2>/dev/null
  "$th" down
}
trap cleanup EXIT
"$th" up "$n" || exit 1
eval "$("$th" env 2)"
hostfile=$FX_HOSTFILE
head -n $((n - spare)) "$hostfile" >"$hostfile.active"
[ "$spare" -gt 0 ] && cp "$hostfile" "$hostfile.all"
export FX_HOSTFILE=$hostfile.active
[ "$spare" -gt 0 ] && export FX_HOSTFILE=$hostfile.all   # the supervisor splits it
if [ "$slurm" -eq 1 ]; then
  "$th" slurm; src=$?
  [ "$src" -eq 77 ] && { echo "with_testhosts: Slurm unavailable here; skipped"; exit 77; }
  [ "$src" -eq 0 ] || exit 1
  eval "$("$th" slurm-env)"
  # Only the job sees SLURM_CONF: afterwards, a process on this machine
  # that has it (an srun of PRRTE's) is a leftover of the job.
  slurm_conf=$SLURM_CONF
  export -n SLURM_CONF
  unset FX_HOSTFILE
  # --no-kill: a node lost mid-job leaves the allocation running on the
  # others (Slurm's default ends the whole job), which the relaunch needs.
  set -- env SLURM_CONF="$slurm_conf" salloc -N "$n" --no-kill -- "$@"
fi

setsid "$@" &
job=$!
missed=""
stopped_on() {  # a stopped process on host $1
  "$th" pids "$1" | xargs -r ps -o stat= -p 2>/dev/null | grep -q '^T'
}
for ev in "${events[@]}"; do
  IFS='|' read -r when action host <<<"$ev"
  hosts=()
  for h in ${host//,/ }; do hosts+=("${h/#host/$FX_TESTHOSTS_PREFIX}"); done  # host2: the set's second
  case "$when" in
    file:*)
      glob=${when#file:}
      glob=${glob//\{hosts\}/$FX_TESTHOSTS_PREFIX}
      until compgen -G "$glob" >/dev/null; do
        kill -0 "$job" 2>/dev/null || { missed=$ev; break 2; }
        sleep 0.05
      done
      what="$glob exists" ;;
    stopped)
      until stopped_on "${hosts[0]}"; do
        kill -0 "$job" 2>/dev/null || { missed=$ev; break 2; }
        sleep 0.05
      done
      what="a process on ${hosts[0]} is stopped" ;;
    *) echo "with_testhosts: unknown event condition '$when'" >&2; exit 2 ;;
  esac
  # The wall clock at the event (bash's EPOCHREALTIME, microseconds, no
  # fork): benchmarks subtract it from other clocks' readings.
  echo "with_testhosts: $what: $action ${hosts[*]} (at realtime $EPOCHREALTIME)"
  case "$action" in
    kill) "$th" kill "${hosts[@]}" ;;
    silence)
      for h in "${hosts[@]}"; do "$th" silence "$h"; done
      sleep 0.5; "$th" kill "${hosts[@]}" ;;
    *) echo "with_testhosts: unknown event action '$action'" >&2; exit 2 ;;
  esac
done
wait "$job"; rc=$?
job=""
"$th" disconnect   # the shared ssh connections' sessions are not the job's
# What is still running on the hosts, their own daemons aside.
leftovers() {
  local h procs out=""
  while read -r h _; do
    procs=$("$th" pids "$h" | xargs -r ps -o comm= -p | grep -vx -e sshd -e slurmd | sort | uniq -c | xargs)
    [ -n "$procs" ] && out+=" $h:$procs"
  done < <("$th" status)
  printf '%s' "$out"
}
# Processes still ending get up to 10 s (ranks that left with _exit; a
# Slurm step daemon, ended by slurmd after the allocation is revoked, took
# over a second on a loaded machine); whatever is left then is a leftover.
left=$(leftovers)
for _ in $(seq 20); do
  [ -z "$left" ] && break
  sleep 0.5
  left=$(leftovers)
done
if [ "$slurm" -eq 1 ]; then
  # A job still completing on a lost node has ended (Slurm waits for that
  # node to be marked down, SlurmdTimeout).
  jobs_left=$(SLURM_CONF=$slurm_conf timeout 10 squeue -h -t PENDING,RUNNING,SUSPENDED -o '%i %T %N' 2>&1)
  [ -n "$jobs_left" ] && { echo "with_testhosts: Slurm still lists jobs: $jobs_left" >&2; rc=1; }
  # shellcheck disable=SC2013  # /proc paths: one word each
  for f in $(grep -lz "^SLURM_CONF=$slurm_conf\$" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}; p=${p%/environ}
    [ -z "$(ip netns identify "$p" 2>/dev/null)" ] && left+=" this machine: $(ps -o pid=,args= -p "$p" | cut -c1-80)"
  done
  "$th" slurm-down || rc=1
fi
if [ -n "$missed" ]; then
  echo "with_testhosts: the job ended before event '$missed' happened" >&2
  rc=1
fi
if [ -n "$left" ]; then
  echo "with_testhosts: processes left on the hosts:$left" >&2
  rc=1
fi
exit "$rc"
