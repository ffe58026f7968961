"""verdict.py: what happened to one GoogleTest case, in one line a learner can act on.

The grader runs `test_NN --gtest_filter=Suite.Name` (contain.py) and reads its exit and
output. In order of what explains the failure best:

  timed out (grader)  "timed out after 30 s; rank 2 was still in recv from rank 1" when the
                      harness said where the ranks were stuck, else "timed out after 30 s
                      (stopped by the grader): an infinite loop, or a deadlock?"
  a TODO              "TODO lessons/05_ring_allreduce/ring.cpp:88 is not written yet"
  an earlier failure  a test that failed an assertion (or saw a rank throw) before a later
                      case of it timed out in the harness: that first message, with
                      "(later in the test: timed out after 15 s)" after it
  timed out (harness) the harness's own "timed out after N s; rank R was still in ..."
  a crash             "crashed: signal 11 (SIGSEGV, segmentation fault)"
  an assertion        the first GoogleTest failure message, condensed to one line
  an early exit       "the test process exited (code 0) before the test finished: ..."

What this is not: a GoogleTest output parser in general. It reads one test's output.
"""
import re
import signal
from dataclasses import dataclass
from typing import Optional

from .contain import Contained

TODO = re.compile(r"not implemented: ((?:lessons|solutions)/[\w./+-]+:\d+)")
HARNESS_TIMEOUT = re.compile(r"(timed out after [^\n]*)")
SIGNAL_WHAT = {
    signal.SIGSEGV: "segmentation fault: a bad pointer or an index out of range",
    signal.SIGBUS: "bus error: a bad pointer",
    signal.SIGFPE: "arithmetic error: an integer division by zero?",
    signal.SIGABRT: "abort: a failed assert, std::terminate or a double free",
    signal.SIGILL: "illegal instruction: a function that returns no value?",
    signal.SIGKILL: "killed",
    signal.SIGTERM: "terminated",
    signal.SIGPIPE: "broken pipe: wrote to a socket the peer had closed",
    signal.SIGXFSZ: "wrote more output than the grader keeps (an endless print loop?)",
}


@dataclass
class Verdict:
    status: str  # "passed", "failed" or "skipped" (a skipped test counts as passed)
    reason: str  # one line; empty when passed
    detail: str  # the reason and the test's own output, for grade.json


def signal_text(sig: int) -> str:
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    what = SIGNAL_WHAT.get(sig)
    return f"signal {sig} ({name}{', ' + what if what else ''})"


def _body(output: str, test: str) -> str:
    """The output between "[ RUN      ] test" and its end marker (or the end)."""
    start = output.find(f"[ RUN      ] {test}")
    if start < 0:
        return output
    end = len(output)
    for marker in ("[       OK ] ", "[  FAILED  ] ", "[  SKIPPED ] "):
        i = output.find(marker + test, start)
        if i >= 0:
            end = min(end, output.find("\n", i) if output.find("\n", i) >= 0 else len(output))
    return output[start:end]


def first_failure(body: str) -> str:
    """The first GoogleTest failure message of a test's output, on one line."""
    lines = body.splitlines()
    for i, line in enumerate(lines):
        if re.search(r": Failure\s*$", line) or line.endswith("unknown file: Failure"):
            where = re.sub(r":\s*Failure\s*$", "", line).strip()
            msg = []
            for follow in lines[i + 1:]:
                if not follow.strip() or re.search(r": Failure\s*$", follow) or follow.startswith("["):
                    break
                msg.append(follow.strip())
                if len(msg) == 6:
                    break
            if msg and msg[0] == "Failed":  # ADD_FAILURE()/FAIL(): the message follows
                msg = msg[1:]
            if "Google Test trace:" in msg:  # SCOPED_TRACE("gloo"): the case, in brackets
                at = msg.index("Google Test trace:")
                cases = [t.rsplit(": ", 1)[-1] for t in msg[at + 1:] if ": " in t]
                msg = msg[:at] + ([f"[{', '.join(cases)}]"] if cases else [])
            text = " ".join(msg)
            if not where or where == "unknown file" or "tests/harness/" in where:
                return text[:300]  # the harness reports for a rank: its line says nothing
            return f"{where}: {text}"[:300]
    return ""


def relative(text: str, root: str) -> str:
    """Paths under the repository root, written from it ("tests/01_ranks/x.cpp:12")."""
    return text.replace(root.rstrip("/") + "/", "") if root else text


def judge(test: str, run: Contained, timeout_s: float, root: str = "",
          memory_mib: Optional[float] = None) -> Verdict:
    out = relative(run.output, root)
    body = _body(out, test)
    ok = f"[       OK ] {test}" in out
    skipped = f"[  SKIPPED ] {test}" in out
    failed_marker = f"[  FAILED  ] {test}" in out
    todo = TODO.search(out)
    harness_timeout = HARNESS_TIMEOUT.search(body)
    signalled = run.returncode < 0
    first = first_failure(body) if failed_marker else ""
    # The test's own failure came first (a later case of it timed out): that is the cause.
    earlier = bool(first) and harness_timeout is not None and not HARNESS_TIMEOUT.search(first)

    if run.memory_exceeded:
        reason = (f"exceeded {memory_mib:g} MiB of memory (all its processes together; stopped "
                  f"by the grader): a leak, or buffers far larger than the test needs?")
    elif run.timed_out:
        if harness_timeout:
            reason = harness_timeout.group(1)
        else:
            reason = (f"timed out after {timeout_s:g} s (stopped by the grader): an infinite loop, "
                      f"or a deadlock?")
    elif todo:
        reason = f"TODO {todo.group(1)} is not written yet"
    elif earlier:
        later = harness_timeout.group(1).split(";")[0]
        reason = f"{first} (later in the test: {later})"
    elif harness_timeout:
        reason = harness_timeout.group(1)
    elif signalled:
        reason = f"crashed: {signal_text(-run.returncode)}"
    elif ok and run.returncode == 0:
        reason = ""
    elif skipped and run.returncode == 0:
        why = re.search(r": Skipped\s*\n([^\n]*)", body)
        return Verdict("skipped", "", f"skipped here: {why.group(1).strip() if why else body}")
    elif failed_marker:
        reason = first or "failed (see the output)"
    elif ok:
        reason = f"the test passed, then its process exited with code {run.returncode}"
    else:
        reason = (f"the test process exited (code {run.returncode}) before the test finished: "
                  f"does the code call exit()?")
    if run.leftovers:
        note = (f"{run.leftovers} process(es) of the test were still running after it ended; "
                f"the grader killed them")
        reason = f"{reason} ({note})" if reason else ""
        body += f"\n[grader] {note}\n"
    status = "passed" if not reason else "failed"
    detail = body.strip() if status == "passed" else f"{reason}\n\n{body.strip()}"
    return Verdict(status, reason.replace("\n", " ").strip(), detail[:8000])
