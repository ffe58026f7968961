"""lessons.py: which lessons exist, and where their tests live.

A lesson is any directory solutions/NN_topic or lessons/NN_topic (a learner's copy made
by tools/export_learner.sh has no solutions/). Its visible tests are tests/NN_topic/*.cpp
(CMake target test_NN); an instructor's hidden tests are HIDDEN/NN_topic/*.cpp (target
test_NN_hidden, see cmake/Lessons.cmake and docs/instructors.md).
"""
import pathlib
import re
from dataclasses import dataclass
from typing import List, Optional

LESSON_DIR = re.compile(r"^(\d\d)_[A-Za-z0-9_]+$")


@dataclass
class Lesson:
    nn: str  # "05"
    topic: str  # "05_ring_allreduce"

    @property
    def name(self) -> str:
        """"lesson05", as in `make grade-lesson05` and the CTest label."""
        return "lesson" + self.nn

    @property
    def title(self) -> str:
        """"ring_allreduce": the topic without its number."""
        return self.topic[3:]


def find_lessons(root: pathlib.Path) -> List[Lesson]:
    """Every lesson directory under solutions/ or lessons/, in numeric order."""
    topics = set()
    for tree in ("solutions", "lessons"):
        base = root / tree
        if base.is_dir():
            topics.update(p.name for p in base.iterdir() if p.is_dir() and LESSON_DIR.match(p.name))
    return [Lesson(t[:2], t) for t in sorted(topics)]


def select(lessons: List[Lesson], wanted: List[str]) -> List[Lesson]:
    """The lessons named by `wanted` ("5", "05", "lesson05", "05_ring_allreduce")."""
    if not wanted:
        return lessons
    picked = []
    for w in wanted:
        key = w.removeprefix("lesson")
        match = [l for l in lessons if l.topic == key or (key.isdigit() and int(key) == int(l.nn))]
        if not match:
            known = ", ".join(l.nn for l in lessons) or "none"
            raise SystemExit(f"grade: no lesson '{w}' (lessons here: {known})")
        picked.extend(m for m in match if m not in picked)
    return sorted(picked, key=lambda l: l.nn)


def test_sources(folder: pathlib.Path) -> List[pathlib.Path]:
    """The test sources in one folder (tests/NN_topic or HIDDEN/NN_topic)."""
    return sorted(folder.glob("*.cpp")) if folder.is_dir() else []


def hidden_folder(hidden: Optional[pathlib.Path], lesson: Lesson) -> Optional[pathlib.Path]:
    """HIDDEN/NN_topic when it holds test sources, else None."""
    if hidden is None:
        return None
    folder = hidden / lesson.topic
    return folder if test_sources(folder) else None


def parse_gtest_list(text: str) -> List[str]:
    """Test names ("Suite.Name") from `--gtest_list_tests` output, in order.

    The listing looks like
        Running main() from gtest_main.cc      (noise before the first suite is skipped)
        WorldSizes/FullMesh.
          EveryPairIsConnectedBothWays/0  # GetParam() = 1
    Disabled tests (DISABLED_ prefix) are left out: GoogleTest would not run them.
    """
    names, suite = [], None
    for line in text.splitlines():
        m = re.match(r"^(\S+)\.\s*(#.*)?$", line)
        if m:
            suite = m.group(1)
            continue
        m = re.match(r"^  (\S+)\s*(#.*)?$", line)
        if m and suite:
            name = m.group(1)
            if not (name.startswith("DISABLED_") or suite.startswith("DISABLED_")
                    or "/DISABLED_" in suite):
                names.append(f"{suite}.{name}")
    return names
