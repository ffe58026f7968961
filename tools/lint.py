#!/usr/bin/env python3
"""lint.py: `make lint`, clang-tidy over the course's files, as many at a time as cores.

    python3 tools/lint.py BUILD REGEX [--jobs N] [--clang-tidy BIN]

Lints every .cpp file of BUILD's compile database whose path relative to the tree matches
REGEX (a Python regular expression, matched from the start), once each, except the stubs
(lessons/NN_topic/f.cpp where solutions/NN_topic/f.cpp exists is generated from that answer
file, which is checked itself; in a tree where someone works through the course, those
files hold their answers in progress), with the checks of .clang-tidy (and
tests/.clang-tidy), and fails if clang-tidy reports anything. What it adds to a plain
run-clang-tidy:

- The longest files start first (their last durations are remembered, a driver's
  main.cpp is assumed long), so the two cores finish together instead of one waiting
  on a late main.cpp.
- A file that passed is not linted again on this machine while nothing it sees has
  changed: the key is the file as clang preprocesses it (every header's text, the flags,
  the macros) with the comments clang-tidy reads (NOLINT, `/*name=*/`), the clang-tidy
  configurations that apply to it and clang-tidy's version; the level of debug
  information is left out.
  The cache is COURSE_LINT_CACHE (default ~/.cache/course-lint); COURSE_LINT_CACHE=off
  lints everything. Files with findings are never cached: they are reported every run.
- The same verdicts travel with the tree, for a fresh machine: tools/lint_passed.txt
  holds, for each file that passed, the key it passed with, rewritten by every run (a
  file with findings leaves it) and committed with the change. A fresh clone on a
  machine without the cache computes each file's key and lints the files whose key is
  not the one recorded: those that changed, or whose headers, flags, configurations or
  clang-tidy changed, since the record was last written. COURSE_LINT_CACHE=off (`make
  lint-all`) reads neither and writes the record anew.
- The compile commands are given to clang-tidy without GCC's precompiled header (clang
  cannot read it), so each file is checked for the includes it really has.
- A unity build (COURSE_UNITY: CMake compiles batches "Unity/unity_N_cxx.cxx" that include
  the real files) lists the batches, not the files, in its database: each batch's entry is
  read as one entry per file it includes, with the batch's flags, so every file is linted
  alone all the same.

What this is not: a build. BUILD need only be configured (its compile_commands.json).
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
RECORD = ROOT / "tools" / "lint_passed.txt"
RECORD_HEADER = """\
# The files of the tree that passed `make lint`, each with the key of what clang-tidy read
# (tools/lint.py): a file whose key is unchanged is not linted again, on any machine.
# Written by `make lint` (`make lint-all` writes it anew); commit it with the change.
"""

QUIET = ("warnings generated", "warning generated", "Suppressed ", "Use -header-filter",
         "Use -system-headers")


UNITY_BATCH = re.compile(r"/Unity/unity_[0-9]+_cxx\.cxx$")
UNITY_INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def database_entries(build):
    """BUILD's compile database, a unity batch's entry replaced by one per file it includes."""
    database = pathlib.Path(build) / "compile_commands.json"
    if not database.exists():
        sys.exit(f"lint: {database} is missing; configure {build} first")
    entries = []
    for entry in json.loads(database.read_text()):
        batch = str(pathlib.Path(entry["directory"]) / entry["file"])
        if not UNITY_BATCH.search(batch):
            entries.append(entry)
            continue
        args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
        for source in UNITY_INCLUDE.findall(pathlib.Path(batch).read_text()):
            entries.append({"directory": entry["directory"], "file": source,
                            "arguments": [source if a in (batch, entry["file"]) else a
                                          for a in args]})
    return entries


def lint_files(build, regex):
    """The paths (relative to the tree, sorted) of the files to lint; see the top."""
    pattern = re.compile(regex)
    files = set()
    for entry in database_entries(build):
        path = (pathlib.Path(entry["directory"]) / entry["file"]).resolve()
        try:
            rel = path.relative_to(ROOT)
        except ValueError:
            continue  # the build tree's own files (the stub tree) and dependencies
        if rel.suffix != ".cpp" or not pattern.match(rel.as_posix()):
            continue
        if rel.parts[0] == "lessons" and (ROOT / "solutions" / rel.relative_to("lessons")).exists():
            continue  # a stub
        files.add(rel.as_posix())
    return sorted(files)


def arguments(entry):
    """The compile command as a list, without the precompiled header and the output file."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip = [], False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a == "-include" and i + 1 < len(args) and "cmake_pch" in args[i + 1]:
            skip = True
            continue
        if a == "-Winvalid-pch":
            continue
        out.append(a)
    return out


def configs(path):
    """The .clang-tidy files that apply to `path`, nearest last."""
    found, d = [], path.parent
    while True:
        if (d / ".clang-tidy").is_file():
            found.append(d / ".clang-tidy")
        if d == ROOT or d == d.parent:
            break
        d = d.parent
    return list(reversed(found))


def cache_key(entry, args, tidy_version):
    """A hash of what clang-tidy would see, or None when clang cannot preprocess it."""
    flags = list(args[1:])
    if "-o" in flags:
        i = flags.index("-o")
        del flags[i:i + 2]
    if "-c" in flags:
        flags.remove("-c")
    p = subprocess.run(["clang++", "-E", *flags], cwd=entry["directory"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    if p.returncode != 0:
        return None
    # The tree's own path is left out of the key (flags and line markers name it), so a
    # fresh clone elsewhere on this machine finds what an earlier clone's files passed.
    root = str(ROOT).encode()
    h = hashlib.sha256()
    h.update(tidy_version.encode())
    # The level of debug information (-g, -g1) changes nothing clang-tidy reads: one name
    # for all of them, so a build that changes it keeps the verdicts.
    named = ["-g" if re.fullmatch(r"-g(gdb)?[0-3]?", f) else f for f in flags]
    h.update("\0".join(named).encode().replace(root, b"<tree>"))
    for c in configs(pathlib.Path(entry["file"])):
        h.update(c.read_bytes())
    h.update(p.stdout.replace(root, b"<tree>"))
    read = comments_read(p.stdout, root, entry["directory"])
    if read:
        h.update(b"\0comments\0" + read)
    return h.hexdigest()


LINE_MARKER = re.compile(rb'^# [0-9]+ "([^"]+)"', re.M)
READ_COMMENT = re.compile(rb"^.*(NOLINT|/\*\s*\w+\s*=\s*\*/).*$", re.M)


def comments_read(preprocessed, root, directory):
    """The lines of the course's own files in `preprocessed` with a comment clang-tidy reads.

    clang -E drops comments, and clang-tidy reads two kinds: NOLINT and argument comments
    (`/*name=*/`, bugprone-argument-comment). Without these lines in the key, removing a
    NOLINT or renaming an argument comment would keep an earlier pass. Only they are added,
    so the key of a file whose sources have none is what it was without them. The line
    markers name files as the compiler found them, relative to `directory` or absolute.
    """
    lines = []
    for name in sorted(set(LINE_MARKER.findall(preprocessed))):
        path = os.path.normpath(os.path.join(directory.encode(), name))
        if not path.startswith(root + b"/"):
            continue
        try:
            text = pathlib.Path(path.decode()).read_bytes()
        except OSError:
            continue
        lines += [path[len(root):] + b":" + m.group(0).strip() for m in READ_COMMENT.finditer(text)]
    return b"\n".join(lines)


def read_record(path):
    """{file: key} from a record (tools/lint_passed.txt); empty when there is none."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    record = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#") and re.fullmatch(r"[0-9a-f]{64}", parts[1]):
            record[parts[0]] = parts[1]
    return record


def write_record(path, record):
    """Writes {file: key}, sorted, the files that still exist only; untouched if unchanged."""
    lines = [f"{f} {k}\n" for f, k in sorted(record.items()) if (ROOT / f).is_file()]
    text = RECORD_HEADER + "".join(lines)
    try:
        if path.read_text() == text:
            return
    except OSError:
        pass
    tmp = path.with_name(f"{path.name}.{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)


def main():
    ap = argparse.ArgumentParser(description="clang-tidy over the course's files")
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("regex")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--clang-tidy", default="clang-tidy")
    a = ap.parse_args()

    build = a.build.resolve()
    files = lint_files(build, a.regex)
    if not files:
        print(f"lint: no file matches LINT_FILES='{a.regex}'")
        return 1
    wanted = {str(ROOT / f) for f in files}
    entries = {}
    for e in database_entries(build):
        path = str((pathlib.Path(e["directory"]) / e["file"]).resolve())
        if path in wanted and path not in entries:
            entries[path] = {"directory": e["directory"], "file": path, "arguments": arguments(e)}
    database = build / "lint"
    database.mkdir(exist_ok=True)
    (database / "compile_commands.json").write_text(json.dumps(list(entries.values()), indent=1))

    cache_setting = os.environ.get("COURSE_LINT_CACHE", "")
    cache = None if cache_setting == "off" else pathlib.Path(
        cache_setting or pathlib.Path.home() / ".cache" / "course-lint")
    tidy_version = subprocess.run([a.clang_tidy, "--version"], stdout=subprocess.PIPE,
                                  text=True).stdout
    record = read_record(RECORD)
    recorded = dict(record) if cache else {}  # what a run may skip; lint-all skips nothing
    durations = {}
    if cache:
        (cache / "passed").mkdir(parents=True, exist_ok=True)
        try:
            durations = json.loads((cache / "durations.json").read_text())
        except (OSError, ValueError):
            durations = {}

    def expected(path):
        """Seconds of clang-tidy this file should take: what it took last time, else a guess
        (a fresh CI machine has no durations): the headers that cost most first (CLI11 in
        flags.cpp took 52 s of CPU; nlohmann-json 20-40 s; GoogleTest 6 s before the test's
        own code), then a second per KB of source."""
        rel = str(pathlib.Path(path).relative_to(ROOT))
        if rel in durations:
            return durations[rel]
        text = pathlib.Path(path).read_text(errors="replace")
        heavy = 50 if "<CLI/CLI.hpp>" in text else 25 if "<nlohmann/" in text else 0
        return heavy + (6 if "<gtest/gtest.h>" in text else 0) + len(text) / 1000
    order = sorted(entries, key=expected, reverse=True)
    print(f"lint: clang-tidy on {len(order)} files, {a.jobs} at a time", flush=True)

    def lint_one(path):
        e = entries[path]
        key = cache_key(e, e["arguments"], tidy_version)
        rel = str(pathlib.Path(path).relative_to(ROOT))
        if key and (recorded.get(rel) == key or (cache and (cache / "passed" / key).exists())):
            return path, "cached", "", 0.0, key
        start = time.monotonic()
        p = subprocess.run([a.clang_tidy, "-p", str(database), "--quiet", path],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace")
        took = time.monotonic() - start
        text = "\n".join(l for l in p.stdout.splitlines()
                         if l.strip() and not any(q in l for q in QUIET))
        clean = p.returncode == 0 and "warning:" not in text and "error:" not in text
        if clean and key and cache:
            (cache / "passed" / key).touch()
        return path, "clean" if clean else "findings", text, took, key

    start = time.monotonic()
    findings, cached, measured = [], 0, {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for path, status, text, took, key in pool.map(lint_one, order):
            rel = str(pathlib.Path(path).relative_to(ROOT))
            if status == "findings" or not key:
                record.pop(rel, None)
            else:
                record[rel] = key
            if status == "cached":
                cached += 1
                measured.setdefault(path, durations.get(rel, 0.0))  # its last measured time
                continue
            durations[rel] = round(took, 1)
            measured[path] = took
            if status == "findings":
                findings.append(rel)
                print(text, flush=True)
    write_record(RECORD, record)
    if cache:
        tmp = cache / f"durations.json.{os.getpid()}"
        tmp.write_text(json.dumps(durations, indent=0, sort_keys=True))
        tmp.replace(cache / "durations.json")
    # What tools/profile_test.py reads: every linted file's seconds, the last measured for a
    # cached one (0 when never measured on this machine), so it counts every file linted.
    times_path = build / "lint-times.json"
    try:
        times = json.loads(times_path.read_text())
    except (OSError, ValueError):
        times = {}
    times.update({str(pathlib.Path(p).relative_to(ROOT)): round(t, 1) for p, t in measured.items()})
    times_path.write_text(json.dumps(times, indent=0, sort_keys=True))
    took = time.monotonic() - start
    # What this run did, for the profile: how many files clang-tidy read, how many kept the
    # verdict they passed with (the machine's cache or tools/lint_passed.txt).
    (build / "lint-run.json").write_text(json.dumps(
        {"files": len(order), "linted": len(order) - cached, "kept": cached,
         "seconds": round(took, 1)}))
    note = f" ({cached} unchanged since they last passed)" if cached else ""
    if findings:
        print(f"lint: clang-tidy found problems in {len(findings)} files (.clang-tidy): "
              + ", ".join(findings))
        return 1
    print(f"lint: clang-tidy found nothing in {len(order)} files{note}, "
          f"{int(took) // 60}m{int(took) % 60:02d}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
