"""build.py: configures the grading tree and builds one lesson's tests at a time.

The grading tree is the Makefile's own (build/lessons for the learner's code), configured
with CHAIN=ref: lesson NN's tests link the learner's lessons/NN and the reference for the
lessons before it (docs/maintainers.md). Each lesson's test target is built on its own, so a lesson
that does not compile scores 0 with the compiler's first errors and the others go on.

What this is not: a build system. It calls CMake, which does the work.
"""
import os
import pathlib
import re
import shutil
import subprocess
from typing import List, Optional, Tuple

ERROR = re.compile(r"(\berror\b|undefined reference|ld returned|CMake Error|No rule to make target)")
NOISE = re.compile(r"^(g?make(\[\d+\])?: |\[\s*\d+%\]|\[\d+/\d+\] |ninja: |-- |Consolidate compiler generated)")


def _run(argv: List[str], timeout_s: float) -> Tuple[int, str]:
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=timeout_s)
        return p.returncode, p.stdout.decode("utf-8", errors="replace")
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", errors="replace")
        return 124, out + f"\nerror: the build did not finish within {timeout_s:g} s\n"


def first_errors(log: str, root: str, max_lines: int = 30) -> Tuple[str, str]:
    """(the first error line, an excerpt of the errors) from a compiler or CMake log."""
    lines = [l.replace(root.rstrip("/") + "/", "") for l in log.splitlines()]
    start = next((i for i, l in enumerate(lines)
                  if ERROR.search(l) and (not NOISE.match(l) or "No rule to make target" in l)), None)
    if start is None:
        tail = [l for l in lines if not NOISE.match(l)][-max_lines:]
        return "the build failed (see the output)", "\n".join(tail)
    first = lines[start]
    if start > 0 and re.search(r"In (member )?function|In instantiation", lines[start - 1]):
        start -= 1
    excerpt = [l for l in lines[start:] if l == first or not NOISE.match(l)][:max_lines]
    return first.strip()[:300], "\n".join(excerpt)


def configure(root: pathlib.Path, build: pathlib.Path, impl: str,
              hidden: Optional[pathlib.Path], extra: List[str] = ()) -> Tuple[bool, str, str]:
    """Configures `build`. Returns (ok, first error, excerpt)."""
    argv = ["cmake", "-S", str(root), "-B", str(build), f"-DIMPL={impl}", "-DCHAIN=ref",
            f"-DCOURSE_HIDDEN_TESTS={hidden or ''}", *extra]
    if not (build / "CMakeCache.txt").exists() and shutil.which("ninja"):
        argv += ["-G", "Ninja"]  # as the Makefile does: a new build directory uses Ninja
    rc, log = _run(argv, 600)
    if rc == 0:
        return True, "", ""
    first, excerpt = first_errors(log, str(root))
    return False, f"CMake could not configure the build: {first}", excerpt


def build_target(root: pathlib.Path, build: pathlib.Path, target: str,
                 jobs: int) -> Tuple[bool, str, str]:
    """Builds one target. Returns (ok, first error, excerpt)."""
    rc, log = _run(["cmake", "--build", str(build), "--target", target, "-j", str(jobs)], 1800)
    exe = build / target
    if rc == 0 and exe.is_file() and os.access(exe, os.X_OK):
        return True, "", ""
    first, excerpt = first_errors(log, str(root))
    return False, f"does not compile: {first}", excerpt
