#!/usr/bin/env python3
"""lint_files.py: the C++ files `make lint` gives clang-tidy, one a line.

    python3 tools/lint_files.py BUILD REGEX

Every .cpp of BUILD/compile_commands.json under this tree whose path relative to the tree
matches REGEX (a Python regular expression, matched from the start), once each, except
the stubs: lessons/NN_topic/f.cpp where solutions/NN_topic/f.cpp exists is generated from
that answer file (tools/make_stubs.py), which is checked itself. In a tree where someone
is working through the course, those files hold their answers in progress: not lint's
business either.

What this is not: a build. The files are those the last configure of BUILD listed.
"""
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def lint_files(build, regex):
    """The paths (relative to the tree, sorted) of the files to lint; see the top."""
    pattern = re.compile(regex)
    database = pathlib.Path(build) / "compile_commands.json"
    if not database.exists():
        sys.exit(f"lint_files: {database} is missing; configure {build} first")
    files = set()
    for entry in json.loads(database.read_text()):
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


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: lint_files.py BUILD REGEX")
    print("\n".join(lint_files(sys.argv[1], sys.argv[2])))


if __name__ == "__main__":
    main()
