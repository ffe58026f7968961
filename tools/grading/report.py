"""report.py: the score table a learner reads and grade.json that a machine reads.

grade.json follows Gradescope's results.json: top-level score, execution_time, output,
visibility, stdout_visibility, tests[] (name, number, score, max_score, status, output,
tags, visibility), and extra_data with one summary per lesson. Gradescope reads it as
/autograder/results/results.json (`tools/grade.py --json /autograder/results/results.json`).

What this is not: a results database. One run, one file.
"""
import json
import pathlib
from dataclasses import dataclass, field
from typing import List

from .lessons import Lesson


@dataclass
class TestScore:
    name: str  # "Ranks.TwoNodesOfFour", or "(build)" when nothing could run
    hidden: bool
    max_score: float
    score: float
    status: str  # "passed", "failed", "skipped" (worth nothing here) or "not run"
    reason: str  # one line; empty when passed
    detail: str
    visibility: str
    elapsed: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass
class LessonScore:
    lesson: Lesson
    tests: List[TestScore] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.max_score for t in self.tests)

    @property
    def runnable(self) -> List[TestScore]:
        """The tests that count: not a build failure, not skipped here."""
        return [t for t in self.tests if t.name != "(build)" and t.status != "skipped"]

    def first_problem(self) -> str:
        """The first visible failure, for the table (hidden tests stay unnamed)."""
        for t in self.tests:
            if t.status in ("failed", "not run") and not t.hidden:
                return t.reason if t.name == "(build)" else f"{t.name}: {t.reason}"
        failed = sum(t.status in ("failed", "not run") for t in self.tests)
        return f"{failed} hidden test(s) failed" if failed else ""


def fmt(x: float) -> str:
    return f"{x:.0f}" if abs(x - round(x)) < 1e-6 else f"{x:.2f}"


def table(results: List[LessonScore], width: int = 100) -> str:
    rows = [("lesson", "passed", "points", "first problem")]
    for r in results:
        n = len(r.runnable)
        passed = f"{sum(t.passed for t in r.runnable)}/{n}" if n else "-"
        rows.append((f"{r.lesson.nn} {r.lesson.title}", passed,
                     f"{fmt(r.score)}/{fmt(r.max_score)}", r.first_problem()))
    tests = [t for r in results for t in r.runnable]
    rows.append(("total", f"{sum(t.passed for t in tests)}/{len(tests)}",
                 f"{fmt(sum(r.score for r in results))}/{fmt(sum(r.max_score for r in results))}", ""))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    lines = []
    for i, (a, b, c, d) in enumerate(rows):
        line = f"{a:<{w0}}  {b:>{w1}}  {c:>{w2}}  {d}".rstrip()
        lines.append(line[:width] + ("..." if len(line) > width else ""))
        if i == 0 or i == len(rows) - 2:
            lines.append("-" * min(width, max(len(l) for l in lines)))
    return "\n".join(lines)


def grade_json(results: List[LessonScore], elapsed: float, impl: str, summary: str) -> dict:
    tests = []
    for r in results:
        for i, t in enumerate(r.tests, start=1):
            label = "[hidden] " if t.hidden else ""
            tests.append({
                "name": f"{r.lesson.name} {r.lesson.title}: {label}{t.name}",
                "number": f"{r.lesson.nn}.{i}",
                "score": round(t.score, 4),
                "max_score": round(t.max_score, 4),
                "status": "failed" if t.status in ("failed", "not run") else "passed",
                "output": t.detail if t.detail else t.reason,
                "tags": [r.lesson.name] + (["hidden"] if t.hidden else []),
                "visibility": t.visibility,
            })
    return {
        "score": round(sum(r.score for r in results), 2),
        "execution_time": int(round(elapsed)),
        "output": summary,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "impl": impl,
            "lessons": [{
                "lesson": r.lesson.topic,
                "tests": len(r.runnable),
                "passed": sum(t.passed for t in r.runnable),
                "score": round(r.score, 2),
                "max_score": round(r.max_score, 2),
                "seconds": round(r.elapsed, 1),
                "first_problem": r.first_problem(),
            } for r in results],
        },
    }


def write_json(path: pathlib.Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)
