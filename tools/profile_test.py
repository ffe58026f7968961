#!/usr/bin/env python3
"""profile_test.py: where `make test` (and CI's `.ci/run`) spent its time, from what they left.

    python3 tools/profile_test.py [BUILD]      # make profile-test  (BUILD: build/solutions)
    make profile-test SANITIZE=asan            # CI's tree, build/asan

Reads, after a `make test` in BUILD (and, for the lint section, a `make lint`):

- BUILD/.ninja_log: every build step's duration: the total, by kind of target (common/,
  each lesson's libraries, its tests, its driver, the links) and the 20 slowest files;
- BUILD/Testing/Temporary/CTestCostData.txt with `ctest --show-only=json-v1`: how many CTest
  tests per label and their time, and the 20 slowest tests;
- build/grader-selftest/times.json (tests/grader/test_grader.py writes it): each of the
  grader's own tests, and each planted mistake by lesson;
- BUILD/lint-times.json (tools/lint.py writes it): clang-tidy's seconds per file, by folder,
  and the 20 slowest files; BUILD/lint-run.json: how many files the last run gave to
  clang-tidy and how many kept their verdict (the machine's cache, tools/lint_passed.txt).

The last section counts what was checked (tests, labels, stub drivers, grader tests,
planted mistakes, linted files), so a cut that drops a check shows in the counts.
What this is not: a timer. It runs nothing; a section whose file is missing says which
command makes it.
"""
import collections
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def minutes(seconds):
    return f"{int(seconds) // 60} min {int(seconds) % 60:02d} s"


def table(rows, head):
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        print("  " + "  ".join(str(c).rjust(w) if i else str(c).ljust(w)
                               for i, (c, w) in enumerate(zip(r, widths))))


def step_kind(target):
    """The group a ninja output belongs to: 'common', 'lesson 07 given', 'tests 15', ..."""
    m = re.search(r"CMakeFiles/([^/]+)\.dir/", target)
    name = m.group(1) if m else pathlib.Path(target).name
    rules = [(r"course_common", "common/"), (r"ex_(\d\d)_given", "lesson {} given code"),
             (r"ex_(\d\d)_(ref|mine|stubs)", "lesson {} answers"),
             (r"test_(\d\d)", "lesson {} tests"), (r"lesson(\d\d)", "lesson {} driver"),
             (r"test_common|common_test", "common tests"), (r"test_subgroups", "subgroup tests"),
             (r"harness", "test harness")]
    for pattern, label in rules:
        mm = re.match(pattern, name)
        if mm:
            return label.format(*mm.groups()[:1]) if "{}" in label else label
    return "other" if m else "links and the rest"


def build_section(build):
    log = build / ".ninja_log"
    if not log.exists():
        print(f"build: {log} is missing (make test builds it)\n")
        return 0
    steps = {}
    for line in log.read_text().splitlines()[1:]:
        start, end, _, target, _ = line.split("\t")
        steps[target] = (int(start), int(end))  # the last build of each output wins
    cpu = sum(e - s for s, e in steps.values()) / 1000
    wall = (max(e for _, e in steps.values()) - min(s for s, _ in steps.values())) / 1000
    print(f"build: {len(steps)} steps, {minutes(cpu)} of compiler time, "
          f"{minutes(wall)} from first to last step (the last build of each step)")
    kinds = collections.defaultdict(float)
    for target, (s, e) in steps.items():
        kinds[step_kind(target)] += (e - s) / 1000
    table([(k, f"{v:.0f}", f"{100 * v / max(cpu, 1e-9):.1f}%")
           for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])[:25]],
          ("by target", "s", "share"))
    slow = sorted(steps.items(), key=lambda kv: kv[1][0] - kv[1][1])[:20]
    table([(re.sub(r"^.*CMakeFiles/[^/]+\.dir/", "", t), f"{(e - s) / 1000:.1f}")
           for t, (s, e) in slow], ("slowest steps", "s"))
    print()
    return len(steps)


def test_section(build):
    cost = build / "Testing" / "Temporary" / "CTestCostData.txt"
    if not cost.exists():
        print(f"tests: {cost} is missing (make test runs CTest there)\n")
        return 0, 0
    seconds = {}
    for line in cost.read_text().splitlines():
        if line.startswith("---"):
            break
        parts = line.rsplit(" ", 2)
        if len(parts) == 3:
            seconds[parts[0]] = float(parts[2])
    listing = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    labels = {}
    for t in json.loads(listing or '{"tests": []}').get("tests", []):
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        labels[t["name"]] = (props.get("LABELS") or ["-"])[0]
    by_label = collections.defaultdict(lambda: [0, 0.0])
    for name, label in labels.items():
        by_label[label][0] += 1
        by_label[label][1] += seconds.get(name, 0.0)
    total = sum(seconds.get(n, 0.0) for n in labels)
    print(f"tests: {len(labels)} CTest tests in {len(by_label)} labels, {minutes(total)} of "
          f"test time (run {len(seconds)} of them; CTest runs several at once)")
    table([(k, n, f"{s:.0f}") for k, (n, s) in sorted(by_label.items())],
          ("label", "tests", "s"))
    table([(n, labels.get(n, "-"), f"{s:.1f}")
           for n, s in sorted(seconds.items(), key=lambda kv: -kv[1])[:20]],
          ("slowest tests", "label", "s"))
    print()
    return len(labels), len(by_label)


def grader_section():
    times = ROOT / "build" / "grader-selftest" / "times.json"
    if not times.exists():
        print(f"grader: {times} is missing (make test-grader writes it)\n")
        return 0, 0
    data = json.loads(times.read_text())
    tests, planted = data.get("tests", {}), data.get("planted", [])
    print(f"grader: {len(tests)} tests of the grader, {minutes(sum(tests.values()))}")
    table([(n, f"{s:.0f}") for n, s in sorted(tests.items(), key=lambda kv: -kv[1])],
          ("grader test", "s"))
    if planted:
        table([(p["lesson"], p["what"], f"{p['score']:.1f}/{p['total']:.0f}", f"{p['seconds']:.0f}")
               for p in planted], ("lesson", "planted mistake", "points", "s"))
    print()
    return len(tests), len(planted)


def lint_section(build):
    times = build / "lint-times.json"
    if not times.exists():
        print(f"lint: {times} is missing (make lint writes it; CI lints build/solutions)\n")
        return 0
    files = json.loads(times.read_text())
    total = sum(files.values())
    print(f"lint: {len(files)} files, {minutes(total)} of clang-tidy time")
    try:
        run = json.loads((build / "lint-run.json").read_text())
        print(f"  the last run: {run['files']} files in {minutes(run['seconds'])}, {run['linted']} "
              f"read by clang-tidy, {run['kept']} keeping the verdict they passed with (the "
              f"machine's cache or tools/lint_passed.txt); a kept file's time is its last "
              f"measured on this machine, 0 when never")
    except (OSError, ValueError, KeyError):
        pass
    folders = collections.defaultdict(float)
    for f, s in files.items():
        folders[f.split("/")[0] + "/"] += s
    table([(k, f"{v:.0f}") for k, v in sorted(folders.items(), key=lambda kv: -kv[1])],
          ("folder", "s"))
    table([(f, f"{s:.1f}") for f, s in sorted(files.items(), key=lambda kv: -kv[1])[:20]],
          ("slowest files", "s"))
    print()
    return len(files)


def main():
    build = (pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "solutions").resolve()
    print(f"profile of {build}\n")
    steps = build_section(build)
    tests, labels = test_section(build)
    grader, planted = grader_section()
    lint_build = build if (build / "lint-times.json").exists() else ROOT / "build" / "solutions"
    linted = lint_section(lint_build)
    lessons = len(list((ROOT / "lessons").glob("[0-9][0-9]_*")))
    print("checked: " + ", ".join([f"{steps} build steps", f"{tests} CTest tests ({labels} labels)",
                                   f"{lessons} stub drivers", f"{grader} grader tests",
                                   f"{planted} planted mistakes", f"{linted} linted files"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
