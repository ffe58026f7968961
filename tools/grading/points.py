"""points.py: a lesson's points file, tests/NN_topic/points.json, which instructors edit.

    {
      "total": 10,                  the lesson's worth; test weights are scaled to add up
                                    to it (omit it and each weight is the test's points)
      "default_points": 1,          weight of a test no rule below names
      "points": {"Ranks.*": 2},     weight by exact test name or glob (fnmatch); an exact
                                    name wins, then the first matching glob in file order
      "timeout_s": 30,              seconds each test may run (COURSE_TEST_TIMEOUT_S)
      "timeouts": {"WorldSizes/*": 60},   per-test timeout by name or glob
      "budget_s": 300,              the lesson stops starting tests after this many seconds
                                    (so an infinite loop costs minutes, not hours)
      "memory_mib": 2048,           resident memory each test may use, all its processes
                                    together; past it the test is stopped and scores 0
      "default_visibility": "visible",    Gradescope visibility of each test
      "visibility": {"Foo.*": "after_published"}
    }

Test names are GoogleTest's "Suite.Name" ("WorldSizes/FullMesh.EveryPairIsConnectedBothWays/3").
A test worth 0 points is not run (such tests check given code: they pass on the stubs).
A missing file means 1 point per test and the defaults above. The same format serves
hidden tests (HIDDEN/NN_topic/points.json), whose default visibility is "hidden".
"""
import fnmatch
import json
import pathlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional

KEYS = {"about", "total", "default_points", "points", "timeout_s", "timeouts", "budget_s", "memory_mib",
        "default_visibility", "visibility"}
VISIBILITIES = {"visible", "hidden", "after_due_date", "after_published"}
DEFAULT_TIMEOUT_S = 30
DEFAULT_BUDGET_S = 300
DEFAULT_MEMORY_MIB = 2048  # per test, all its processes together


class PointsError(Exception):
    """A points.json that cannot be used as written (bad JSON, unknown key, bad value)."""


def _lookup(rules: Dict[str, object], name: str, fallback):
    if name in rules:
        return rules[name]
    for pattern, value in rules.items():
        if fnmatch.fnmatchcase(name, pattern):
            return value
    return fallback


@dataclass
class PointsFile:
    path: Optional[pathlib.Path] = None  # None: no file, every default
    total: Optional[float] = None
    default_points: float = 1
    points: Dict[str, float] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    timeouts: Dict[str, float] = field(default_factory=dict)
    budget_s: float = DEFAULT_BUDGET_S
    memory_mib: float = DEFAULT_MEMORY_MIB
    default_visibility: str = "visible"
    visibility: Dict[str, str] = field(default_factory=dict)

    def weight(self, test: str) -> float:
        return float(_lookup(self.points, test, self.default_points))

    def timeout(self, test: str) -> float:
        return float(_lookup(self.timeouts, test, self.timeout_s))

    def visibility_of(self, test: str) -> str:
        return str(_lookup(self.visibility, test, self.default_visibility))

    def max_scores(self, tests: List[str]) -> Dict[str, float]:
        """Each test's max_score: its weight, scaled so the tests add up to `total`."""
        weights = {t: self.weight(t) for t in tests}
        if self.total is None:
            return weights
        whole = sum(weights.values())
        if whole <= 0:
            return {t: 0.0 for t in tests}
        return {t: self.total * w / whole for t, w in weights.items()}


def load(path: pathlib.Path, default_visibility: str = "visible") -> PointsFile:
    """Reads a points file; a missing one gives the defaults. Raises PointsError."""
    if not path.is_file():
        return PointsFile(default_visibility=default_visibility)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise PointsError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(data, dict):
        raise PointsError(f"{path}: expected a JSON object")
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise PointsError(f"{path}: unknown key(s) {', '.join(unknown)} "
                          f"(known: {', '.join(sorted(KEYS))})")
    pf = PointsFile(path=path, default_visibility=default_visibility)
    try:
        if data.get("total") is not None:
            pf.total = float(data["total"])
        pf.default_points = float(data.get("default_points", pf.default_points))
        pf.points = {str(k): float(v) for k, v in data.get("points", {}).items()}
        pf.timeout_s = float(data.get("timeout_s", pf.timeout_s))
        pf.timeouts = {str(k): float(v) for k, v in data.get("timeouts", {}).items()}
        pf.budget_s = float(data.get("budget_s", pf.budget_s))
        pf.memory_mib = float(data.get("memory_mib", pf.memory_mib))
        pf.default_visibility = str(data.get("default_visibility", pf.default_visibility))
        pf.visibility = {str(k): str(v) for k, v in data.get("visibility", {}).items()}
    except (TypeError, ValueError, AttributeError) as e:
        raise PointsError(f"{path}: {e}") from e
    for v in [pf.default_visibility, *pf.visibility.values()]:
        if v not in VISIBILITIES:
            raise PointsError(f"{path}: visibility '{v}' is not one of {sorted(VISIBILITIES)}")
    if pf.timeout_s <= 0 or pf.budget_s <= 0 or any(t <= 0 for t in pf.timeouts.values()):
        raise PointsError(f"{path}: timeouts and budget_s must be positive")
    if pf.memory_mib <= 0:
        raise PointsError(f"{path}: memory_mib must be positive")
    if any(w < 0 for w in [pf.default_points, *pf.points.values()]) or (pf.total or 0) < 0:
        raise PointsError(f"{path}: points must not be negative")
    return pf
