#!/usr/bin/env python3
"""build_step.py: one CMake build step of the Makefile, quiet but visibly alive.

    python3 tools/build_step.py BUILD_DIR LABEL [TARGET...]      (JOBS=N: compile jobs)

Runs `cmake --build BUILD_DIR -j JOBS [--target TARGET...]`, writes everything it prints
to BUILD_DIR/build.log, and shows only this: a progress line each tenth of the way (with
the steps done and the time so far, so a first build of several minutes never looks hung),
then every warning and error, then a closing line with the time taken. Exits with the
build's own status.

What this is not: a build system. CMake (Ninja or Make underneath) does the work; this
only filters what it prints.
"""
import os
import pathlib
import re
import subprocess
import sys
import time

# Progress lines: Ninja's "[12/380] Building ..." and Make's "[ 31%] Building ...".
NINJA = re.compile(r"^\[(\d+)/(\d+)\] ")
MAKE = re.compile(r"^\[\s*(\d+)%\] ")
# What else a successful build prints that is not a warning or an error.
NOISE = re.compile(r"^(-- |Consolidate|g?make(\[\d+\])?: |ninja: (Entering|no work))")


def minutes(seconds):
    return f"{int(seconds) // 60}m{int(seconds) % 60:02d}s"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.split("\n\n")[1])
    build, label, targets = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    jobs = os.environ.get("JOBS") or str(os.cpu_count() or 2)
    argv = ["cmake", "--build", str(build), "-j", jobs]
    for t in targets:
        argv += ["--target", t]
    start = time.monotonic()
    shown = 0  # the last tenth reported
    steps = None  # Ninja's step count; it starts over after re-running CMake
    with open(build / "build.log", "w") as log:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, text=True, errors="replace")
        for line in p.stdout:
            log.write(line)
            m = NINJA.match(line)
            if m:
                done, total = int(m.group(1)), int(m.group(2))
                if total != steps:
                    steps, shown = total, 0
                pct = 100 * done // total
            else:
                m = MAKE.match(line)
                if not m:
                    if line.strip() and not NOISE.match(line):
                        print(line, end="", flush=True)
                    continue
                pct, done, total = int(m.group(1)), None, None
            if pct // 10 > shown and pct < 100 and (total is None or total >= 10):
                shown = pct // 10
                count = f" ({done}/{total} steps)" if total else ""
                print(f"{label}: {pct}%{count}, {minutes(time.monotonic() - start)}",
                      flush=True)
        rc = p.wait()
    took = minutes(time.monotonic() - start)
    if rc == 0:
        print(f"{label}: built in {took}", flush=True)
    else:
        print(f"{label}: the build failed after {took} (the whole log: {build}/build.log)",
              flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
