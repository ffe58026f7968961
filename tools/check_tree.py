#!/usr/bin/env python3
"""check_tree.py: the shape of the tree that `make lint` and `make test` hold it to.

    python3 tools/check_tree.py            exit 1 naming every file that breaks a rule

Three rules, from docs/maintainers.md ("Folders") and docs/architecture.md ("The driver"):

1. common/'s rooms are layered. A file of common/ includes headers of its own room and of
   the rooms below it, never of a room above: the allowed edges are ALLOWED below, the
   same table docs/architecture.md draws. Every folder of common/ is on the include path,
   so a header is named by its file name alone; this check finds which room holds it.
   common/ never includes lesson code at all.
2. No source file of common/, lessons/ or solutions/ is longer than MAX_LINES lines: a
   lesson file a learner reads in one sitting, and a given file that wants splitting
   before it grows further (STYLE.md).
3. The flags every driver shares are declared once, by run_driver (common/runtime/
   driver.cpp): no file of lessons/ or solutions/ declares DRIVER_FLAGS itself, so every
   bench takes the same --csv and every distributed lesson the same --np, --backend and
   --link.

What this is not: a compiler. It reads `#include "..."` lines; an include hidden behind a
macro is not seen (the course has none).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX_LINES = 450
SOURCES = (".h", ".cpp", ".cu")

# Which rooms each room of common/ may include (besides itself), lowest first:
#   runtime   errors, sockets, the store, the launcher, the driver, flags, the link's spec
#   tensor    float32 tensors and their kernels
#   comm      the process-group interface, Work, the tcp backend, links, argument checks
#   data      data files, data sets, safetensors
#   check     serial oracles and result checks that drivers and tests compare against
#   backends  Gloo and NCCL, and the factory that builds any backend by name
#   bench     tables, the collective benchmark, pictures
ALLOWED = {
    "runtime": set(),
    "tensor": {"runtime"},
    "comm": {"runtime"},
    "data": {"runtime", "tensor"},
    "check": {"runtime", "comm"},
    "backends": {"runtime", "tensor", "comm", "check"},
    "bench": {"runtime", "comm", "check"},
}
DRIVER_FLAGS = ("--np", "--backend", "--bench", "--csv", "--link")
DECLARES = re.compile(r'\.(?:option|flag)\(\s*"(--[a-z-]+)"')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def room_of_header():
    """Header file name -> the room of common/ that holds it."""
    rooms = {}
    for room in ALLOWED:
        for path in (ROOT / "common" / room).glob("*.h"):
            rooms[path.name] = room
    return rooms


def layer_problems():
    rooms = room_of_header()
    lesson_headers = {p.name for p in (ROOT / "lessons").glob("*/*.h")}
    problems = []
    for folder in sorted((ROOT / "common").iterdir()):
        if not folder.is_dir():
            continue
        room = folder.name
        if room not in ALLOWED:
            problems.append(f"common/{room}/: a room that tools/check_tree.py's ALLOWED does "
                            "not place; add it there and to docs/architecture.md")
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix not in SOURCES:
                continue
            text = path.read_text(errors="replace")
            for match in INCLUDE.finditer(text):
                name = pathlib.PurePath(match.group(1)).name
                line = text.count("\n", 0, match.start()) + 1
                where = f"common/{room}/{path.name}:{line}"
                if name in rooms:
                    target = rooms[name]
                    if target != room and target not in ALLOWED[room]:
                        problems.append(
                            f"{where} includes {name} from common/{target}/, a room above "
                            f"{room}/ ({room}/ may include: "
                            f"{', '.join(sorted(ALLOWED[room])) or 'nothing else'}); move "
                            "the piece it needs down, or the file up")
                elif name in lesson_headers:
                    problems.append(f"{where} includes lesson code ({name}): common/ never "
                                    "does; give the lesson a seam to fill (install_lessonNN)")
    return problems


def length_problems():
    problems = []
    for top in ("common", "lessons", "solutions"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in SOURCES and path.is_file():
                lines = path.read_text(errors="replace").count("\n")
                if lines > MAX_LINES:
                    problems.append(f"{path.relative_to(ROOT)}: {lines} lines, more than "
                                    f"{MAX_LINES}: split it by concept, each part named for "
                                    "what it holds")
    return problems


def driver_flag_problems():
    problems = []
    for top in ("lessons", "solutions"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in SOURCES or not path.is_file():
                continue
            text = path.read_text(errors="replace")
            for match in DECLARES.finditer(text):
                if match.group(1) in DRIVER_FLAGS:
                    line = text.count("\n", 0, match.start()) + 1
                    problems.append(f"{path.relative_to(ROOT)}:{line} declares {match.group(1)}, "
                                    "which run_driver declares for every driver (driver.h): "
                                    "read it from DriverContext instead")
    return problems


def main():
    problems = layer_problems() + length_problems() + driver_flag_problems()
    for problem in problems:
        print(f"check_tree: {problem}")
    if problems:
        print(f"check_tree: {len(problems)} problem(s) (rules: tools/check_tree.py)")
        return 1
    print("check_tree: common/'s rooms include only downwards; no source file over "
          f"{MAX_LINES} lines; the driver's flags declared by the driver alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
