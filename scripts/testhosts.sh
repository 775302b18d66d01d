#!/usr/bin/env bash
# testhosts.sh: real test hosts on this machine for multi-host runs.
#
#   scripts/testhosts.sh up N         N hosts fxh1..fxhN (replaces any left over)
#   scripts/testhosts.sh down         kill every process on them, remove everything
#   scripts/testhosts.sh status       hosts, addresses, live process counts
#   scripts/testhosts.sh hostfile [S] an Open MPI hostfile (S slots per host, 4)
#   scripts/testhosts.sh env [S]      the launcher's settings for these hosts
#                                     (FX_HOSTFILE, FX_NET, FX_MPIEXEC_ARGS),
#                                     to eval: eval "$(scripts/testhosts.sh env)"
#   scripts/testhosts.sh kill HOST... the hosts are lost, together: SIGKILL
#                                     everything on them (sshd, its sessions,
#                                     prted, ranks), delete their node-local
#                                     directories
#   scripts/testhosts.sh silence HOST its link goes down (a silent host)
#   scripts/testhosts.sh revive HOST  a lost host comes back, empty (new boot)
#   scripts/testhosts.sh disconnect   close the shared ssh connections to them
#   scripts/testhosts.sh pids HOST    the processes running on it
#   scripts/testhosts.sh run HOST CMD run a command on it (as its sshd would)
#   scripts/testhosts.sh slurm        a Slurm cluster on the hosts that are up:
#                                     one munged, one slurmctld (a host of its
#                                     own, <prefix>ctl at .2), one slurmd per host
#   scripts/testhosts.sh slurm-env    its settings, to eval (SLURM_CONF)
#   scripts/testhosts.sh slurm-down   stop it (down stops it too); exit 1 if
#                                     one of its daemons outlived the stop
#
# A host is a network namespace on a private bridge (fxhbr, subnet
# FX_TESTHOSTS_NET, default 10.231.77.0/24; this machine is .1), with its
# own hostname (a UTS namespace) and its own sshd (Debian's openssh-server)
# for Open MPI's ssh launcher: root key login, with a key this script makes.
# The filesystem and PID namespace are the machine's; /dev/shm/fx-hosts/HOST
# stands for the host's node-local storage. Traffic goes only to these
# hosts' own addresses. Needs root and `ip netns`: `status` exits 77 when
# they are missing, so tests can skip cleanly.
#
# Slurm (Debian's slurmctld, slurmd, munge) runs from a private directory
# ($state/slurm: a generated slurm.conf named by SLURM_CONF, a munge key and
# socket, spool and logs); the machine's /etc/slurm and /etc/munge are not
# read. `slurm` exits 77 when those programs are missing.
set -euo pipefail
# Several independent sets can be up at once: FX_TESTHOSTS_PREFIX names the
# hosts (<prefix>1..N) and FX_TESTHOSTS_NET their /24 (first three octets).
prefix=${FX_TESTHOSTS_PREFIX:-fxh}
[[ "$prefix" =~ ^[a-z][a-z0-9]{0,5}$ ]] || { echo "testhosts: FX_TESTHOSTS_PREFIX expects 1-6 lowercase letters/digits, got '$prefix'" >&2; exit 2; }
state=/run/fx-testhosts-$prefix
net=${FX_TESTHOSTS_NET:-10.231.77}
local_root=${FX_NODE_LOCAL_ROOT:-/dev/shm/fx-hosts}
bridge=${prefix}br
hosts_tag="# fx-testhosts $prefix"

die() { echo "testhosts: $*" >&2; exit 1; }
usable() {
  [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null && [ -x /usr/sbin/sshd ] &&
    command -v unshare >/dev/null && ip netns list >/dev/null 2>&1
}
hosts() { [ -f "$state/hosts" ] && cat "$state/hosts" || true; }
addr_of() { echo "$net.$((10 + ${1#"$prefix"}))"; }
ns_of() { echo "fx-$1"; }
known() { hosts | grep -qx "$1" || die "no test host '$1' (up: $(hosts | tr '\n' ' '))"; }

kill_host_procs() {  # every process in the hosts' network namespaces, all at once
  local h pids
  for h in "$@"; do
    pids=$(ip netns pids "$(ns_of "$h")" 2>/dev/null || true)
    # shellcheck disable=SC2086  # one pid per word
    # shellcheck disable=SC2086  # one pid per word
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  done
  for h in "$@"; do
    for _ in $(seq 50); do
      pids=$(ip netns pids "$(ns_of "$h")" 2>/dev/null || true)
      [ -z "$pids" ] && break
      # shellcheck disable=SC2086  # one pid per word
      kill -9 $pids 2>/dev/null; sleep 0.05   # and what they had started meanwhile
    done
    [ -n "$pids" ] && echo "testhosts: processes left on $h: $(xargs <<<"$pids")" >&2
  done
  return 0
}

disconnect() {  # close the shared ssh connections (their sessions on the hosts end)
  local h
  for h in $(hosts); do
    [ -f "$state/ssh_config" ] || return 0
    ssh -F "$state/ssh_config" -O exit "$h" 2>/dev/null || true
  done
}

# Slurm on the test hosts. The controller is a host of its own (not in the
# host list, so jobs never run there and losing a host never takes it).
slurm_dir=$state/slurm
ctl=${prefix}ctl
slurm_usable() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null &&
    command -v salloc >/dev/null && command -v nsenter >/dev/null
}
start_slurmd() {  # in the host's network and UTS namespaces (its sshd's)
  nsenter -t "$(cat "$state/$1.sshd.pid")" -n -u slurmd -f "$slurm_dir/slurm.conf" ||
    die "slurm: slurmd did not start on $1 (see $slurm_dir/slurmd-$1.log)"
}

slurm_up() {
  slurm_usable || { echo "testhosts: slurm: needs slurmctld, slurmd, slurm-client and munge (./fx setup)" >&2; exit 77; }
  [ -s "$state/hosts" ] || die "slurm: no test hosts are up (testhosts.sh up N)"
  slurm_down || true
  mkdir -p "$slurm_dir/ctld"
  chmod 711 "$slurm_dir"   # the munge socket's directory must be searchable
  head -c 1024 /dev/urandom >"$slurm_dir/munge.key"
  chmod 600 "$slurm_dir/munge.key"
  # --force: munged refuses to run as root otherwise.
  munged --force --socket="$slurm_dir/munge.socket" --key-file="$slurm_dir/munge.key" \
    --pid-file="$slurm_dir/munged.pid" --log-file="$slurm_dir/munged.log" --seed-file="$slurm_dir/munged.seed" ||
    die "slurm: munged did not start (see $slurm_dir/munged.log)"
  local h
  # No cgroups, accounting or MPI plugin: the daemons share this machine's
  # kernel, and Open MPI starts its own runtime. SlurmdTimeout: a lost host
  # is marked down 10 s after its slurmd stops answering.
  {
    cat <<EOF
ClusterName=$prefix
SlurmctldHost=$ctl($net.2)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$slurm_dir/munge.socket
StateSaveLocation=$slurm_dir/ctld
SlurmdSpoolDir=$slurm_dir/spool-%n
SlurmctldPidFile=$slurm_dir/slurmctld.pid
SlurmdPidFile=$slurm_dir/slurmd-%n.pid
SlurmctldLogFile=$slurm_dir/slurmctld.log
SlurmdLogFile=$slurm_dir/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/linear
ReturnToService=2
SlurmdTimeout=10
SlurmdParameters=config_overrides
TreeWidth=65533
EOF
    for h in $(hosts); do echo "NodeName=$h NodeAddr=$(addr_of "$h") CPUs=2"; done
    echo "PartitionName=fx Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
  } >"$slurm_dir/slurm.conf"
  add_ns "$ctl" "$net.2" "${prefix}vc"
  ip netns exec "$(ns_of "$ctl")" unshare --uts sh -c \
    "hostname $ctl && exec slurmctld -c -f '$slurm_dir/slurm.conf'" ||
    die "slurm: slurmctld did not start (see $slurm_dir/slurmctld.log)"
  for h in $(hosts); do start_slurmd "$h"; done
  local n idle=0
  n=$(hosts | wc -l)
  for _ in $(seq 100); do  # every node idle before we return (10 s at most)
    idle=$(SLURM_CONF=$slurm_dir/slurm.conf timeout 5 sinfo -h -t idle -o %D 2>/dev/null || true)
    [ "${idle:-0}" = "$n" ] && break
    sleep 0.1
  done
  [ "${idle:-0}" = "$n" ] || die "slurm: ${idle:-0} of $n nodes idle after 10 s (see $slurm_dir/*.log)"
  echo "testhosts: slurm: slurmctld on $ctl ($net.2), slurmd on $(hosts | tr '\n' ' ')(SLURM_CONF=$slurm_dir/slurm.conf)"
}

slurm_down() {  # every Slurm daemon of this set, then its directory
  [ -d "$slurm_dir" ] || return 0
  local f pids="" left=""
  for f in "$slurm_dir"/slurmd-*.pid "$slurm_dir"/slurmctld.pid "$slurm_dir"/munged.pid; do
    [ -s "$f" ] && pids+=" $(cat "$f")"
  done
  # and a job's step daemons on the hosts (slurm-down alone leaves the hosts up)
  for f in $(hosts); do
    pids+=" $(ip netns pids "$(ns_of "$f")" 2>/dev/null | xargs -r ps -o pid=,comm= -p | awk '$2 == "slurmstepd" {print $1}' | xargs)"
  done
  kill_host_procs "$ctl"
  # shellcheck disable=SC2086  # one pid per word
  [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  for _ in $(seq 50); do
    left=""
    for f in $pids; do ps -o stat= -p "$f" 2>/dev/null | grep -qv '^Z' && left+=" $f"; done  # zombies are gone
    [ -z "$left" ] && break
    sleep 0.05
  done
  ip netns del "$(ns_of "$ctl")" 2>/dev/null || true
  ip link del "${prefix}vc" 2>/dev/null || true
  rm -rf "$slurm_dir"
  [ -z "$left" ] || { echo "testhosts: slurm: daemons left:$left" >&2; return 1; }
}

down() {
  local h rc=0
  disconnect
  slurm_down || rc=1
  for h in $(hosts); do
    kill_host_procs "$h"
    ip netns del "$(ns_of "$h")" 2>/dev/null || true
    ip link del "${prefix}v${h#"$prefix"}" 2>/dev/null || true
    rm -rf "${local_root:?}/$h"
  done
  ip link del "$bridge" 2>/dev/null || true
  etc_hosts remove
  rm -rf "$state"
  return $rc
}

# etc_hosts add LINES | remove: this set's lines in /etc/hosts, which every
# set shares: edits take a lock (sets are made and removed side by side).
# Readers take none, so the file is never truncated: a rewrite in place let
# another set's supervisor find its own host unknown for a moment, and it
# counted a live host lost (CI, multihost_host_kill_shrink_hdf5). The new
# file is renamed over it; where /etc/hosts is a mount point (containers),
# this set's lines are blanked in place instead, at the same length.
etc_hosts() {
  (
    flock 9
    if [ "$1" = add ]; then
      printf '%s' "$2" >>/etc/hosts
    elif grep -q "$hosts_tag\$" /etc/hosts 2>/dev/null; then
      local tmp=/etc/.hosts.fx-$prefix
      grep -vx ".* $hosts_tag" /etc/hosts >"$tmp" || true
      if ! { chmod 644 "$tmp" && mv -f "$tmp" /etc/hosts; } 2>/dev/null; then
        rm -f "$tmp"
        blank_lines /etc/hosts " $hosts_tag"
      fi
    fi
  ) 9>/run/fx-testhosts.lock
}
# blank_lines FILE SUFFIX: each line ending in SUFFIX becomes '#' and
# spaces of its length, in one write of the same size.
blank_lines() {
  python3 - "$1" "$2" <<'PY'
import sys
path, suffix = sys.argv[1], sys.argv[2].encode()
with open(path, "r+b") as f:
    lines = f.read().split(b"\n")
    f.seek(0)
    f.write(b"\n".join(b"#" + b" " * (len(l) - 1) if l.endswith(suffix) else l for l in lines))
PY
}

write_ssh_files() {
  mkdir -p "$state" /run/sshd
  chmod 700 "$state"
  [ -f "$state/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$state/id_ed25519"
  [ -f "$state/host_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$state/host_key"
  cp "$state/id_ed25519.pub" "$state/authorized_keys"
  # Open MPI's ssh launcher runs this (one word, no quoting to get wrong).
  printf '#!/bin/sh\nexec ssh -F %s "$@"\n' "$state/ssh_config" >"$state/ssh"
  chmod +x "$state/ssh"
  cat >"$state/ssh_config" <<EOF
Host $prefix* $net.*
  User root
  IdentityFile $state/id_ed25519
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  BatchMode yes
  ConnectTimeout 5
  # A silent host's ssh session ends after 15 s: mpiexec then stops waiting
  # for its daemon (it never would), after fx's heartbeat detector had its turn.
  ServerAliveInterval 5
  ServerAliveCountMax 3
  # One connection per host, reused by every later session (Open MPI's
  # daemon launches, the supervisor's sweeps): a relaunch skips the key
  # exchange, about 0.5 s per host on this loaded 2-core machine.
  ControlMaster auto
  ControlPath $state/cm-%C
  ControlPersist 120
EOF
}

add_ns() {  # NAME ADDR VETH: network namespace fx-NAME on the bridge at ADDR
  local ns
  ns=$(ns_of "$1")
  ip netns add "$ns"
  ip link add "$3" type veth peer name eth0 netns "$ns"
  ip link set "$3" master "$bridge" up
  ip -n "$ns" addr add "$2/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
}

start_host() {
  local h=$1 i=${1#"$prefix"} ns addr
  ns=$(ns_of "$h"); addr=$(addr_of "$h")
  add_ns "$h" "$addr" "${prefix}v$i"
  mkdir -p "$local_root/$h"
  cat >"$state/$h.sshd_config" <<EOF
ListenAddress $addr
HostKey $state/host_key
PidFile $state/$h.sshd.pid
AuthorizedKeysFile $state/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 100:30:200
MaxSessions 100
EOF
  # The hostname lives in a UTS namespace of its own; sshd and everything
  # it starts (prted, the ranks) inherit both namespaces.
  ip netns exec "$ns" unshare --uts sh -c \
    "hostname $h && exec /usr/sbin/sshd -f '$state/$h.sshd_config' -E '$state/$h.sshd.log'"
}

up() {
  local n=${1:?usage: testhosts.sh up N}
  [[ "$n" =~ ^[1-9][0-9]?$ ]] || die "up: expected a host count 1..99, got '$n'"
  usable || die "needs root, iproute2 (ip netns), unshare and openssh-server (./fx setup)"
  down
  write_ssh_files
  ip link add "$bridge" type bridge
  ip addr add "$net.1/24" dev "$bridge"
  ip link set "$bridge" up
  : >"$state/hosts"
  local i lines=""
  for i in $(seq "$n"); do
    start_host "$prefix$i"
    echo "$prefix$i" >>"$state/hosts"
    lines+="$(addr_of "$prefix$i") $prefix$i $hosts_tag"$'\n'
  done
  etc_hosts add "$lines"
  for i in $(seq "$n"); do  # sshd answers before we return
    for _ in $(seq 50); do
      ssh -F "$state/ssh_config" "$prefix$i" true 2>/dev/null && break
      sleep 0.1
    done
    ssh -F "$state/ssh_config" "$prefix$i" true || die "$prefix$i: sshd does not answer (see $state/$prefix$i.sshd.log)"
  done
  echo "testhosts: up: $(hosts | tr '\n' ' ')on $net.0/24"
}

case "${1:-}" in
  up) up "${2:-}" ;;
  down) down ;;
  status)
    usable || { echo "testhosts: unavailable (needs root, ip netns, sshd)"; exit 77; }
    for h in $(hosts); do
      echo "$h $(addr_of "$h") processes=$(ip netns pids "$(ns_of "$h")" 2>/dev/null | wc -l)"
    done ;;
  hostfile)
    for h in $(hosts); do echo "$h slots=${2:-4}"; done ;;
  env)
    [ -s "$state/hosts" ] || die "no test hosts are up (testhosts.sh up N)"
    for h in $(hosts); do echo "$h slots=${2:-4}"; done >"$state/hostfile"
    # Options of the caller's own in FX_MPIEXEC_ARGS are kept.
    echo "export FX_HOSTFILE=$state/hostfile FX_NET=$net.0/24 FX_SSH=$state/ssh FX_MPIEXEC_ARGS=\"\${FX_MPIEXEC_ARGS:-} --prtemca plm_ssh_agent $state/ssh\"" ;;
  kill)
    shift
    [ $# -ge 1 ] || die "kill: which host(s)?"
    for h in "$@"; do known "$h"; done
    kill_host_procs "$@"
    for h in "$@"; do rm -rf "${local_root:?}/$h"; done ;;
  revive)
    known "${2:-}"
    kill_host_procs "$2"
    ip netns del "$(ns_of "$2")" 2>/dev/null || true
    ip link del "${prefix}v${2#"$prefix"}" 2>/dev/null || true
    rm -rf "${local_root:?}/$2"
    start_host "$2"
    for _ in $(seq 50); do ssh -F "$state/ssh_config" "$2" true 2>/dev/null && break; sleep 0.1; done
    [ -f "$slurm_dir/slurm.conf" ] && start_slurmd "$2" ;;
  silence)
    known "${2:-}"
    ip -n "$(ns_of "$2")" link set eth0 down ;;
  disconnect) disconnect ;;
  slurm) slurm_up ;;
  slurm-env)
    [ -f "$slurm_dir/slurm.conf" ] || die "no Slurm is up on these test hosts (testhosts.sh slurm)"
    echo "export SLURM_CONF=$slurm_dir/slurm.conf" ;;
  slurm-down) slurm_down ;;
  pids)
    known "${2:-}"
    ip netns pids "$(ns_of "$2")" ;;
  run)
    known "${2:-}"
    h=$2; shift 2
    exec ssh -F "$state/ssh_config" "$h" "$@" ;;
  *) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
