#!/usr/bin/env bash
# The fx launcher: mpiexec with ULFM on, oversubscription allowed, a hard
# time limit, and an exit status that tells the truth about failures.
#
#   scripts/launch.sh -n N [-s S] [-t SECONDS] [--hostfile FILE] [--supervise ...] [--] program [args...]
#   (./fx run in the repository; fx-run from an installed fx)
#
# Several hosts: --hostfile FILE (or FX_HOSTFILE), or inside a Slurm
# allocation the allocation's nodes (SLURM_JOB_NODELIST, expanded by
# `scontrol show hostnames`). Ranks are then mapped round-robin over the
# nodes (--map-by node), Open MPI is started on them from this MPI's
# prefix with PATH and fx's environment, and FX_NET (a CIDR such as
# 10.1.0.0/16) picks the interface for MPI and runtime traffic (TCP).
# FX_MPIEXEC_ARGS adds mpiexec options of your own (whitespace-separated).
#
# --supervise [--spare-hosts K] [--max-relaunches R] [--watchdog SECONDS]
# [--probe-timeout SECONDS]:
# run the job under scripts/supervise.py, which relaunches it on the live
# hosts (plus the hostfile's last K hosts, kept spare) when hosts are lost;
# -t then bounds every attempt together.
#
# mpiexec --with-ft ulfm returns 0 even when ranks were killed, so fx
# programs write their verdict to $FX_STATUS_FILE and this script exits
# with it. Codes (docs/architecture.md): 0 ok, 1 error, 3 survived
# failures, 4 aborted after failures, 124 time limit, 125 no verdict,
# 143 stopped by SIGTERM.
set -uo pipefail
# The env.sh beside this script: scripts/env.sh in the repository,
# <prefix>/libexec/fx/env.sh (this build's MPI on PATH) when installed.
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/env.sh"

# The name the user typed: fx-run (installed) says so through FX_LAUNCHER_NAME.
name=${FX_LAUNCHER_NAME:-fx run}
# usage [CODE]: the whole synopsis, to stdout for --help (0), else stderr.
usage() {
  local code=${1:-2}
  cat >&$((code == 0 ? 1 : 2)) <<TXT
usage: $name -n N [-s S] [-t SECONDS] [--hostfile FILE] [--supervise [--spare-hosts K]
         [--max-relaunches R] [--watchdog SECONDS] [--probe-timeout SECONDS]] [--] program [args...]
  -n N                 active ranks
  -s S                 spare ranks (default \$FX_SPARES or 0)
  -t SECONDS           time limit for the whole launch (default \$FX_TIMEOUT or 600)
  --hostfile FILE      hosts to run on (default \$FX_HOSTFILE; in Slurm, the allocation)
  --supervise          relaunch on the live hosts when hosts are lost (fx's supervisor)
  --spare-hosts K      supervised: the hostfile's last K hosts are kept spare (default \$FX_SPARE_HOSTS or 0)
  --max-relaunches R   supervised: at most R relaunches (default \$FX_MAX_RELAUNCHES or 2)
  --watchdog SECONDS   supervised: a job without progress for this long has lost a host
                       (default \$FX_WATCHDOG or 0: off)
  --probe-timeout SECONDS  supervised: how long a host's sshd may take to answer (default 2)
Exit codes: 0 ok, 1 error, 2 usage, 3 survived failures, 4 aborted after failures,
124 time limit, 125 no verdict, 143 stopped by SIGTERM (docs/user-guide.md, "Exit codes").
TXT
  exit "$code"
}
n=""; s=${FX_SPARES:-0}; t=${FX_TIMEOUT:-600}; hostfile=${FX_HOSTFILE:-}; supervise=0; sup_args=()
# Where each value came from, for error messages.
declare -A from=([n]="-n" [s]="-s" [t]="-t")
[ -n "${FX_SPARES:-}" ] && from[s]="FX_SPARES (environment)"
[ -n "${FX_TIMEOUT:-}" ] && from[t]="FX_TIMEOUT (environment)"
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=${2:-}; shift 2 ;;
    -s) s=${2:-}; from[s]="-s"; shift 2 ;;
    -t) t=${2:-}; from[t]="-t"; shift 2 ;;
    --hostfile) hostfile=${2:-}; shift 2 ;;
    --supervise) supervise=1; shift ;;
    --spare-hosts|--max-relaunches|--watchdog|--probe-timeout) sup_args+=("$1" "${2:-}"); shift 2 ;;
    --) shift; break ;;
    -h|--help) usage 0 ;;
    -*) echo "$name: unknown option '$1'" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || usage
for v in n s t; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "$name: ${from[$v]} expects a non-negative integer, got '${!v}'" >&2; exit 2; }
done
[ "$n" -ge 1 ] || { echo "$name: -n expects at least 1 active rank, got '$n'" >&2; exit 2; }
[ "$t" -ge 1 ] || { echo "$name: ${from[t]} expects a time limit of at least 1 second, got '$t'" >&2; exit 2; }
# The supervisor's options, checked here before anything starts: whole
# numbers of hosts and relaunches, seconds for the rest (the probe's > 0);
# their variables too, where set (the supervisor reads them for defaults).
sup_checks=("${sup_args[@]}")
for var in FX_SPARE_HOSTS FX_MAX_RELAUNCHES FX_WATCHDOG; do
  [ -z "${!var+set}" ] || sup_checks+=("$var" "${!var}")
done
for ((i = 0; i < ${#sup_checks[@]}; i += 2)); do
  opt=${sup_checks[i]} val=${sup_checks[i + 1]}
  case "$opt" in
    --spare-hosts|--max-relaunches|FX_SPARE_HOSTS|FX_MAX_RELAUNCHES) re='^[0-9]+$' what="a non-negative integer" ;;
    --probe-timeout) re='^([0-9]*[1-9][0-9]*(\.[0-9]*)?|[0-9]*\.[0-9]*[1-9][0-9]*)$' what="seconds > 0" ;;
    *) re='^[0-9]+(\.[0-9]+)?$' what="seconds >= 0 (0: off)" ;;
  esac
  [[ "$opt" != FX_* ]] || opt="$opt (environment)"
  [[ "$val" =~ $re ]] || { echo "$name: $opt expects $what, got '$val'" >&2; exit 2; }
done
if [ "$supervise" -eq 1 ] && [ -z "$hostfile" ] && [ -z "${SLURM_JOB_NODELIST:-}" ]; then
  echo "$name: --supervise needs the hosts to relaunch on: --hostfile FILE, FX_HOSTFILE or a Slurm allocation" >&2
  exit 2
fi
command -v mpiexec >/dev/null || { echo "$name: mpiexec not found; run ./fx setup or set FX_MPI_HOME" >&2; exit 2; }

# Where the launcher writes outside its own directory (FX_JOB_INFO, set by
# the supervisor), it writes a temporary made exclusively beside the target
# and renames it over a regular file only: a device node, FIFO, socket or
# link there is refused before anything starts (as root, /dev/full once
# became a regular file holding a run report).
# So is one whose directory takes no file (under a regular file, in /proc):
# it was accepted and then never written.
not_regular() { [ -L "$1" ] || { [ -e "$1" ] && [ ! -f "$1" ]; }; }
if [ -n "${FX_JOB_INFO:-}" ]; then
  if not_regular "$FX_JOB_INFO"; then
    why=$(stat -c %F "$FX_JOB_INFO")
  elif probe=$(mktemp "$FX_JOB_INFO.tmp.XXXXXX" 2>/dev/null); then
    rm -f "$probe"; why=""
  else
    why="no file can be created in '$(dirname "$FX_JOB_INFO")'"
  fi
  if [ -n "$why" ]; then
    echo "$name: env FX_JOB_INFO: expected a regular file path, got '$FX_JOB_INFO' ($why)" >&2
    exit 2
  fi
fi
# write_file PATH TEXT
write_file() {
  local tmp
  tmp=$(mktemp "$1.tmp.XXXXXX") || return 1
  { printf '%s\n' "$2" >"$tmp" && ! not_regular "$1" && mv -fT "$tmp" "$1"; } || { rm -f "$tmp"; return 1; }
}

total=$((n + s))
# Everything of this launch lives in one directory, removed at the end: the
# verdict file and what is named after it (start-up marks, kill stamps,
# logs), and Open MPI's session directories (PRRTE forwards the base to its
# daemons). A session directory is named after its process id, and one left
# by a killed mpiexec or daemon made a later one with the same pid fail its
# start-up ("The PMIx server's listener thread failed to start": PMIx will
# not replace a rendezvous file; measured: pid_max here is 32768, and a CI
# run left about a hundred). A directory of its own per launch cannot collide.
run_dir=$(mktemp -d "${TMPDIR:-/tmp}/fx-run.XXXXXX")
status_file=$run_dir/status
# Ranks of this launch still alive on this host: PRRTE gives them process
# groups of their own, so a killed mpiexec leaves them behind (one was seen
# waiting in MPI_Init for good after its mpiexec got SIGKILL). They carry
# this launch's verdict file and a PMIx rank in their environment.
kill_leftovers() {
  local ours f
  # (grep exits 2 when a process vanished during the scan: its list still counts)
  ours=$(grep -lzsFx -- "FX_STATUS_FILE=$status_file" /proc/[0-9]*/environ 2>/dev/null)
  [ -n "$ours" ] || return 0
  # shellcheck disable=SC2086,SC2013  # /proc paths: one word each
  for f in $(grep -lzs '^PMIX_RANK=' $ours 2>/dev/null); do
    f=${f#/proc/}
    kill -KILL "${f%/environ}" 2>/dev/null
  done
  return 0
}
trap 'kill_leftovers; rm -rf "$run_dir" 2>/dev/null' EXIT

# Inside a Slurm allocation with no hostfile: the allocation's nodes, as
# many slots each as the ranks need over the nodes that run them (the
# supervisor keeps the last --spare-hosts K spare). Before --supervise, which
# needs the host list.
if [ -z "$hostfile" ] && [ -n "${SLURM_JOB_NODELIST:-}" ] && command -v scontrol >/dev/null; then
  spare_hosts=${FX_SPARE_HOSTS:-0}
  for ((i = 0; i + 1 < ${#sup_args[@]}; i += 2)); do
    [ "${sup_args[i]}" = "--spare-hosts" ] && spare_hosts=${sup_args[i + 1]}
  done
  hostfile=$status_file.hosts
  scontrol show hostnames "$SLURM_JOB_NODELIST" >"$hostfile" ||
    { echo "$name: scontrol show hostnames '$SLURM_JOB_NODELIST' (SLURM_JOB_NODELIST) failed" >&2; exit 2; }
  nodes=$(wc -l <"$hostfile")
  [ "$supervise" -eq 1 ] && [[ "$spare_hosts" =~ ^[0-9]+$ ]] && [ "$spare_hosts" -lt "$nodes" ] && nodes=$((nodes - spare_hosts))
  sed -i "s/\$/ slots=$(( (total + nodes - 1) / nodes ))/" "$hostfile"
  echo "$name: hosts of Slurm job ${SLURM_JOB_ID:-?} (SLURM_JOB_NODELIST=$SLURM_JOB_NODELIST): $(cut -d' ' -f1 "$hostfile" | xargs)" >&2
fi
if [ "$supervise" -eq 1 ]; then
  # This shell (and its trap) are replaced: the supervisor reads a Slurm
  # host list, already deleted, through an inherited descriptor.
  if [ -n "$hostfile" ] && [ "$hostfile" = "$status_file.hosts" ]; then
    exec 3<"$hostfile"; hostfile=/dev/fd/3
  fi
  rm -rf "$run_dir"
  exec /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/supervise.py" "${sup_args[@]}" --hostfile "$hostfile" \
    -n "$n" -s "$s" -t "$t" -- "$@"
fi
[ ${#sup_args[@]} -eq 0 ] || { echo "$name: ${sup_args[0]} needs --supervise" >&2; exit 2; }

export FX_SPARES=$s
export FX_STATUS_FILE=$status_file
export PRTE_MCA_prte_tmpdir_base=${PRTE_MCA_prte_tmpdir_base:-$run_dir}

# Forward every FX_* variable (mpiexec forwards the environment only locally).
xargs_=()
while IFS='=' read -r var _; do xargs_+=(-x "$var"); done < <(env | grep -E '^FX_[A-Z0-9_]*=')

# Several hosts: where the ranks go and what Open MPI needs there.
hosts_=()
local_ranks=$total
if [ -n "$hostfile" ]; then
  # Syntax, readability and names, before Open MPI sees them (exit 2 / 1).
  /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/hostfile_check.py" "$hostfile" || exit
  mpi_prefix=$(cd "$(dirname "$(command -v mpiexec)")/.." && pwd)
  hosts_=(--hostfile "$hostfile" --map-by node --prefix "$mpi_prefix"
          -x PATH -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
          # coll/han (hierarchical collectives, active only across nodes)
          # crashes revoking its sub-communicators after a failure
          # (mca_coll_han_revoke_local -> mca_pml_ob1_revoke_comm, measured on
          # test hosts) and tripled kill -> resume (0.4-0.6 s vs 1.1-2.6 s).
          --mca coll ^han)
  # Inside a Slurm allocation PRRTE starts its daemons as a job step
  # (srun). The step of an attempt that lost a host never ends (the lost
  # node's part cannot report back), so a relaunch's step must share the
  # nodes with it (srun --overlap, Slurm >= 20.11).
  [ -n "${SLURM_JOB_ID:-}" ] && hosts_+=(--prtemca plm_slurm_args --overlap)
  if [ -n "${FX_NET:-}" ]; then
    # shellcheck disable=SC2054  # tcp,self: one value of Open MPI's
    hosts_+=(--mca btl tcp,self --mca btl_tcp_if_include "$FX_NET" --mca oob_tcp_if_include "$FX_NET"
             --prtemca oob_tcp_if_include "$FX_NET")
  fi
  local_ranks=0   # ranks on other hosts are no children of this mpiexec
fi
# shellcheck disable=SC2206  # whitespace-separated options by design
extra_=(${FX_MPIEXEC_ARGS:-})

# Local deaths are seen by the launcher at once; the heartbeat detector is
# for remote nodes (detector.period_s / timeout_s, seconds). mpiexec takes
# it before any rank starts, so the launcher asks the program itself: an fx
# program given --fx-print-launch loads its configuration from every source
# (file < FX_* < --fx-set, validated) and prints "key value" lines, without
# MPI. Other programs: FX_DETECTOR_PERIOD / FX_DETECTOR_TIMEOUT as they are.
mca=()
prog=$(command -v "$1" 2>/dev/null || true)
fx_program=0   # an fx program: answers --fx-print-launch, writes the start-up marks
if [ -n "$prog" ] && [ -f "$prog" ] && grep -qa -- "--fx-print-launch" "$prog"; then
  fx_program=1
  launch_out=$(FX_STATUS_FILE='' "$@" --fx-print-launch); launch_rc=$?
  # A configuration error: the program printed it; end as a rank would (2).
  [ "$launch_rc" -eq 0 ] || exit "$launch_rc"
  while read -r key value; do
    case "$key" in
      detector.period_s) FX_DETECTOR_PERIOD=$value ;;
      detector.timeout_s) FX_DETECTOR_TIMEOUT=$value ;;
    esac
  done <<< "$launch_out"
  [ "${FX_DETECTOR_PERIOD:-0}" = "0" ] && unset FX_DETECTOR_PERIOD
  [ "${FX_DETECTOR_TIMEOUT:-0}" = "0" ] && unset FX_DETECTOR_TIMEOUT
fi
if [ -n "${FX_DETECTOR_PERIOD:-}" ]; then
  detector_timeout=${FX_DETECTOR_TIMEOUT:-$(awk "BEGIN{print 4*$FX_DETECTOR_PERIOD}")}
  # The detecting rank must tell the others itself (a reliable broadcast
  # among the ranks): by default Open MPI 5 leaves that to its runtime,
  # which never passed a remote host's silence on (measured on test hosts:
  # the ranks that heard nothing hung in the repair's shrink).
  mca+=(--mca mpi_ft_detector true --mca mpi_ft_detector_period "$FX_DETECTOR_PERIOD"
        --mca mpi_ft_detector_timeout "$detector_timeout" --mca mpi_ft_propagator_with_rbcast true)
  echo "$name: heartbeat detector on (period ${FX_DETECTOR_PERIOD} s, timeout ${detector_timeout} s)" >&2
fi

# Start-up watch. Online recovery begins once every process has returned
# from MPI_Init (each touches $status_file.up.<rank>); before that a lost
# process leaves the others waiting inside Open MPI's start-up forever (a
# plain MPI program hangs the same way). So until then: a local rank (a
# child of mpiexec) that disappears, or no complete start-up within
# FX_STARTUP_TIMEOUT seconds (remote ranks), ends the job with verdict 4.
# Only fx programs are watched (others write no marks).
startup_timeout=${FX_STARTUP_TIMEOUT:-120}
[[ "$startup_timeout" =~ ^[0-9]+$ ]] ||
  { echo "$name: FX_STARTUP_TIMEOUT expects whole seconds, got '$startup_timeout'" >&2; exit 2; }
# Once the TERM trap below is set, this shell runs no command or process
# substitution: bash 5.2 runs a trap while it parses one, and the trap's
# text then fails to parse ("trap: line 2: unexpected EOF while looking
# for matching `)'"), so a supervised attempt's end ended 4, not 143 (once
# in 8; reproduced with a loop of $(...) and TERM: 2 in 30, none without).
# Functions set variables instead (printf -v, $EPOCHSECONDS, files).
startup_reset() {
  rm -f "$status_file".up.* "$status_file.end"
  started=0; peak=0; last_live=-1; startup_lost=""
  startup_t0=$EPOCHSECONDS; live_since=$startup_t0
}
# ups: the start-up marks written (only "up.<rank>": a mark is written as
# a temporary beside it first).
startup_count() {
  local f
  ups=0
  for f in "$status_file".up.*; do [[ "$f" =~ \.up\.[0-9]+$ ]] && [ -e "$f" ] && ups=$((ups + 1)); done
  return 0
}
# Every mark is there: sets started (ups is set either way).
startup_complete() {
  startup_count
  [ "$ups" -ge "$total" ] || return 1
  started=1
}
# live: mpiexec's children on this host that are not zombies.
count_live() {
  local st
  live=0
  ps -o stat= --ppid "$pid" >"$run_dir/children" 2>/dev/null
  while read -r st; do [[ "$st" == Z* ]] || live=$((live + 1)); done <"$run_dir/children"
  return 0
}
# local_ranks (above): ranks expected as children of mpiexec on this host
# (all of them unless a hostfile spreads them; 0: unknown, only a drop or
# the time-out counts).
# Returns 1 when the job must end: a process was lost during start-up.
startup_watch() {
  [ "$started" -eq 1 ] && return 0
  # A plain MPI program (a baseline, a benchmark) writes no marks: not watched.
  [ "$fx_program" -eq 1 ] || return 0
  local now=$EPOCHSECONDS
  # The processes first, the marks after: a drop seen here then happened
  # before the marks were counted. (The other way round, on a loaded
  # machine, the ranks once passed MPI_Init, ran and lost a rank to a kill
  # between the two counts: a job that had started was ended as lost in
  # start-up, "0 of 6 had returned from MPI_Init", twice in full suites.)
  count_live
  startup_complete && return 0
  [ -s "$status_file" ] && return 0   # a verdict was written: not a hang
  [ "$live" -ne "$last_live" ] && { last_live=$live; live_since=$now; }
  [ "$live" -gt "$peak" ] && peak=$live
  # A drop, or fewer local ranks than launched for 3 s (one that died
  # before this loop saw it).
  if [ "$live" -lt "$peak" ] ||
     { [ "$live" -lt "$local_ranks" ] && [ $((now - live_since)) -ge 3 ]; }; then
    # A process that exits on purpose writes its verdict first; a spare's
    # mark may come last; mpiexec ending takes its ranks with it, and the
    # ranks can go first (SIGABRT, on a loaded machine): after it has ended
    # the main path names it and its exit.
    local k
    for k in 1 2 3 4 5 6 7 8 9 10; do
      sleep 0.2
      [ -s "$status_file" ] && return 0
      startup_complete && return 0
      kill -0 "$pid" 2>/dev/null || return 0
      [ "$k" -ge 3 ] && [ "$live" -gt 0 ] && break   # ranks left, mpiexec alive: a lost rank
    done
    startup_lost="a process died during MPI start-up ($ups of $total had returned from MPI_Init); nothing to recover yet"
  elif [ $((now - startup_t0)) -ge "$startup_timeout" ]; then
    startup_lost="MPI start-up did not complete within ${startup_timeout}s (FX_STARTUP_TIMEOUT; $ups of $total had returned from MPI_Init): a process was lost or never started"
  else
    return 0
  fi
  echo "4 $startup_lost" > "$status_file"
  return 1
}

# Ends mpiexec's process group with SIGNAL; with KILL also the srun that
# started its daemons under Slurm (PRRTE gives it a process group of its
# own: it would outlive the job, and its step would too).
kill_mpiexec() {
  [ -n "${pid:-}" ] || return 0
  kill "-$1" -- -"$pid" 2>/dev/null
  [ "$1" = KILL ] && pkill -KILL -f "^srun .*ess_base_nspace \"?prterun-$HOSTNAME-$pid@0" 2>/dev/null  # srun's argv has the quotes
  return 0
}
# Stops mpiexec: TERM, then KILL after GRACE seconds (default 1).
stop_mpiexec() {
  kill_mpiexec TERM; sleep "${1:-1}"; kill_mpiexec KILL
}
# The supervisor (or a user) stopping the launcher stops the job.
trap 'kill_mpiexec KILL; exit 143' TERM

# launch ARGS: one mpiexec run, watched; sets rc and stuck.
start_out=$status_file.stdout
launch() {
  # Before mpiexec starts: on a loaded machine its ranks can pass MPI_Init
  # and write their marks before this shell runs its next line (the reset
  # once came after the start and removed them: a job whose ranks had all
  # started was then ended at its first kill as "lost during start-up").
  startup_reset
  # Own process group, so a time-out takes every rank with it.
  # stdout also goes to start_out (for the retry below) through a tee owned
  # by this shell: as mpiexec's own child it would count as a live rank in
  # the exit check below.
  rm -f "$run_dir/out"; mkfifo "$run_dir/out"
  tee "$start_out" <"$run_dir/out" &
  exec {outfd}>"$run_dir/out"
  setsid mpiexec --with-ft ulfm --oversubscribe --bind-to none -n "$total" \
    "${hosts_[@]}" "${extra_[@]}" "${mca[@]}" "${xargs_[@]}" "$@" >&"$outfd" &
  pid=$!
  exec {outfd}>&-
  # Tests only: this shell slower than the ranks' start-up (a loaded machine).
  [ -n "${FX_LAUNCH_TEST_PAUSE:-}" ] && sleep "$FX_LAUNCH_TEST_PAUSE"
  # The supervisor finds the job's leftovers by mpiexec's PMIx namespace,
  # and removes this directory once it has ended them.
  [ -n "${FX_JOB_INFO:-}" ] && write_file "$FX_JOB_INFO" "mpiexec_pid=$pid run_dir=$run_dir"
  (
    exec >/dev/null 2>&1   # never hold the caller's pipes open
    sleep "$t" & sp=$!
    trap 'kill $sp; exit 0' TERM
    wait $sp
    touch "$status_file.timeout"; stop_mpiexec 5
  ) &
  watchdog=$!
  # PRRTE's mpiexec can deadlock on a mutex after every rank has left (seen
  # about 1 run in 10 at 8+2 after a kill, all ranks gone): once the verdict
  # is written and mpiexec has had no live child for FX_EXIT_GRACE seconds,
  # stop it and report the verdict. On several hosts its children are ssh
  # sessions, and one to a host that went silent never ends: there the
  # verdict alone starts the grace period (it is written after every live
  # process has agreed the job is over).
  grace=${FX_EXIT_GRACE:-5}
  idle_since=""
  stuck=0
  ended_here=0
  while kill -0 "$pid" 2>/dev/null; do
    if ! startup_watch; then
      stop_mpiexec
      break
    fi
    # One process ended the job (fx's end_job_from_here: an error it alone
    # hit, exit() inside the job, or a peer's _exit it heard of): under ULFM
    # nothing else would end the others, who wait for it. Its verdict is the job's.
    if [ -s "$status_file.end" ]; then
      stop_mpiexec
      mv -f "$status_file.end" "$status_file"
      ended_here=1
      break
    fi
    if [ -s "$status_file" ] && { [ -n "$hostfile" ] || { count_live; [ "$live" -eq 0 ]; }; }; then
      now_s=$EPOCHSECONDS
      idle_since=${idle_since:-$now_s}
      if [ $((now_s - idle_since)) -ge "$grace" ]; then
        stuck=1
        stop_mpiexec
        break
      fi
    else
      idle_since=""
    fi
    sleep 0.2
  done
  wait "$pid"; rc=$?
}

# Across hosts a daemon can exit 213 on a live host before reporting back
# ("A daemon failed to report back"; PRRTE prints it on stdout, and the
# start-up watch may stop the job first). When no rank had started, that
# launch is retried; nothing else is.
start_failure() {
  [ -e "$status_file.timeout" ] && return 1
  # No verdict, or only the start-up watch's (the daemon's ranks never came).
  [ -s "$status_file" ] && [ -z "$startup_lost" ] && return 1
  sleep 0.3
  startup_count
  [ "$ups" -eq 0 ] && grep -q "daemon failed to report back" "$start_out" 2>/dev/null || return 1
  why="a daemon failed to report back; no rank had started"
}
for attempt in 1 2 3; do
  launch "$@"
  if [ "$attempt" -lt 3 ] && start_failure; then
    : >"$status_file"
    startup_lost=""
    kill "$watchdog" 2>/dev/null; wait "$watchdog" 2>/dev/null
    echo "$name: mpiexec failed to start ($why); retrying (attempt $((attempt + 1)) of 3)" >&2
    sleep 1
    continue
  fi
  break
done
# mpiexec itself ended before every rank had returned from MPI_Init, and
# nobody wrote a verdict: whatever its way out (its own code, a signal; once
# prterun died on a robust-mutex assertion, 134, after Open MPI had aborted
# MPI_Init for a rank killed 0.9 s in), a process was lost during start-up.
startup_count
if [ -z "$startup_lost" ] && [ "$fx_program" -eq 1 ] && [ ! -e "$status_file.timeout" ] &&
   [ ! -s "$status_file" ] && [ "$ups" -lt "$total" ]; then
  startup_lost="mpiexec ended (exit $rc) during MPI start-up ($ups of $total had returned from MPI_Init); nothing to recover yet"
  echo "4 $startup_lost" > "$status_file"
fi
[ -n "$startup_lost" ] && echo "$name: $startup_lost; online recovery begins once every process has returned from MPI_Init. Job ended." >&2
if [ "$ended_here" -eq 1 ]; then
  read -r end_line < "$status_file"
  echo "$name: a process ended the job (verdict: ${end_line:0:300}); stopped mpiexec" >&2
fi
[ "$stuck" -eq 1 ] && echo "$name: mpiexec was still running ${grace}s after every rank had exited (or, on several hosts, after the verdict); stopped it" >&2
if [ -e "$status_file.timeout" ]; then
  rm -f "$status_file.timeout"
  echo "$name: time limit of ${t}s reached; job killed" >&2
  exit 124
fi
kill "$watchdog" 2>/dev/null; wait "$watchdog" 2>/dev/null
# Ranks that leave without MPI_Finalize can outlive mpiexec by a moment.
kill_mpiexec KILL
if [ -s "$status_file" ]; then
  read -r code _ < "$status_file"
  exit "$code"
fi
if [ "$rc" -ne 0 ]; then
  [ "$fx_program" -eq 1 ] && echo "$name: mpiexec ended with exit $rc and no process wrote a verdict; exiting with mpiexec's code" >&2
  exit "$rc"
fi
echo "$name: the program wrote no verdict to FX_STATUS_FILE; treating as failure" >&2
exit 125
