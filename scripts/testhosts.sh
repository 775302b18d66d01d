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
#
# A host is a network namespace on a private bridge (fxhbr, subnet
# FX_TESTHOSTS_NET, default 10.231.77.0/24; this machine is .1), with its
# own hostname (a UTS namespace) and its own sshd (Debian's openssh-server)
# for Open MPI's ssh launcher: root key login, with a key this script makes.
# The filesystem and PID namespace are the machine's; /dev/shm/fx-hosts/HOST
# stands for the host's node-local storage. Traffic goes only to these
# hosts' own addresses. Needs root and `ip netns`: `status` exits 77 when
# they are missing, so tests can skip cleanly.
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
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
  done
  for h in "$@"; do
    for _ in $(seq 50); do
      pids=$(ip netns pids "$(ns_of "$h")" 2>/dev/null || true)
      [ -z "$pids" ] && break
      kill -9 $pids 2>/dev/null; sleep 0.05   # and what they had started meanwhile
    done
    [ -n "$pids" ] && echo "testhosts: processes left on $h: $(echo $pids)" >&2
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

down() {
  local h
  disconnect
  for h in $(hosts); do
    kill_host_procs "$h"
    ip netns del "$(ns_of "$h")" 2>/dev/null || true
    ip link del "${prefix}v${h#"$prefix"}" 2>/dev/null || true
    rm -rf "${local_root:?}/$h"
  done
  ip link del "$bridge" 2>/dev/null || true
  if grep -q "$hosts_tag" /etc/hosts 2>/dev/null; then
    grep -vx ".* $hosts_tag" /etc/hosts >/etc/hosts.fx-tmp && cat /etc/hosts.fx-tmp >/etc/hosts
    rm -f /etc/hosts.fx-tmp
  fi
  rm -rf "$state"
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

start_host() {
  local h=$1 i=${1#"$prefix"} ns addr
  ns=$(ns_of "$h"); addr=$(addr_of "$h")
  ip netns add "$ns"
  ip link add "${prefix}v$i" type veth peer name eth0 netns "$ns"
  ip link set "${prefix}v$i" master "$bridge" up
  ip -n "$ns" addr add "$addr/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
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
  local i
  for i in $(seq "$n"); do
    start_host "$prefix$i"
    echo "$prefix$i" >>"$state/hosts"
    echo "$(addr_of "$prefix$i") $prefix$i $hosts_tag" >>/etc/hosts
  done
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
    for _ in $(seq 50); do ssh -F "$state/ssh_config" "$2" true 2>/dev/null && break; sleep 0.1; done ;;
  silence)
    known "${2:-}"
    ip -n "$(ns_of "$2")" link set eth0 down ;;
  disconnect) disconnect ;;
  pids)
    known "${2:-}"
    ip netns pids "$(ns_of "$2")" ;;
  run)
    known "${2:-}"
    h=$2; shift 2
    exec ssh -F "$state/ssh_config" "$h" "$@" ;;
  *) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
