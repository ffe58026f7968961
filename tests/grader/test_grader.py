#!/usr/bin/env python3
"""test_grader.py: tests of the autograder (tools/grade.py) itself. `make test-grader`.

  units      points scaling, the gtest listing parser, verdicts from canned outputs,
             make_stubs.py refusing a hint that wraps onto the next line
  reference  solutions/ graded as a learner's code, in build/solutions (what `make test`
             has built by then): full points. Lesson 01 only: ctest has already run every
             case of every lesson alone, as the grader does; GRADER_TEST_ALL=1 grades all
  stubs      every lesson's untouched stubs (generated from solutions/), graded in the
             reference build (`grade.py --impl stubs`: each lesson's test objects linked a
             second time, against its stubs, as test_NN_stubs): 0 points in bounded time,
             every test worth points fails at a TODO of its own lesson, grade.json is well
             formed
  sabotage   a learner's copy (tools/export_learner.sh) in build/grader-selftest/export,
             built and graded without solutions/, with lesson 01's answers sabotaged
             (COURSE_SABOTAGE=deadlock, loop, segfault, exit, memory; sabotage/01_ranks/
             sabotage.h): lesson 01 scores 0 with the right reason and nothing is left
             running, while lesson 02, given its reference code, scores full points; the
             segfault run also grades hidden/01_ranks. Then lesson 05's ring sabotaged to
             send a whole segment before it receives: correct on small buffers, so only the
             large-message cases catch it; they score 0, in seconds, saying deadlock
  planted    the mistakes of planted.py (lessons 11 to 14: results right, rule broken,
             or right until a message wraps), each planted in a second learner's copy
             (build/grader-selftest/export-planted), each score at most half of their
             lesson; those of lessons 15 and 16 too with GRADER_TEST_ALL=1 (each grading
             builds and runs a lesson: minutes that make test's budget has not got; the
             units check that their substitutions still apply)
Each copy builds only what it grades (lessons 01, 02 and 05; lessons 11 to 14; and the
libraries of the lessons before them): the stubs of the others are graded in the
reference build, from the same sources.

The parts run as two processes of this file at once (run_halves_at_once below): the
planted mistakes in one, the rest in the other. Most of a sabotaged or planted grading
waits for a timeout, so side by side each fills the other's waits (on 2 cores, from the
end of the build to the end of both CTest and the grader: 304 s in one process, 290 s in
two; docs/bench/ci_history.md). Each
half's output is printed whole when both have ended. GRADER_TEST_SERIAL=1 runs them in
this process, one after the other.

The sabotaged files are made at test time from solutions/ (SABOTAGE below): each is the
reference answer with a few checked textual substitutions, so they follow the reference
as it changes, and a substitution whose text is no longer there fails the run, naming it.

The copy's lessons/ are the stubs generated from solutions/, whatever this tree's
lessons/ holds (someone working through the course has answers there); so are the stubs
graded in the reference build (BUILD/stub-tree).

The copy is built at -O1 without debug information (COPY_BUILD: the grader's behaviour
does not depend on it), links the reference build's course_common instead of compiling
common/ again (COURSE_PREBUILT_COMMON, cmake/PrebuiltCommon.cmake: the copy's common/ is
the reference's, which its configure checks file by file), and the reference's test harness,
test objects and each lesson's given objects too, while the copy's tests/, the headers they
include and the lesson's given files are the reference's (the sabotage's own header aside:
no file there has its name); only the answers, a lesson whose given file holds a planted
mistake, and the hidden tests compile in the copy. It is kept between runs, so a
second `make test` rebuilds only what changed. Its cases grade four tests at a time (FAST): most of a
sabotaged test's time is spent waiting for its timeout.
GRADER_TEST_REFERENCE=DIR takes the reference build from DIR instead of build/solutions
(`make test SANITIZE=asan`: build/asan); GRADER_TEST_COPY_CXX_FLAGS and
GRADER_TEST_COPY_LINK_FLAGS are the copy's compile and link flags. There: compiled under
AddressSanitizer and linked with UndefinedBehaviorSanitizer's runtime too, which that
build's reference libraries need; not compiled under UBSan, which would report the
sabotage's null-pointer write as undefined behaviour instead of letting it crash.
GRADER_TEST_ONLY=units,stubs,reference,sabotage,planted runs a subset, in this process.

What this is not: a test of the lessons. A lesson's own tests say whether it works.
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import unittest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.dont_write_bytecode = True  # no __pycache__ in the course tree
sys.path.insert(0, str(ROOT / "tools"))

from grading import lessons as lessonlib  # noqa: E402
from grading import points as pointslib  # noqa: E402
from grading.contain import Contained, run_contained  # noqa: E402
from grading.verdict import judge  # noqa: E402

WORK = ROOT / "build" / "grader-selftest"
REFERENCE = pathlib.Path(os.environ.get("GRADER_TEST_REFERENCE", ROOT / "build" / "solutions")).resolve()
EXPORT = WORK / "export"  # the sabotaged copy (LearnerCopy)
PLANTED_EXPORT = WORK / "export-planted"  # the copy the planted mistakes go into (Planted)
ONLY = set(filter(None, os.environ.get("GRADER_TEST_ONLY", "").split(",")))
PARTS = ("units", "reference", "stubs", "sabotage", "planted")
# The two halves that run at once (see main below): each part's copy is its own build.
HALVES = ({"units", "reference", "stubs", "sabotage"}, {"planted"})
PREPARED = os.environ.get("GRADER_TEST_PREPARED") == "1"  # main exported the copies
# The copy's build: -O1 without debug information (a custom build type), which the grader's
# behaviour does not depend on and costs about half of -O2 -g to compile; course_common is
# the reference build's (compiling it again cost each copy about a minute of the cores
# CTest runs on beside it), so CUDA and NCCL are linked or not as there; so are the test
# harness, the test programs' objects and the lessons' given objects (compiling them cost
# the two copies 66 s of CPU of the grader's 164).
COPY_BUILD = [f"--cmake-arg=-DCOURSE_PREBUILT_COMMON={REFERENCE}", "--cmake-arg=-DCMAKE_BUILD_TYPE=Quick",
              "--cmake-arg=-DCMAKE_CXX_FLAGS_QUICK=-O1",
              f"--cmake-arg=-DCMAKE_CXX_FLAGS={os.environ.get('GRADER_TEST_COPY_CXX_FLAGS', '')}",
              f"--cmake-arg=-DCMAKE_EXE_LINKER_FLAGS={os.environ.get('GRADER_TEST_COPY_LINK_FLAGS', '')}"]
# Under the sanitizers a test's processes hold more memory (shadow memory, ASan's quarantine
# of freed blocks): the reference's large-message tests get room to pass; the memory
# sabotage sets its own limit.
SANITIZED = "sanitize" in os.environ.get("GRADER_TEST_COPY_CXX_FLAGS", "")
if SANITIZED:
    COPY_BUILD.append("--memory-mib=8192")
# Four tests at a time on two cores: a sabotaged test mostly waits (for a peer that never
# comes, for its timeout), so running two more overlaps those waits.
FAST = ["--grace", "3", "-j", "4", *COPY_BUILD]
VIS = {"visible", "hidden", "after_due_date", "after_published"}
TIMES = {"tests": {}, "planted": []}  # what TimedResult writes to WORK/times.json
TIMES_FILE = WORK / os.environ.get("GRADER_TEST_TIMES", "times.json")


def wanted(case):
    return unittest.skipIf(ONLY and case not in ONLY, f"GRADER_TEST_ONLY={','.join(ONLY)}")


def grade(*args, env=None, timeout=1500):
    """Runs tools/grade.py; returns (exit code, grade.json as a dict, seconds, output)."""
    out = pathlib.Path(args[args.index("--json") + 1])
    if out.exists():
        out.unlink()
    start = time.monotonic()
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "grade.py"), *args], cwd=ROOT,
                       env=dict(os.environ, **(env or {})), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout)
    text = p.stdout.decode(errors="replace")
    print(text[-1500:], flush=True)
    return p.returncode, json.loads(out.read_text()), time.monotonic() - start, text


def export_copy(dest):
    """A learner's copy in `dest` (tools/export_learner.sh), its lessons/ the untouched stubs."""
    WORK.mkdir(parents=True, exist_ok=True)
    subprocess.run(["bash", str(ROOT / "tools" / "export_learner.sh"), str(dest)], cwd=ROOT,
                   check=True, env=dict(os.environ, COURSE_EXPORT_BUILD=str(REFERENCE)))
    assert not (dest / "solutions").exists()
    # The untouched stubs, not this tree's lessons/ (which may hold someone's answers).
    subprocess.run([sys.executable, str(ROOT / "tools" / "make_stubs.py"), "--quiet", "--out",
                    str(dest)], cwd=ROOT, check=True)


def processes_of(copy):
    """The processes running a program of the copy in `copy`."""
    return [p for p in pathlib.Path("/proc").glob("[0-9]*")
            if (os.readlink(p / "exe") if os.access(p / "exe", os.R_OK) else "").startswith(f"{copy}/")]


def lessons_with_tests(root):
    return [l for l in lessonlib.find_lessons(root)
            if lessonlib.test_sources(root / "tests" / l.topic)]


def reason(test):
    return test["output"].splitlines()[0] if test["output"] else ""


def compare_trees(tmp, call, files, changes, under=""):
    """Runs `call` of cmake/PrebuiltCommon.cmake in script mode on two trees, tmp/theirs
    holding `files` and tmp/mine the same with `changes` ({name: text, or None to leave it
    out}), each under the folder `under`; returns the finished cmake process."""
    script = pathlib.Path(tmp, "check.cmake")
    script.write_text(f'cmake_minimum_required(VERSION 3.22)\n'
                      f'include("{ROOT}/cmake/PrebuiltCommon.cmake")\n{call}\n')
    for side, edits in (("theirs", {}), ("mine", changes)):
        shutil.rmtree(pathlib.Path(tmp, side), ignore_errors=True)
        for name, text in {**files, **edits}.items():
            if text is not None:
                path = pathlib.Path(tmp, side, under, name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    return subprocess.run(["cmake", f"-DMINE={tmp}/mine", f"-DTHEIRS={tmp}/theirs", "-P", str(script)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


class Units(unittest.TestCase):
    @wanted("units")
    def test_sabotage_substitutions_still_apply(self):
        for topic, name in SABOTAGE:
            if (ROOT / "solutions" / topic / name).exists():
                self.assertIn("sabotage", sabotaged(topic, name))

    @wanted("units")
    def test_planted_substitutions_still_apply(self):
        from planted import PLANTED  # tests/grader/planted.py
        for (topic, name, what), subs in PLANTED.items():
            src = ROOT / "solutions" / topic / name
            if not src.exists():
                src = ROOT / "lessons" / topic / name
            if not (ROOT / "solutions" / topic).is_dir():
                continue
            text = src.read_text()
            for pattern, replacement, count in subs:
                text, n = re.subn(pattern, lambda _: replacement, text, flags=re.S)
                self.assertEqual(n, count, f"planted '{what}': {pattern!r} matched {n} times; "
                                           f"the reference changed: update tests/grader/planted.py")

    def test_points_scale_to_the_total(self):
        pf = pointslib.PointsFile(total=10, points={"A.x": 3, "B.*": 0})
        m = pf.max_scores(["A.x", "A.y", "B.z"])
        self.assertAlmostEqual(m["A.x"], 7.5)
        self.assertAlmostEqual(m["A.y"], 2.5)
        self.assertEqual(m["B.z"], 0)

    @wanted("units")
    def test_every_points_file_loads(self):
        for path in ROOT.glob("tests/[0-9][0-9]_*/points.json"):
            with self.subTest(path=str(path)):
                self.assertIsNotNone(pointslib.load(path).total, "give the lesson a total")

    @wanted("units")
    def test_learners_doc_shows_the_real_limits(self):
        # docs/learners.md shows each lesson's limits as `grade.py --limits` prints them.
        p = subprocess.run([sys.executable, str(ROOT / "tools" / "grade.py"), "--limits"],
                           stdout=subprocess.PIPE, text=True, check=True)
        doc = (ROOT / "docs" / "learners.md").read_text()
        m = re.search(r"<!-- limits: python3 tools/grade.py --limits -->\n(.*?)\n<!-- end limits -->",
                      doc, re.S)
        self.assertIsNotNone(m, "docs/learners.md lost its limits table markers")
        self.assertEqual(m.group(1).strip(), p.stdout.strip(),
                         "docs/learners.md's limits differ from points.json: paste the output "
                         "of `python3 tools/grade.py --limits` between its markers")

    @wanted("units")
    def test_make_stubs_rejects_a_wrapped_hint(self):
        # clang-format wraps a long hint onto the next comment line; the stub would keep
        # half a sentence, so make_stubs.py (and `make check-stubs`) stops, naming the line.
        import make_stubs
        import tempfile
        body = ("int f() {{\n  // BEGIN SOLUTION: fill free slots, publish each with a\n"
                "  // {}\n  return 1;\n  // END SOLUTION\n}}\n")
        with tempfile.TemporaryDirectory() as tmp:
            src = pathlib.Path(tmp) / "a.cpp"
            for wrapped in ("release store of head", "(head - tail < slots) then", "`head`"):
                src.write_text(body.format(wrapped))
                with self.subTest(wrapped=wrapped), \
                        self.assertRaisesRegex(make_stubs.MarkerError, r"a\.cpp:3: the hint"):
                    make_stubs.stub_text(src, "lesson12")
            # A comment opening the region is a sentence of its own: kept out of the stub.
            src.write_text(body.format("Step 2: dial every lower rank."))
            stub = make_stubs.stub_text(src, "lesson12")
            self.assertIn("// TODO(lesson12): fill free slots, publish each with a\n  COURSE_TODO", stub)
            self.assertNotIn("Step 2", stub)

    @wanted("units")
    def test_prebuilt_common_needs_the_same_sources(self):
        # A copy links the reference's course_common only while its common/ is the
        # reference's, byte for byte (cmake/PrebuiltCommon.cmake, COPY_BUILD): a source,
        # header or CMakeLists.txt changed, added or missing on either side stops the
        # configure, naming it. Other files (an editor's backup) are not compared.
        import tempfile
        files = {"CMakeLists.txt": "add_library(x runtime/a.cpp)\n", "runtime/a.cpp": "int a = 1;\n",
                 "runtime/a.h": "extern int a;\n", "tensor/k.cu": "// k\n"}
        cases = [({}, None), ({"runtime/a.h~": "old"}, None),
                 ({"runtime/a.cpp": "int a = 2;\n"}, r"common/runtime/a\.cpp differs between"),
                 ({"CMakeLists.txt": "\n"}, r"common/CMakeLists\.txt differs between"),
                 ({"runtime/b.h": ""}, r"common/runtime/b\.h is in \S*mine and not in \S*theirs"),
                 ({"tensor/k.cu": None}, r"common/tensor/k\.cu is in \S*theirs and not in \S*mine")]
        with tempfile.TemporaryDirectory() as tmp:
            for changes, error in cases:
                p = compare_trees(tmp, "course_check_same_common(${MINE} ${THEIRS})", files, changes,
                                  under="common")
                with self.subTest(changes=changes):
                    if error is None:
                        self.assertEqual(p.returncode, 0, p.stdout)
                    else:
                        self.assertNotEqual(p.returncode, 0, p.stdout)
                        self.assertRegex(" ".join(p.stdout.split()), error)
                        self.assertIn("configure without COURSE_PREBUILT_COMMON", " ".join(p.stdout.split()))

    @wanted("units")
    def test_prebuilt_tests_need_the_same_sources(self):
        # A copy links the reference's test objects only while what they were compiled from
        # is the same (cmake/PrebuiltCommon.cmake, course_tests_difference): a test file
        # or a header of lessons/ changed or missing, or a test file added, differs; a header
        # only the copy has is no difference while no file of the reference has its name (the
        # sabotage's own header), but one named like a header there could be found by an
        # #include instead; the grader's own files are not compared.
        import tempfile
        files = {"tests/01_ranks/ranks_test.cpp": '#include "ranks.h"\n', "tests/harness/harness.h": "//\n",
                 "lessons/01_ranks/ranks.h": "int rank();\n", "lessons/02_p2p/p2p.h": "//\n",
                 "lessons/01_ranks/ranks.cpp": "int rank() { return 0; }\n", "tests/grader/x.cpp": "//\n"}
        cases = [({}, None), ({"lessons/01_ranks/sabotage.h": "//\n"}, None),
                 ({"lessons/01_ranks/ranks.cpp": "int rank() { return 1; }\n"}, None),
                 ({"tests/grader/x.cpp": None, "tests/grader/y.cpp": "//"}, None),
                 ({"tests/01_ranks/ranks_test.cpp": "//\n"}, r"tests/01_ranks/ranks_test\.cpp differs between"),
                 ({"lessons/01_ranks/ranks.h": "long rank();\n"}, r"lessons/01_ranks/ranks\.h differs between"),
                 ({"lessons/02_p2p/p2p.h": None}, r"lessons/02_p2p/p2p\.h is in \S*theirs and not in \S*mine"),
                 ({"lessons/02_p2p/ranks.h": "//\n"}, r"lessons/02_p2p/ranks\.h is in \S*mine and not in \S*theirs"),
                 ({"tests/01_ranks/extra_test.cpp": "//\n"},  # a test file the objects lack
                  r"tests/01_ranks/extra_test\.cpp is in \S*mine and not in \S*theirs")]
        call = 'course_tests_difference(d ${MINE} ${THEIRS})\nmessage(STATUS "difference: [${d}]")'
        with tempfile.TemporaryDirectory() as tmp:
            for changes, error in cases:
                p = compare_trees(tmp, call, files, changes)
                with self.subTest(changes=changes):
                    self.assertEqual(p.returncode, 0, p.stdout)
                    found = re.search(r"difference: \[(.*)\]", " ".join(p.stdout.split())).group(1)
                    if error is None:
                        self.assertEqual(found, "")
                    else:
                        self.assertRegex(found, error)

    @wanted("units")
    def test_gtest_listing(self):
        text = ("Running main() from gtest_main.cc\nRanks.\n  TwoNodes\n  DISABLED_Slow\n"
                "WorldSizes/FullMesh.\n  Every/0  # GetParam() = 1\n")
        self.assertEqual(lessonlib.parse_gtest_list(text), ["Ranks.TwoNodes", "WorldSizes/FullMesh.Every/0"])

    @wanted("units")
    def test_verdicts(self):
        def run(out, rc=1, timed_out=False):
            return judge("S.t", Contained(rc, timed_out, out, 0.1, 0), 30)
        todo = "[ RUN      ] S.t\nx: Failure\nrank 1 threw: not implemented: lessons/01_ranks/a.cpp:7 (write)\n[  FAILED  ] S.t"
        self.assertEqual(run(todo).reason, "TODO lessons/01_ranks/a.cpp:7 is not written yet")
        hang = "[ RUN      ] S.t\nh.cpp:1: Failure\nrank 2 of 4: timed out after 30 s; rank 2 was still in recv from rank 1\n"
        self.assertIn("rank 2 was still in recv from rank 1", run(hang, timed_out=True).reason)
        self.assertIn("stopped by the grader", run("[ RUN      ] S.t\n", timed_out=True).reason)
        self.assertIn("SIGSEGV", run("[ RUN      ] S.t\n", rc=-11).reason)
        self.assertIn("exit()", run("[ RUN      ] S.t\n", rc=0).reason)
        self.assertEqual(run("[ RUN      ] S.t\n[       OK ] S.t (0 ms)\n", rc=0).status, "passed")
        skip = run("[ RUN      ] S.t\nt.cpp:3: Skipped\nneeds two ranks\n[  SKIPPED ] S.t (0 ms)\n", rc=0)
        self.assertEqual((skip.status, skip.detail), ("skipped", "skipped here: needs two ranks"))
        failed = "[ RUN      ] S.t\nt.cpp:9: Failure\nExpected equality\n  a\n    Which is: 3\n[  FAILED  ] S.t (0 ms)\n"
        self.assertTrue(run(failed).reason.startswith("t.cpp:9: Expected equality"))
        # A test whose first case failed (the tcp backend saw mismatched sizes) and whose
        # second case then timed out in the harness (gloo waited): the first is the cause.
        both = ("[ RUN      ] S.t\n../../tests/harness/harness.cpp:315: Failure\nFailed\n"
                "rank 0 of 3 threw: rank 2 all-reduces 2 elements, rank 0 3\n"
                "Google Test trace:\n../../tests/x/t.cpp:185: tcp\n"
                "../../tests/harness/harness.cpp:308: Failure\nFailed\n"
                "rank 0 of 3: timed out after 15 s; rank 0 was still running\n"
                "Google Test trace:\n../../tests/x/t.cpp:185: gloo\n[  FAILED  ] S.t (15097 ms)\n")
        self.assertEqual(run(both).reason, "rank 0 of 3 threw: rank 2 all-reduces 2 elements, "
                         "rank 0 3 [tcp] (later in the test: timed out after 15 s)")
        # A timeout that is the first failure stays the reason.
        hang_first = ("[ RUN      ] S.t\nh.cpp:1: Failure\nrank 2 of 4: timed out after 30 s; "
                      "rank 2 was still in recv from rank 1\nt.cpp:9: Failure\nExpected "
                      "equality\n[  FAILED  ] S.t (0 ms)\n")
        self.assertIn("rank 2 was still in recv from rank 1", run(hang_first).reason)

    @wanted("units")
    def test_containment_kills_what_the_command_leaves(self):
        t0 = time.monotonic()
        r = run_contained(["sh", "-c", "sleep 300 & sleep 300 & echo started"], timeout_s=10)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(r.leftovers, 2)
        self.assertIn("started", r.output)
        r = run_contained(["sh", "-c", "sleep 300"], timeout_s=1)
        self.assertTrue(r.timed_out)
        self.assertLess(time.monotonic() - t0, 10)

    @wanted("units")
    def test_containment_stops_a_session_past_its_memory(self):
        # Two processes of one session, 150 MiB written each: over 200 MiB together only.
        leak = ("import time; b = bytearray(150 << 20); b[::4096] = b'x' * len(b[::4096]); "
                "time.sleep(30)")
        t0 = time.monotonic()
        r = run_contained(["sh", "-c", f"python3 -c \"{leak}\" & python3 -c \"{leak}\"; wait"],
                          timeout_s=60, memory_mib=200)
        self.assertTrue(r.memory_exceeded)
        self.assertFalse(r.timed_out)
        self.assertGreater(r.peak_mib, 200)
        self.assertLess(time.monotonic() - t0, 20)
        v = judge("S.t", r, 60, "", 200)
        self.assertEqual(v.status, "failed")
        self.assertIn("exceeded 200 MiB of memory", v.reason)
        fine = run_contained(["sh", "-c", f"python3 -c \"{leak.replace('30', '0.3')}\""],
                             timeout_s=60, memory_mib=200)
        self.assertFalse(fine.memory_exceeded)
        self.assertEqual(fine.returncode, 0)


class Checks:
    """What every grade.json must satisfy (a mixin for the cases below)."""

    def check_grade_json(self, data):
        for key in ("score", "execution_time", "output", "tests"):
            self.assertIn(key, data)
        self.assertIsInstance(data["execution_time"], int)
        self.assertTrue(data["tests"], "no tests graded")
        for t in data["tests"]:
            for key in ("name", "score", "max_score", "output", "visibility"):
                self.assertIn(key, t)
            self.assertIn(t["visibility"], VIS)
            self.assertLessEqual(t["score"], t["max_score"] + 1e-9)
        self.assertAlmostEqual(data["score"], sum(t["score"] for t in data["tests"]), places=1)


class Reference(Checks, unittest.TestCase):
    """solutions/ graded as if it were a learner's code, in build/solutions."""

    @wanted("reference")
    def test_reference_scores_full_points(self):
        lessons = [l.nn for l in lessons_with_tests(ROOT)]
        if not os.environ.get("GRADER_TEST_ALL"):
            lessons = lessons[:1]
        picked = [arg for nn in lessons for arg in ("--lesson", nn)]
        rc, data, secs, _ = grade("--impl", "solutions", "--build", str(REFERENCE),
                                  "--json", str(WORK / "reference.json"), *picked)
        self.check_grade_json(data)
        failed = [f"{t['name']}: {reason(t)[:200]}" for t in data["tests"] if t["status"] != "passed"]
        self.assertFalse(failed, "\n".join(failed))
        self.assertAlmostEqual(data["score"], sum(t["max_score"] for t in data["tests"]), places=2)
        self.assertEqual(rc, 0)
        print(f"reference: {data['score']} points, {secs:.0f} s")


class Stubs(Checks, unittest.TestCase):
    """Every lesson's untouched stubs, graded in the reference build (test_NN_stubs)."""

    @wanted("stubs")
    def test_stubs_score_zero_with_a_todo_per_test(self):
        extra = ["--memory-mib", "8192"] if SANITIZED else []
        rc, data, secs, _ = grade("--impl", "stubs", "--build", str(REFERENCE),
                                  "--json", str(WORK / "stubs.json"), "--timeout", "20",
                                  "-j", "8", *extra)
        self.check_grade_json(data)
        lessons = lessons_with_tests(ROOT)
        self.assertEqual({t["tags"][0] for t in data["tests"]}, {l.name for l in lessons})
        bad = []
        for t in data["tests"]:
            lesson = next(l for l in lessons if l.name == t["tags"][0])
            if t["max_score"] > 0 and (t["status"] == "passed" or not re.match(
                    rf"TODO lessons/{lesson.topic}/\S+:\d+ ", reason(t))):
                bad.append(f"{t['name']} ({t['status']}): {reason(t)[:200]}")
        self.assertFalse(bad, "tests worth points that do not stop at a TODO of their lesson "
                              "on the stubs (make them fail at a TODO, or give them 0 points "
                              "in tests/NN_topic/points.json):\n" + "\n".join(bad))
        self.assertEqual(data["score"], 0)
        self.assertEqual(rc, 1)
        print(f"stubs: {len(data['tests'])} tests, 0 points, {secs:.0f} s")


# The sabotage: (lesson, answer file) -> substitutions (pattern, replacement, count), applied
# to solutions/<lesson>/<file>. A pattern is a regular expression (re.S); it must match
# exactly `count` times.
RING_FLUSH = "link.flush();  // THE MISTAKE: the whole span leaves before we receive\n"
SABOTAGE = {
    ("01_ranks", "ranks.cpp"): [
        (r'#include "ranks.h"\n', '#include "ranks.h"\n#include "sabotage.h"\n', 1),
        # every rank function: fail as COURSE_SABOTAGE says ("deadlock": wait forever)
        (r"\n  // BEGIN SOLUTION", "\n  sabotage::strike(false);\n  // BEGIN SOLUTION", 4),
    ],
    ("01_ranks", "full_mesh.cpp"): [
        (r'#include "full_mesh.h"\n', '#include "full_mesh.h"\n#include "sabotage.h"\n', 1),
        (r"Millis timeout\) \{\n", "Millis timeout) {\n  sabotage::strike(true);\n", 1),
        # the classic deadlock of lessons/01_ranks/README.md: every rank accepts from
        # everyone before it dials, so nobody ever dials
        (r"  // BEGIN SOLUTION.*?// END SOLUTION\n", """\
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    Socket sock = listener.accept(timeout);
    try {
      const Hello hello = hello_accept(sock, token, name);
      mesh.peers[hello.rank] = std::move(sock);
    } catch (const ProtocolError&) {
      --peer;  // a stranger: keep waiting for the real peer
    }
  }
""", 1),
    ],
    ("05_ring_allreduce", "all_reduce_ring.cpp"): [
        # every post_send of the reduce-scatter flushed at once: a rank sends a whole
        # segment before it receives anything, which deadlocks once a segment no longer
        # fits in the socket buffers
        (r"(\n( *)link\.post_send\(first\.data\(\), first\.size_bytes\(\)\);\n)",
         r"\1\2" + RING_FLUSH, 1),
        (r"(\n( *)link\.post_send\(chunk\.data\(\), chunk\.size_bytes\(\)\);\n)(?=\s*\}\s*\}\s*// Phase 2)",
         r"\1\2" + RING_FLUSH, 1),
    ],
}


def sabotaged(topic, name):
    """The text of solutions/topic/name with its SABOTAGE substitutions applied."""
    text = (ROOT / "solutions" / topic / name).read_text()
    for pattern, replacement, count in SABOTAGE[(topic, name)]:
        text, n = re.subn(pattern, lambda m: m.expand(replacement), text, flags=re.S)
        if n != count:
            raise AssertionError(
                f"sabotage of solutions/{topic}/{name}: {pattern!r} matched {n} times, not "
                f"{count}; the reference changed: update SABOTAGE in {pathlib.Path(__file__).name}")
    return f"// {name}: sabotaged by {pathlib.Path(__file__).name} (SABOTAGE); not an example.\n" + text


def write_sabotage(topic):
    """Writes lesson `topic`'s sabotaged answer files (and sabotage/<topic>/*) into EXPORT."""
    for (t, name) in SABOTAGE:
        if t == topic:
            write_if_changed(sabotaged(t, name), EXPORT / "lessons" / t / name)
    if (HERE / "sabotage" / topic).is_dir():
        for f in (HERE / "sabotage" / topic).iterdir():
            copy_if_changed(f, EXPORT / "lessons" / topic / f.name)


def write_if_changed(text, dst):
    if not dst.exists() or dst.read_text() != text:
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(text)


def copy_if_changed(src, dst):
    if not dst.exists() or dst.read_bytes() != src.read_bytes():
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)


class LearnerCopy(Checks, unittest.TestCase):
    """A learner's copy (tools/export_learner.sh), built without solutions/, sabotaged.

    The cases run in the order of their names: lesson 01's answers are sabotaged
    (SABOTAGE) and lesson 02 gets its reference code; then lesson 05's ring.
    """

    @classmethod
    def setUpClass(cls):
        cls.other = next((l for l in lessons_with_tests(ROOT) if l.nn != "01"), None)
        if (ONLY and "sabotage" not in ONLY) or PREPARED:
            return
        export_copy(EXPORT)

    @staticmethod
    def break_lesson01():
        write_sabotage("01_ranks")
        # The instructor's knob: lesson 01's tests get 3 s each (hangs cost seconds here).
        points = json.loads((ROOT / "tests" / "01_ranks" / "points.json").read_text())
        points["timeout_s"] = 3
        (EXPORT / "tests" / "01_ranks" / "points.json").write_text(json.dumps(points, indent=2))
        if LearnerCopy.other:  # a finished lesson next to the broken one
            for f in (ROOT / "solutions" / LearnerCopy.other.topic).iterdir():
                copy_if_changed(f, EXPORT / "lessons" / LearnerCopy.other.topic / f.name)

    def sabotage(self, mode, *extra):
        self.break_lesson01()
        rc, data, secs, _ = grade("--root", str(EXPORT), "--json", str(WORK / f"sabotage-{mode}.json"),
                                  "--lesson", "01", *FAST, *extra,
                                  env={"COURSE_SABOTAGE": mode}, timeout=900)
        self.check_grade_json(data)
        self.assertEqual(rc, 1)
        mine = [t for t in data["tests"] if t["tags"] == ["lesson01"]]
        self.assertTrue(mine)
        self.assertEqual(sum(t["score"] for t in mine), 0, f"lesson 01 should score 0 when it does {mode}")
        leftovers = processes_of(EXPORT)
        self.assertFalse(leftovers, f"processes left running after grading {mode}")
        print(f"sabotage {mode}: lesson 01 scores 0, {secs:.0f} s")
        return data, mine

    def assert_reasons(self, tests, pattern):
        for t in tests:
            if t["max_score"] > 0:
                self.assertRegex(reason(t), pattern, t["name"])

    @wanted("sabotage")
    def test_1_deadlock(self):
        extra = ["--lesson", self.other.nn] if self.other else []
        data, mine = self.sabotage("deadlock", *extra)
        self.assert_reasons(mine, r"timed out after 3 s")
        if self.other:
            theirs = [t for t in data["tests"] if t["tags"] == [self.other.name]]
            self.assertTrue(theirs)
            failed = [f"{t['name']}: {reason(t)}" for t in theirs if t["status"] == "failed"]
            self.assertFalse(failed, f"{self.other.name} should be graded as usual")
            self.assertAlmostEqual(sum(t["score"] for t in theirs), sum(t["max_score"] for t in theirs))

    @wanted("sabotage")
    def test_2_infinite_loop(self):
        # Every test of lesson 01 now runs until its 3 s timeout, four at a time (FAST): by
        # 5 s at most eight of its eleven have started, so the budget stops the rest.
        _, mine = self.sabotage("loop", "--budget", "5")
        self.assert_reasons(mine, r"timed out after 3 s|time budget of 5 s")
        self.assertTrue(any("budget" in reason(t) for t in mine), "the lesson budget stops the rest")

    @wanted("sabotage")
    def test_3_segfault_and_hidden_tests(self):
        data, mine = self.sabotage("segfault", "--hidden", str(HERE / "hidden"))
        self.assert_reasons(mine, r"SIGSEGV")
        hidden = [t for t in data["tests"] if "hidden" in t["tags"]]
        self.assertEqual([(t["score"], t["visibility"]) for t in hidden], [(2, "after_published")])

    @wanted("sabotage")
    def test_4_exit_early(self):
        _, mine = self.sabotage("exit")
        self.assert_reasons(mine, r"exit")

    @wanted("sabotage")
    def test_5_ring_that_sends_before_it_receives(self):
        topic = "05_ring_allreduce"
        if not (ROOT / "solutions" / topic).is_dir() or not (EXPORT / "lessons" / topic).is_dir():
            self.skipTest("no lesson 05 here")
        write_sabotage(topic)
        try:
            rc, data, secs, _ = grade("--root", str(EXPORT), "--json", str(WORK / "sabotage-ring.json"),
                                      "--lesson", "05", *FAST, timeout=900)
        finally:  # the stubs again, as a learner's copy starts
            subprocess.run([sys.executable, str(ROOT / "tools" / "make_stubs.py"), "--quiet",
                            "--out", str(EXPORT), "--lesson", topic], cwd=ROOT, check=True)
        self.check_grade_json(data)
        self.assertEqual(rc, 1)
        large = [t for t in data["tests"] if "Large" in t["name"] and t["max_score"] > 0]
        self.assertTrue(large, "lesson 05 has no large-message case worth points")
        for t in large:
            self.assertEqual(t["score"], 0, f"{t['name']} passed a ring that deadlocks")
            self.assertIn("deadlock in all_reduce_ring", t["output"], t["name"])
        small = [t for t in data["tests"] if t not in large and t["max_score"] > 0]
        self.assertTrue(any(t["status"] == "passed" for t in small),
                        "the sabotaged ring is correct on small buffers: other tests should pass")
        print(f"sabotage ring: {len(large)} large case(s) score 0, {data['score']:.1f} points, {secs:.0f} s")

    @wanted("sabotage")
    def test_6_memory_past_the_limit(self):
        _, mine = self.sabotage("memory", "--memory-mib", "300")
        self.assert_reasons(mine, r"exceeded 300 MiB of memory")


class Planted(Checks, unittest.TestCase):
    """The mistakes of planted.py, each in a learner's copy of its own (PLANTED_EXPORT).

    Its own copy and build, so that it runs beside LearnerCopy (main below).
    """

    @classmethod
    def setUpClass(cls):
        if (ONLY and "planted" not in ONLY) or PREPARED:
            return
        export_copy(PLANTED_EXPORT)

    @wanted("planted")
    def test_planted_mistakes_score_at_most_half(self):
        """Each mistake of planted.py (it used to pass) scores at most half of its lesson."""
        from planted import PLANTED, PLANTED_WITH_ALL  # tests/grader/planted.py
        for (topic, name, what), subs in PLANTED.items():
            if not (ROOT / "solutions" / topic).is_dir():
                continue
            nn = topic[:2]
            if nn in PLANTED_WITH_ALL and not os.environ.get("GRADER_TEST_ALL"):
                continue  # GRADER_TEST_ALL=1 grades them (see the top of this file)
            for f in (ROOT / "solutions" / topic).iterdir():  # the lesson's other answers
                copy_if_changed(f, PLANTED_EXPORT / "lessons" / topic / f.name)
            src = ROOT / "solutions" / topic / name
            if not src.exists():  # a mistake in given code, beside the reference answers
                src = ROOT / "lessons" / topic / name
            text = src.read_text()
            for pattern, replacement, count in subs:
                text, n = re.subn(pattern, lambda _: replacement, text, flags=re.S)
                self.assertEqual(n, count, f"planted '{what}': {pattern!r} matched {n} times; "
                                           f"the reference changed: update tests/grader/planted.py")
            write_if_changed(text, PLANTED_EXPORT / "lessons" / topic / name)
            try:
                _, data, secs, _ = grade("--root", str(PLANTED_EXPORT), "--json",
                                         str(WORK / f"planted-{nn}.json"), "--lesson", nn, *FAST,
                                         timeout=900)
            finally:  # the stubs and given code again, as a learner's copy starts
                subprocess.run([sys.executable, str(ROOT / "tools" / "make_stubs.py"), "--quiet",
                                "--out", str(PLANTED_EXPORT), "--lesson", topic], cwd=ROOT, check=True)
                if src.parent.parent.name == "lessons":
                    copy_if_changed(src, PLANTED_EXPORT / "lessons" / topic / name)
            self.check_grade_json(data)
            mine = [t for t in data["tests"] if t["tags"] == [f"lesson{nn}"]]
            total = sum(t["max_score"] for t in mine)
            score = sum(t["score"] for t in mine)
            self.assertLessEqual(score, total / 2, f"lesson {nn} with '{what}' scores {score} of {total}")
            print(f"planted '{what}': lesson {nn} scores {score:.1f} of {total:.0f}, {secs:.0f} s")
            TIMES["planted"].append({"lesson": nn, "what": what, "score": score, "total": total,
                                     "seconds": round(secs, 1)})


class TimedResult(unittest.TextTestResult):
    """Records each test's seconds in WORK/times.json (TIMES_FILE), for tools/profile_test.py."""

    def startTest(self, test):
        self._started, self._skipped = time.monotonic(), False
        super().startTest(test)

    def addSkip(self, test, reason):
        self._skipped = True  # another half runs it (GRADER_TEST_ONLY)
        super().addSkip(test, reason)

    def stopTest(self, test):
        super().stopTest(test)
        if self._skipped:
            return
        TIMES["tests"][test.id().split(".", 1)[-1]] = round(time.monotonic() - self._started, 1)
        WORK.mkdir(parents=True, exist_ok=True)
        TIMES_FILE.write_text(json.dumps(TIMES, indent=1))


def run_halves_at_once():
    """Every part, as two processes of this file at once (HALVES), each with its copy.

    Most of a sabotaged or planted grading is spent waiting (for a timeout, for a peer
    that never comes), and each half grades one copy after the other: side by side they
    fill each other's waits. The copies are exported here first, one after the other, as
    both exports build in the one reference build tree. Each half's output is printed
    whole, after both have ended; the times of both go to WORK/times.json.
    """
    WORK.mkdir(parents=True, exist_ok=True)
    export_copy(EXPORT)
    export_copy(PLANTED_EXPORT)
    started = time.monotonic()
    runs = []
    for n, half in enumerate(HALVES):
        log = WORK / f"half-{n}.log"
        env = dict(os.environ, GRADER_TEST_ONLY=",".join(sorted(half)), GRADER_TEST_PREPARED="1",
                   GRADER_TEST_TIMES=f"times-{n}.json")
        with open(log, "w") as out:
            runs.append((half, log, subprocess.Popen([sys.executable, __file__, *sys.argv[1:]],
                                                     env=env, stdout=out, stderr=subprocess.STDOUT)))
    failed = []
    merged = {"tests": {}, "planted": []}
    for n, (half, log, proc) in enumerate(runs):
        rc = proc.wait()
        print(f"== {', '.join(sorted(half))} (exit {rc}) ==\n{log.read_text()}", flush=True)
        if rc != 0:
            failed.append(",".join(sorted(half)))
        times = WORK / f"times-{n}.json"
        if times.exists():
            part = json.loads(times.read_text())
            merged["tests"].update(part["tests"])
            merged["planted"] += part["planted"]
    (WORK / "times.json").write_text(json.dumps(merged, indent=1))
    print(f"the grader's self-test: {len(merged['tests'])} tests in "
          f"{time.monotonic() - started:.0f} s, {len(HALVES)} halves at once"
          + (f"; FAILED: {'; '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    if not ONLY and not os.environ.get("GRADER_TEST_SERIAL"):
        sys.exit(run_halves_at_once())
    unknown = ONLY - set(PARTS)
    if unknown:
        sys.exit(f"GRADER_TEST_ONLY: unknown part(s) {', '.join(sorted(unknown))}: "
                 f"pick from {','.join(PARTS)}")
    unittest.main(verbosity=2, testRunner=unittest.TextTestRunner(resultclass=TimedResult,
                                                                  verbosity=2))
