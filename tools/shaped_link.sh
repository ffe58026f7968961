#!/usr/bin/env bash
# shaped_link.sh: runs one command per "node", each node a network namespace of this
# machine, the nodes joined through a bridge by links that the kernel shapes (tbf, and
# netem's delay where the kernel has it). Every byte between nodes crosses a real, shaped
# link, whatever program sends it: the course's drivers, Gloo, PyTorch.
#
#   tools/shaped_link.sh [--rate 10gbit] [--delay 50us] [--burst 512kb] [--nodes 2] [--port P] -- COMMAND...
#
#   sudo tools/shaped_link.sh --rate 1gbit -- build/solutions/lesson10 --bench
#   sudo tools/shaped_link.sh --rate 10gbit -- python3 tools/torch_ddp_bench.py
#
# Each node runs COMMAND once, with the torchrun variables of a job of one rank per node
# (RANK = NODE_RANK, WORLD_SIZE = NNODES, LOCAL_RANK 0, MASTER_ADDR = node 0's address,
# MASTER_PORT), COURSE_ADVERTISE_ADDR (its own address, for the course's mesh) and
# GLOO_SOCKET_IFNAME (its interface, for Gloo and PyTorch), and COURSE_SHAPED_LINK (the
# link's figures, which a course benchmark prints in its header). A course driver that
# sees RANK is one rank. The nodes share this machine's cores, so each gets what the
# course's launcher gives its ranks (common/runtime/launcher.h), unless already set: one
# BLAS and OpenMP thread (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS) and OpenBLAS's kernels
# named from the CPU's features (OPENBLAS_CORETYPE, the rule of blas_coretype_for_cpu in
# env.h; the test compares the two). Without them a rank's compute is several times slower
# than the same rank launched by a driver: two BLAS threads per rank fight over the cores,
# and on a virtual CPU OpenBLAS falls back to its SSE3 kernels. Output lines are prefixed
# with "[node i] "; the exit status is the first node's that failed, else 0.
#
# The picture, for --nodes 3 (each node's link shaped in both directions, as a NIC on a
# switch port: node i sends at --rate, and receives at --rate):
#
#   [node 0] cl0 ==tbf== cl0h \
#   [node 1] cl1 ==tbf== cl1h --- br0 (namespace "hub")
#   [node 2] cl2 ==tbf== cl2h /
#
# What this is not: a model of a cluster's topology (one switch, no oversubscription), nor
# the course's own emulation (--link, common/comm/emulated_link.h), which paces the tcp
# transport's sends in user space and which this link checks (make bench-link).
#
# Needs root (network namespaces), iproute2 (ip, tc) and the kernel's tbf qdisc. Everything
# it creates is named clink-<its pid>-* and removed on every exit path (a normal end, a
# failed command, SIGINT, SIGTERM); namespaces left by a run that was killed with SIGKILL
# are removed by the next run.
set -u

usage() {
  echo "usage: tools/shaped_link.sh [--rate 10gbit] [--delay 50us] [--burst 512kb] [--nodes N] [--port P] -- COMMAND..." >&2
  echo "shaped_link: $1" >&2
  exit 64
}

rate=10gbit
delay=""
burst=512kb
nodes=2
port=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) [ $# -ge 2 ] || usage "--rate needs a value"; rate=$2; shift 2 ;;
    --delay) [ $# -ge 2 ] || usage "--delay needs a value"; delay=$2; shift 2 ;;
    --burst) [ $# -ge 2 ] || usage "--burst needs a value"; burst=$2; shift 2 ;;
    --nodes) [ $# -ge 2 ] || usage "--nodes needs a value"; nodes=$2; shift 2 ;;
    --port) [ $# -ge 2 ] || usage "--port needs a value"; port=$2; shift 2 ;;
    --) shift; break ;;
    *) usage "'$1' is not an option; the command goes after --" ;;
  esac
done
[ $# -gt 0 ] || usage "no command: give it after --"
[[ "$rate" =~ ^[0-9]+(\.[0-9]+)?(k|m|g)?bit$ ]] ||
  usage "--rate '$rate' is not a rate: a number with bit, kbit, mbit or gbit (per second), e.g. 10gbit"
[ -z "$delay" ] || [[ "$delay" =~ ^[0-9]+(\.[0-9]+)?(us|ms)$ ]] ||
  usage "--delay '$delay' is not a delay: a number with us or ms, e.g. 50us"
[[ "$burst" =~ ^[0-9]+(k|m)?b$ ]] ||
  usage "--burst '$burst' is not a size: a number with b, kb or mb, e.g. 512kb"
[[ "$nodes" =~ ^[0-9]+$ ]] && [ "$nodes" -ge 2 ] && [ "$nodes" -le 16 ] ||
  usage "--nodes '$nodes' is not a count from 2 to 16"
[ -z "$port" ] || { [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1024 ] && [ "$port" -le 65535 ]; } ||
  usage "--port '$port' is not a port from 1024 to 65535"

if [ "$(id -u)" -ne 0 ]; then
  echo "shaped_link: needs root to create network namespaces (run it as root, or with sudo); nothing was created" >&2
  exit 77
fi
for tool in ip tc; do
  command -v "$tool" >/dev/null 2>&1 ||
    { echo "shaped_link: '$tool' not found: install iproute2 (apt-get install iproute2)" >&2; exit 77; }
done

# Namespaces of runs that are gone (killed with SIGKILL): removed before anything else.
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^clink-[0-9]+-' || true); do
  owner=${ns#clink-}
  owner=${owner%%-*}
  kill -0 "$owner" 2>/dev/null || ip netns del "$ns" 2>/dev/null || true
done

tag="clink-$$"
hub="$tag-hub"
net="10.$((200 + $$ % 50)).$(($$ / 50 % 250))"
[ -n "$port" ] || port=$((20000 + $$ % 20000))
pids=()
made=()
declare -A node_of=()
first=""

cleanup() {
  local code=$?
  trap - EXIT INT TERM HUP
  for pid in ${pids[@]+"${pids[@]}"}; do kill -TERM -- "-$pid" 2>/dev/null; done
  for pid in ${pids[@]+"${pids[@]}"}; do wait "$pid" 2>/dev/null; done
  for ns in "${made[@]}"; do ip netns del "$ns" 2>/dev/null; done
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

fail() {
  echo "shaped_link: $1" >&2
  exit 1
}

ip netns add "$hub" || fail "could not create a network namespace (a container without CAP_NET_ADMIN?)"
made+=("$hub")
ip -n "$hub" link add br0 type bridge && ip -n "$hub" link set br0 up ||
  fail "could not create a bridge in namespace $hub (the kernel's bridge module?)"

# Shapes DEV's egress in namespace NS: netem's delay (when asked and the kernel has it),
# then tbf's rate. burst: 512 KiB, enough for 10 Gbit/s at the kernel's timer; latency:
# how long a packet may wait in the queue before it is dropped.
delay_note=""
delay_applied=""
shape() {
  local ns=$1 dev=$2 parent="root"
  if [ -n "$delay" ]; then
    if ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: netem delay "$delay" 2>/dev/null; then
      parent="parent 1: handle 2:"
      delay_applied=$delay
    else
      delay_note="the kernel has no netem qdisc: no delay added (tried: netem); the rate is tbf's alone"
    fi
  fi
  # shellcheck disable=SC2086
  ip netns exec "$ns" tc qdisc add dev "$dev" $parent tbf rate "$rate" burst "$burst" latency 100ms ||
    fail "the kernel has no tbf qdisc, or refused rate $rate (tried: tbf)"
}

for ((i = 0; i < nodes; i++)); do
  ns="$tag-$i"
  ip netns add "$ns" || fail "could not create namespace $ns"
  made+=("$ns")
  ip link add "cl$i" netns "$ns" type veth peer name "cl${i}h" netns "$hub" ||
    fail "could not create the veth pair of node $i"
  ip -n "$ns" addr add "$net.$((i + 1))/24" dev "cl$i"
  ip -n "$ns" link set "cl$i" up
  ip -n "$ns" link set lo up
  ip -n "$hub" link set "cl${i}h" master br0
  ip -n "$hub" link set "cl${i}h" up
  shape "$ns" "cl$i"
  shape "$hub" "cl${i}h"
done
echo "shaped_link: $nodes nodes ($net.1-$nodes), each link $rate both ways${delay:+, $delay delay}" \
     "(kernel tbf on veth pairs through a bridge); master $net.1:$port"
[ -z "$delay_note" ] || echo "shaped_link: $delay_note"

# OPENBLAS_CORETYPE as blas_coretype_for_cpu() (common/runtime/env.cpp) picks it:
# SkylakeX with AVX-512 F, CD, BW, DQ and VL; Haswell with AVX2 and FMA; else OpenBLAS's own.
coretype=${OPENBLAS_CORETYPE:-}
if [ -z "$coretype" ]; then
  flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
  has() { for f in "$@"; do [[ "$flags" == *" $f "* ]] || return 1; done; }
  if has avx512f avx512cd avx512bw avx512dq avx512vl; then coretype=SkylakeX
  elif has avx2 fma; then coretype=Haswell; fi
fi

for ((i = 0; i < nodes; i++)); do
  # Each node in a session and process group of its own (setsid: the job's background
  # processes are not group leaders, so setsid does not fork and $! is the group), its
  # output prefixed inside that group, so cleanup stops everything it started.
  setsid ip netns exec "$tag-$i" env NODE_RANK="$i" NNODES="$nodes" RANK="$i" WORLD_SIZE="$nodes" \
    LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR="$net.1" MASTER_PORT="$port" \
    COURSE_ADVERTISE_ADDR="$net.$((i + 1))" GLOO_SOCKET_IFNAME="cl$i" \
    COURSE_SHAPED_LINK="$rate both ways, tbf burst $burst${delay_applied:+, $delay_applied delay}" \
    OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" \
    ${coretype:+OPENBLAS_CORETYPE="$coretype"} \
    bash -c 'set -o pipefail; "$@" 2>&1 | sed -u "s/^/[node $NODE_RANK] /"' node "$@" </dev/null &
  pids+=($!)
  node_of[$!]=$i
done

# The first node to fail decides the status; the others get GRACE_S seconds to notice (a
# course driver names the dead peer within its timeout) before cleanup stops them.
status=0
left=$nodes
timer=""
while [ "$left" -gt 0 ]; do
  done_pid=""
  # shellcheck disable=SC2086
  wait -n -p done_pid ${pids[@]} $timer 2>/dev/null
  code=$?
  [ -n "$done_pid" ] || break
  if [ "$done_pid" = "$timer" ]; then
    echo "shaped_link: stopping the nodes still running ${GRACE_S:-30} s after node $first failed"
    break
  fi
  left=$((left - 1))
  pids=(${pids[@]/$done_pid/})
  if [ "$code" -ne 0 ] && [ "$status" -eq 0 ]; then
    status=$code
    first=${node_of[$done_pid]}
    echo "shaped_link: node $first exited with $code"
    sleep "${GRACE_S:-30}" &
    timer=$!
  fi
done
[ -z "$timer" ] || kill "$timer" 2>/dev/null
exit "$status"
