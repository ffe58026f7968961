#!/usr/bin/env python3
"""grade.py: the course's autograder. `make grade` and `make grade-lessonNN` call it.

For every lesson (or the ones named with --lesson), in order:
  1. build its tests (test_NN) from the learner's lessons/NN and the reference for the
     lessons before it; a lesson that does not compile scores 0, with the compiler's
     first errors, and grading goes on;
  2. list its GoogleTest cases and run each one alone (`test_NN --gtest_filter=...`) in a
     session of its own, with COURSE_TEST_TIMEOUT_S set to the test's timeout and a hard
     kill 15 s later; whatever the test leaves running is killed and reported;
  3. score it with the lesson's points file, tests/NN_topic/points.json (grading/points.py).
Then it prints a table (lesson, passed tests, points) and writes grade.json (Gradescope's
results format). Hidden tests: --hidden DIR or COURSE_HIDDEN_TESTS=DIR, with DIR/NN_topic/
*.cpp and optionally DIR/NN_topic/points.json (docs/instructors.md).

    python3 tools/grade.py                     every lesson, the learner's code
    python3 tools/grade.py --lesson 05         one lesson (make grade-lesson05)
    python3 tools/grade.py --impl solutions    the reference, graded as if it were a learner's
    python3 tools/grade.py --impl stubs        the untouched stubs (generated from solutions/),
                                               in the reference build: every test should stop
                                               at a TODO (the grader's own self-test)
    python3 tools/grade.py --json /autograder/results/results.json      (Gradescope)
    python3 tools/grade.py --limits            each lesson's points and time limits, as the
                                               Markdown table docs/learners.md shows

Exit status: 0 every graded test passed, 1 some points were missed, 3 the grader could not
run (a bad points file, a bad --lesson).

What this is not: a sandbox. Learners' code runs as the grader's user (docs/instructors.md).
"""
import argparse
import concurrent.futures
import os
import pathlib
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the course tree
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from grading import build as buildlib  # noqa: E402
from grading import lessons as lessonlib  # noqa: E402
from grading import points as pointslib  # noqa: E402
from grading import report  # noqa: E402
from grading.contain import run_contained  # noqa: E402
from grading.verdict import judge  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lesson", action="append", default=[], metavar="NN",
                   help="grade this lesson only (repeatable): 5, 05, lesson05 or 05_ring_allreduce")
    p.add_argument("--impl", choices=("lessons", "solutions", "stubs"), default="lessons",
                   help="whose code lesson NN is: lessons/ (the learner's, default), solutions/, "
                        "or the stubs generated from solutions/ (test_NN_stubs of the "
                        "reference build)")
    p.add_argument("--root", type=pathlib.Path, default=ROOT, help="the course tree to grade")
    p.add_argument("--build", type=pathlib.Path,
                   help="build directory (default: ROOT/build/IMPL, shared with `make lessonNN`)")
    p.add_argument("--json", type=pathlib.Path, help="where to write grade.json (default: ROOT/grade.json)")
    p.add_argument("--hidden", type=pathlib.Path, default=os.environ.get("COURSE_HIDDEN_TESTS") or None,
                   help="instructors' hidden tests, DIR/NN_topic/*.cpp (default: $COURSE_HIDDEN_TESTS)")
    p.add_argument("--cmake-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for CMake's configure step (repeatable)")
    p.add_argument("--timeout", type=float, help="seconds per test, overriding every points.json")
    p.add_argument("--grace", type=float, default=15,
                   help="seconds past a test's timeout before the grader kills it (default 15)")
    p.add_argument("--budget", type=float, help="seconds per lesson, overriding every points.json")
    p.add_argument("--memory-mib", type=float,
                   help="resident memory per test (MiB, all its processes), overriding every points.json")
    p.add_argument("-j", "--jobs", type=int, default=1, help="tests run at once (default 1)")
    p.add_argument("--build-jobs", type=int, default=os.cpu_count() or 2, help="compile jobs")
    p.add_argument("-q", "--quiet", action="store_true", help="print only failures and the table")
    p.add_argument("--limits", action="store_true",
                   help="print each lesson's points and time limits (Markdown) and exit")
    return p.parse_args(argv)


def limits_table(root: pathlib.Path) -> str:
    """Each lesson's points and limits from its points.json, as docs/learners.md shows them."""
    rows = ["| lesson | points | each test may run | the lesson stops starting tests after |",
            "| --- | --- | --- | --- |"]
    for lesson in lessonlib.find_lessons(root):
        folder = root / "tests" / lesson.topic
        if not lessonlib.test_sources(folder):
            continue
        pf = pointslib.load(folder / "points.json")
        longer = sorted(set(pf.timeouts.values()) - {pf.timeout_s})
        each = f"{pf.timeout_s:g} s" + (f" (some {', '.join(f'{t:g}' for t in longer)} s)" if longer else "")
        total = f"{pf.total:g}" if pf.total is not None else "1 per test"
        rows.append(f"| {lesson.nn} {lesson.topic[3:]} | {total} | {each} | {pf.budget_s:g} s |")
    return "\n".join(rows)


class Grader:
    def __init__(self, args):
        self.args = args
        self.root = args.root.resolve()
        # The stubs are graded in the reference build, where each lesson's test objects are
        # linked a second time against its stubs (test_NN_stubs, cmake/Lessons.cmake).
        self.tree = "solutions" if args.impl == "stubs" else args.impl
        self.suffix = "_stubs" if args.impl == "stubs" else ""
        self.build = (args.build or self.root / "build" / self.tree).resolve()
        self.hidden = args.hidden.resolve() if args.hidden else None
        self.configured = None  # (ok, reason, excerpt) once configured

    def say(self, text: str, always: bool = False) -> None:
        if always or not self.args.quiet:
            print(text, flush=True)

    def load_points(self, folder: pathlib.Path, default_visibility: str) -> pointslib.PointsFile:
        pf = pointslib.load(folder / "points.json", default_visibility)
        if self.args.timeout:
            pf.timeout_s, pf.timeouts = self.args.timeout, {}
        if self.args.budget:
            pf.budget_s = self.args.budget
        if self.args.memory_mib:
            pf.memory_mib = self.args.memory_mib
        return pf

    def configure(self):
        if self.configured is None:
            self.say(f"grade: configuring {self.build.relative_to(self.root) if self.build.is_relative_to(self.root) else self.build} "
                     f"(IMPL={self.tree}, earlier lessons from the reference"
                     f"{', hidden tests from ' + str(self.hidden) if self.hidden else ''})")
            self.configured = buildlib.configure(self.root, self.build, self.tree, self.hidden,
                                                 self.args.cmake_arg)
        return self.configured

    def grade_lesson(self, lesson: lessonlib.Lesson):
        visible_dir = self.root / "tests" / lesson.topic
        hidden_dir = lessonlib.hidden_folder(self.hidden, lesson)
        if not lessonlib.test_sources(visible_dir) and not hidden_dir:
            self.say(f"grade: {lesson.name} {lesson.title}: no tests yet, not graded")
            return None
        result = report.LessonScore(lesson)
        start = time.monotonic()
        pf = self.load_points(visible_dir, "visible")
        parts = []
        if lessonlib.test_sources(visible_dir):
            parts.append((f"test_{lesson.nn}{self.suffix}", pf, False))
        if hidden_dir and not self.suffix:  # hidden tests link the reference: not the stubs
            parts.append((f"test_{lesson.nn}_hidden", self.load_points(hidden_dir, "hidden"), True))
        self.configure()
        self.say(f"grade: {lesson.name} {lesson.title} (each test up to {pf.timeout_s:g} s; "
                 f"no test starts after {pf.budget_s:g} s)")
        spent = [0.0]  # seconds of the budget the lesson's tests have used (builds do not count)
        for target, part_points, hidden in parts:
            result.tests += self.grade_part(lesson, target, part_points, hidden, spent, pf.budget_s)
        result.elapsed = time.monotonic() - start
        return result

    def unrunnable(self, pf, hidden, reason, excerpt):
        self.say(f"  FAIL  {'[hidden] ' if hidden else ''}{reason}", always=True)
        return [report.TestScore("(build)", hidden, pf.total or 0.0, 0.0, "failed", reason,
                                 f"{reason}\n\n{excerpt}".strip(), pf.default_visibility)]

    def grade_part(self, lesson, target, pf, hidden, spent, budget_s):
        ok, reason, excerpt = self.configure()
        if not ok:
            return self.unrunnable(pf, hidden, reason, excerpt)
        ok, reason, excerpt = buildlib.build_target(self.root, self.build, target, self.args.build_jobs)
        if not ok:
            return self.unrunnable(pf, hidden, f"{lesson.name} {reason}", excerpt)
        exe = str(self.build / target)
        listing = run_contained([exe, "--gtest_list_tests"], timeout_s=60, cwd=str(self.build))
        names = lessonlib.parse_gtest_list(listing.output)
        if listing.returncode != 0 or listing.timed_out or not names:
            why = "timed out" if listing.timed_out else f"exit {listing.returncode}"
            return self.unrunnable(pf, hidden, f"{target} could not list its tests ({why})",
                                   listing.output[-3000:])
        maxes = pf.max_scores(names)
        unscored = [n for n in names if maxes[n] <= 0]
        if unscored:  # they check given code (they pass on the stubs): not worth the time
            self.say(f"  ({len(unscored)} test(s) of code you were given are worth 0 points and "
                     f"are not run here; `ctest -L {lesson.name}` in the build runs them)")
            names = [n for n in names if maxes[n] > 0]
        # The budget is for running tests: building them (slow on a busy machine) is not
        # taken from it.
        start = time.monotonic() - spent[0]

        def run_one(name):
            timeout = pf.timeout(name)
            if time.monotonic() - start > budget_s:
                reason = (f"not run: the lesson's time budget of {budget_s:g} s was used up "
                          f"(earlier tests timed out)")
                return report.TestScore(name, hidden, maxes[name], 0.0, "not run", reason, reason,
                                        pf.visibility_of(name))
            env = dict(os.environ, COURSE_TEST_TIMEOUT_S=f"{timeout:g}", GTEST_COLOR="no")
            env.pop("GTEST_OUTPUT", None)
            run = run_contained([exe, f"--gtest_filter={name}"], timeout_s=timeout + self.args.grace,
                                cwd=str(self.build), env=env, memory_mib=pf.memory_mib)
            v = judge(name, run, timeout, str(self.root), pf.memory_mib)
            return report.TestScore(name, hidden, maxes[name], maxes[name] if v.status == "passed" else 0.0,
                                    v.status, v.reason, v.detail, pf.visibility_of(name), run.elapsed)

        scores = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, self.args.jobs)) as pool:
            for t in pool.map(run_one, names):
                scores.append(t)
                tag = "[hidden] " if hidden else ""
                if t.status == "skipped":
                    self.say(f"  skip  {tag}{t.name}: {t.detail}")
                elif t.passed:
                    self.say(f"  ok    {tag}{t.name} ({t.elapsed:.1f} s)")
                else:
                    self.say(f"  FAIL  {tag}{t.name}: {t.reason}", always=True)
        # A test skipped here (no GPU, a world it does not apply to) neither gives nor
        # costs points: the others share the lesson's total.
        skipped = [t for t in scores if t.status == "skipped"]
        if skipped:
            maxes = pf.max_scores([t.name for t in scores if t.status != "skipped"])
            for t in scores:
                t.max_score = maxes.get(t.name, 0.0)
                t.score = t.max_score if t.passed else 0.0
        spent[0] = time.monotonic() - start
        return scores


def main(argv=None) -> int:
    args = parse_args(argv)
    root = args.root.resolve()
    if args.limits:
        try:
            print(limits_table(root))
        except pointslib.PointsError as e:
            print(f"grade: {e}", file=sys.stderr)
            return 3
        return 0
    try:
        lessons = lessonlib.select(lessonlib.find_lessons(root), args.lesson)
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 3
    if args.hidden and not args.hidden.is_dir():
        print(f"grade: hidden tests folder {args.hidden} does not exist", file=sys.stderr)
        return 3
    grader = Grader(args)
    started = time.monotonic()
    results = []
    try:
        for lesson in lessons:
            r = grader.grade_lesson(lesson)
            if r is not None:
                results.append(r)
    except pointslib.PointsError as e:
        print(f"grade: {e}", file=sys.stderr)
        return 3
    elapsed = time.monotonic() - started
    summary = report.table(results)
    who = {"solutions": "the reference solutions", "stubs": "the untouched stubs"}.get(
        args.impl, "your code (lessons/)")
    summary += f"\n\ngraded {who} in {elapsed:.0f} s"
    out = (args.json or root / "grade.json")
    report.write_json(out, report.grade_json(results, elapsed, args.impl, summary))
    print("\n" + summary + f"; wrote {out}")
    missed = any(t.status in ("failed", "not run") for r in results for t in r.tests)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
