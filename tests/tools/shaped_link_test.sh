#!/usr/bin/env bash
# shaped_link_test.sh: tests of tools/shaped_link.sh, run by `make test`.
#
# Always: its argument checks (exit 64 with the reason) and, run as an ordinary user, its
# refusal to start without root (exit 77, nothing created). As root where the kernel lets
# it make namespaces: two and three nodes each see their own rank, address and interface
# behind a tbf qdisc at the asked rate, bytes cross the link between nodes, a failing node
# decides the status and the others are stopped, SIGTERM and a failing command leave no
# namespace and no process behind, and a run killed with SIGKILL is cleaned up by the next.
# The namespace part is skipped, with the reason, where it cannot run.
set -u
cd "$(dirname "$0")/../.."
tool=tools/shaped_link.sh
failed=0
check() {  # check NAME CONDITION-EXIT-STATUS [DETAIL]
  if [ "$2" -eq 0 ]; then echo "shaped_link_test: ok   $1"; else
    echo "shaped_link_test: FAIL $1${3:+: $3}"; failed=1; fi
}
expect_usage() {  # expect_usage NAME WORDS-IN-MESSAGE ARGS...
  local name=$1 words=$2
  shift 2
  local out code
  out=$("$tool" "$@" 2>&1)
  code=$?
  [ "$code" -eq 64 ] && grep -q -- "$words" <<<"$out"
  check "$name" $? "exit $code, output: $out"
}
ours() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^clink-$1-" || true; }

expect_usage "a rate without a unit is refused" "is not a rate" --rate 10 -- true
expect_usage "a delay in seconds is refused" "is not a delay" --delay 1s -- true
expect_usage "a burst in bits is refused" "is not a size" --burst 512kbit -- true
expect_usage "one node is refused" "not a count from 2 to 16" --nodes 1 -- true
expect_usage "a privileged port is refused" "not a port" --port 80 -- true
expect_usage "no command is refused" "no command" --rate 1gbit
expect_usage "an unknown option is refused" "is not an option" --speed 1gbit -- true

if [ "$(id -u)" -ne 0 ]; then
  out=$("$tool" -- true 2>&1)
  code=$?
  [ "$code" -eq 77 ] && grep -q "needs root" <<<"$out"
  check "without root: refused, naming root" $? "exit $code: $out"
  echo "shaped_link_test: the namespace part skipped: not root"
  [ "$failed" -eq 0 ] && echo "shaped_link_test: all passed" || echo "shaped_link_test: FAILED"
  exit "$failed"
fi
if command -v setpriv >/dev/null 2>&1 &&
   setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$tool" 2>/dev/null; then
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$tool" -- true 2>&1)
  code=$?
  [ "$code" -eq 77 ] && grep -q "needs root" <<<"$out"
  check "as an ordinary user: refused, naming root" $? "exit $code: $out"
else
  echo "shaped_link_test: skipped the ordinary-user case: user 65534 cannot run $tool here"
fi

if ! ip netns add "clink-probe-$$" 2>/dev/null; then
  echo "shaped_link_test: the namespace part skipped: this machine does not let root create network namespaces"
  exit "$failed"
fi
ip netns del "clink-probe-$$"

# Two nodes: each sees its own rank, address and interface behind tbf at 1 Gbit/s, with
# the default 512 KiB burst (tc prints it as about 524250 bytes).
out=$(timeout 60 "$tool" --rate 1gbit --port 23456 -- bash -c '
  echo "rank $RANK/$WORLD_SIZE addr $COURSE_ADVERTISE_ADDR master $MASTER_ADDR:$MASTER_PORT if $GLOO_SOCKET_IFNAME"
  echo "link $COURSE_SHAPED_LINK"
  tc qdisc show dev "$GLOO_SOCKET_IFNAME"' 2>&1)
code=$?
[ "$code" -eq 0 ] &&
  grep -q "^\[node 0\] rank 0/2 addr 10\.[0-9.]*\.1 master 10\.[0-9.]*\.1:23456 if cl0" <<<"$out" &&
  grep -q "^\[node 1\] rank 1/2 addr 10\.[0-9.]*\.2 master 10\.[0-9.]*\.1:23456 if cl1" <<<"$out" &&
  [ "$(grep -c "qdisc tbf .* rate 1Gbit burst 52[0-9]*b" <<<"$out")" -eq 2 ] &&
  [ "$(grep -c "link 1gbit both ways, tbf burst 512kb$" <<<"$out")" -eq 2 ]
check "two nodes: ranks, addresses, interfaces, tbf at the rate" $? "exit $code: $out"

# Each node gets the rank environment of the course's launcher (threads, OpenBLAS's
# kernels): compared with what a built `launch` gives its one rank, where there is one.
env_line='echo "env ${OMP_NUM_THREADS:-unset} ${OPENBLAS_NUM_THREADS:-unset} ${OPENBLAS_CORETYPE:-unset}"'
out=$(env -u OMP_NUM_THREADS -u OPENBLAS_NUM_THREADS -u OPENBLAS_CORETYPE \
      timeout 60 "$tool" -- bash -c "$env_line" 2>&1)
code=$?
launcher=$(ls build/*/launch 2>/dev/null | head -1)
if [ -n "$launcher" ]; then
  want=$(env -u OMP_NUM_THREADS -u OPENBLAS_NUM_THREADS -u OPENBLAS_CORETYPE \
         timeout 30 "$launcher" --np 1 --no-prefix -- bash -c "$env_line" 2>&1)
else
  want="env 1 1 "  # no built launcher to ask: the thread counts at least
fi
[ "$code" -eq 0 ] && [ "$(grep -c "^\[node [01]\] $want" <<<"$out")" -eq 2 ]
check "two nodes: the launcher's rank environment (${want#env }${launcher:+, from $launcher})" $? \
  "exit $code: $out"

# Bytes between nodes cross the shaped link: 4 MB at 100 Mbit/s. tbf lets its burst (512
# KiB) through at once and the rest at the rate: at least (4e6 - 524288) * 8 / 1e8 = 0.278 s,
# where the unshaped veth pair takes a few milliseconds.
out=$(timeout 60 "$tool" --rate 100mbit --port 23457 -- bash -c '
  if [ "$RANK" = 0 ]; then
    python3 -c "
import socket,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((\"$COURSE_ADVERTISE_ADDR\", 23458)); s.listen(1); c,_=s.accept(); n=0; t=time.time()
while True:
    b=c.recv(1<<16)
    if not b: break
    n+=len(b)
print(\"received\", n, \"bytes in %.3f s\" % (time.time()-t))"
  else
    python3 -c "
import socket,time
for _ in range(200):
    try: c=socket.create_connection((\"$MASTER_ADDR\", 23458)); break
    except OSError: time.sleep(0.05)
c.sendall(b\"x\"*4000000); c.close()"
  fi' 2>&1)
code=$?
secs=$(sed -n 's/.*received 4000000 bytes in \([0-9.]*\) s.*/\1/p' <<<"$out")
[ "$code" -eq 0 ] && [ -n "$secs" ] && python3 -c "import sys; sys.exit(0 if $secs >= 0.25 else 1)"
check "4 MB between nodes at 100 Mbit/s take the link's time (>= 0.25 s)" $? "exit $code, ${secs:-no} s: $out"

# Three nodes through the bridge.
out=$(timeout 60 "$tool" --nodes 3 --rate 1gbit -- bash -c 'echo "rank $RANK/$WORLD_SIZE"' 2>&1)
code=$?
[ "$code" -eq 0 ] && [ "$(grep -c "rank [0-2]/3" <<<"$out")" -eq 3 ]
check "three nodes: every rank runs" $? "exit $code: $out"

# A failing node decides the status; the other is stopped after the grace, with its
# namespace and process.
start=$SECONDS
out=$(GRACE_S=2 timeout 60 "$tool" -- bash -c '[ "$RANK" = 1 ] && exit 3; exec sleep 91' 2>&1)
code=$?
[ "$code" -eq 3 ] && grep -q "node 1 exited with 3" <<<"$out" && [ $((SECONDS - start)) -lt 20 ] &&
  ! pgrep -f "sleep 91" >/dev/null
check "a failing node: its status, the others stopped" $? "exit $code after $((SECONDS - start)) s: $out"

# SIGTERM: exit 143, nothing left behind.
"$tool" -- sleep 92 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 50); do [ -n "$(ours $pid)" ] && pgrep -f "sleep 92" >/dev/null && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"
code=$?
sleep 0.2
[ "$code" -eq 143 ] && [ -z "$(ours $pid)" ] && ! pgrep -f "sleep 92" >/dev/null
check "SIGTERM: exit 143, no namespace and no process left" $? "exit $code, left: $(ours $pid)"

# SIGKILL leaves the namespaces; the next run removes them.
"$tool" -- sleep 93 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 50); do [ -n "$(ours $pid)" ] && break; sleep 0.1; done
kill -KILL "$pid"
{ wait "$pid"; } 2>/dev/null
pkill -f "sleep 93"
left_before=$(ours $pid | wc -l)
"$tool" -- true >/dev/null 2>&1
[ "$left_before" -gt 0 ] && [ -z "$(ours $pid)" ]
check "a run killed with SIGKILL: its namespaces removed by the next run" $? \
  "before $left_before, after: $(ours $pid)"

[ "$failed" -eq 0 ] && echo "shaped_link_test: all passed" || echo "shaped_link_test: FAILED"
exit "$failed"
