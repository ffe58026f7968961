"""contain.py: run one command so that nothing it does can outlive it or stall the grader.

The command starts in a session of its own (setsid: a new session and process group).
Whatever it forks stays in that session unless it calls setsid() itself, even the test
harness's ranks, which form a process group of their own. When the command ends, or at
the hard timeout, every process still in the session is killed with SIGKILL and counted:
a rank left running by a learner's code is contained, reported and cleaned up.

Output goes to an unnamed temporary file, not a pipe, so a leftover process holding the
descriptor can never block the reader; RLIMIT_FSIZE caps it (a learner's print loop dies
with SIGXFSZ) and RLIMIT_CORE=0 keeps crashes from writing core files.

Memory: while the command runs, the resident memory of every process of its session is
added up every 20 ms; past memory_mib the whole session is killed and the run reports
memory_exceeded. A sum over the session, not a per-process rlimit: a test's ranks are
several processes, and RLIMIT_AS would also count address space that is only reserved
(thread stacks, malloc arenas, the CUDA runtime's terabyte mapping), not used. A leak
faster than 20 ms can overshoot the limit by what it writes in that time, no more.

What this is not: a sandbox. The command runs as the grader's user, with its files.
"""
import os
import resource
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Dict, List, Optional

MAX_OUTPUT_BYTES = 32 << 20  # RLIMIT_FSIZE for the command and everything it forks
KEEP_HEAD = KEEP_TAIL = 96 << 10  # what is kept of a long output


@dataclass
class Contained:
    returncode: int  # exit code (>= 0), or -signal when a signal ended it
    timed_out: bool  # the grader killed it at the hard timeout
    output: str  # stdout and stderr, interleaved as written (long output: head and tail)
    elapsed: float  # seconds
    leftovers: int  # processes still alive in its session after it ended (now killed)
    memory_exceeded: bool = False  # killed for using more than memory_mib
    peak_mib: float = 0.0  # the most resident memory its session was seen to use


POLL_S = 0.02  # how often the session's memory is measured
PAGE = os.sysconf("SC_PAGE_SIZE")


def _resident_bytes(pids: List[int]) -> int:
    """The resident memory of the processes, added up (statm's second field)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as f:
                total += int(f.read().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            pass  # it exited meanwhile
    return total


def _session_members(sid: int) -> List[int]:
    """Live (not zombie) processes whose session id or process group is `sid`."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) "
        if len(fields) < 4:
            continue
        state, pgrp, session = fields[0], int(fields[2]), int(fields[3])
        if state != "Z" and (session == sid or pgrp == sid):
            members.append(int(entry))
    return members


def _kill_session(sid: int) -> int:
    """SIGKILLs every process of the session; returns how many there were."""
    found = set()
    for _ in range(20):  # a process may fork while we sweep; go round until none is left
        members = [p for p in _session_members(sid) if p != os.getpid()]
        if not members:
            break
        found.update(members)
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    try:
        os.killpg(sid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return len(found)


def _read_output(f) -> str:
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(0)
    if size <= KEEP_HEAD + KEEP_TAIL:
        data = f.read()
    else:
        head = f.read(KEEP_HEAD)
        f.seek(size - KEEP_TAIL)
        data = head + f"\n[... {size - KEEP_HEAD - KEEP_TAIL} bytes of output left out ...]\n".encode() + f.read()
    return data.decode("utf-8", errors="replace")


def run_contained(argv: List[str], *, timeout_s: float, cwd: Optional[str] = None,
                  env: Optional[Dict[str, str]] = None,
                  memory_mib: Optional[float] = None) -> Contained:
    """Runs argv in its own session; SIGKILLs the session at timeout_s, when argv exits, or
    when the session's resident memory passes memory_mib (None: no limit)."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:  # Popen returns after exec, before the test has forked anything
            resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (MAX_OUTPUT_BYTES, MAX_OUTPUT_BYTES))
            resource.prlimit(proc.pid, resource.RLIMIT_CORE, (0, 0))
        except (ProcessLookupError, PermissionError, ValueError):
            pass
        timed_out = exceeded = False
        peak = 0
        limit = None if memory_mib is None else memory_mib * (1 << 20)
        members: List[int] = [proc.pid]
        rescan_at = 0.0
        while proc.poll() is None:
            now = time.monotonic()
            if now - start >= timeout_s:
                timed_out = True
                break
            if limit is not None:
                if now >= rescan_at:  # who is in the session: a walk of /proc, 5 times a second
                    members = _session_members(proc.pid) or [proc.pid]
                    rescan_at = now + 0.2
                used = _resident_bytes(members)
                peak = max(peak, used)
                if used > limit:
                    exceeded = True
                    break
            time.sleep(POLL_S)
        if timed_out or exceeded:
            _kill_session(proc.pid)
            proc.wait()
        leftovers = _kill_session(proc.pid)
        return Contained(returncode=proc.returncode, timed_out=timed_out, output=_read_output(out),
                         elapsed=time.monotonic() - start,
                         leftovers=0 if (timed_out or exceeded) else leftovers,
                         memory_exceeded=exceeded, peak_mib=peak / (1 << 20))
