#!/usr/bin/env python3
"""classroom.py: writes .github/classroom/autograding.json from the lessons and their points.

GitHub Classroom runs each entry's `run` command and awards the entry's points when it
exits 0. There is one entry per lesson with tests: `make grade-lessonNN`, which exits 0
only when every test of the lesson passes, worth the lesson's "total" from
tests/NN_topic/points.json, with a timeout (minutes) that covers the build and the
lesson's time budget. Partial credit per test is in grade.json (Gradescope), not here.

    python3 tools/classroom.py           write the file
    python3 tools/classroom.py --check   exit 1 when the file differs (make test runs this)

What this is not: the Classroom workflow itself; docs/instructors.md shows that.
"""
import argparse
import json
import math
import pathlib
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the course tree
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from grading import lessons as lessonlib  # noqa: E402
from grading import points as pointslib  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = pathlib.Path(".github/classroom/autograding.json")
BUILD_MINUTES = 10  # configure and compile the lesson's tests on a cold runner
SETUP = "make setup || sudo make setup"


def entries(root: pathlib.Path):
    """One autograding entry per lesson that has tests. Raises PointsError."""
    out = []
    for lesson in lessonlib.find_lessons(root):
        folder = root / "tests" / lesson.topic
        if not lessonlib.test_sources(folder):
            continue
        pf = pointslib.load(folder / "points.json")
        if pf.total is None:
            raise pointslib.PointsError(
                f"{folder / 'points.json'}: needs a \"total\" (the lesson's points) for "
                f"autograding.json; see docs/instructors.md")
        total = int(pf.total) if float(pf.total).is_integer() else pf.total
        out.append({
            "name": f"{lesson.name} {lesson.title}",
            "setup": SETUP,
            "run": f"make grade-{lesson.name}",
            "input": "",
            "output": "",
            "comparison": "included",
            "timeout": BUILD_MINUTES + math.ceil(pf.budget_s / 60),
            "points": total,
        })
    return out


def render(root: pathlib.Path) -> str:
    return json.dumps({"tests": entries(root)}, indent=2) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="report drift, write nothing")
    p.add_argument("--root", type=pathlib.Path, default=ROOT)
    args = p.parse_args()
    root = args.root.resolve()
    try:
        text = render(root)
    except pointslib.PointsError as e:
        print(f"classroom: {e}", file=sys.stderr)
        return 1
    path = root / TARGET
    current = path.read_text() if path.is_file() else None
    if args.check:
        if current != text:
            print(f"classroom: {TARGET} is out of date with the lessons and their points.json; "
                  f"run `python3 tools/classroom.py` (or `make classroom`)", file=sys.stderr)
            return 1
        print(f"classroom: {TARGET} matches the lessons ({text.count('make grade-')} entries)")
        return 0
    if current != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"classroom: wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
