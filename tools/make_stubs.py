#!/usr/bin/env python3
"""make_stubs.py: generates the learner's exercise files in lessons/ from solutions/.

The reference solutions are the source of truth. In every solutions/NN_topic/*.cpp (or
*.cu) file, a region

    // BEGIN SOLUTION: <one-line hint for the learner>
    ...reference code...
    // END SOLUTION

becomes, in lessons/NN_topic/ (same file name):
  - inside a function (the marker is indented): a TODO comment with the hint and
    COURSE_TODO(), which throws "not implemented: lessons/NN_topic/file.cpp:LINE";
  - at file scope (the marker starts in column 0): the TODO comment alone.
A local variable or a file-scope function that the solution uses only inside its regions
is unused in the stub; the stub's declaration gets `[[maybe_unused]]`, so the stub
compiles without warnings and the solution carries no attribute for the stub's sake.
solutions/NN_topic/ holds only files with at least one region (the answer key); everything
else of a lesson (headers, given code, README.md, main.cpp) lives once, in lessons/NN_topic/,
and the reference build takes it from there. A file in solutions/ without a region is an
error: it belongs in lessons/ alone.

    python3 tools/make_stubs.py           write lessons/ from solutions/
    python3 tools/make_stubs.py --check   exit 1, listing the files, if lessons/ differs
    python3 tools/make_stubs.py --out DIR [--lesson NN_topic]
                                          write the stubs under DIR/lessons/ instead (the
                                          build's untouched stubs, whatever lessons/ holds)

--check is the maintainers' drift check (CI, `make check-stubs`): in a tree where someone
is working through the course, lessons/ holds their answers and differs, as it should.

What this is not: a C++ parser. Markers are whole lines; regions do not nest.
A hint is the marker's line alone, so it must fit there (clang-format's 100 columns): a
`//` line right after a hinted BEGIN SOLUTION, at its indent, that reads as the hint going
on is an error naming the line: clang-format wraps a long hint there, and the stub would
keep half a sentence. It reads so when it does not start with a capital letter; a comment
that opens the region is a sentence of its own and starts with one.
"""
import argparse
import difflib
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BEGIN = re.compile(r"^(?P<indent>[ \t]*)// BEGIN SOLUTION(?::\s*(?P<hint>.*))?$")
END = re.compile(r"^[ \t]*// END SOLUTION\s*$")
STUBBED_SUFFIXES = {".cpp", ".cu"}
COMMENT = re.compile(r"^(?P<indent>[ \t]*)//\s*(?P<text>.*)$")
COLUMN_LIMIT = 100  # .clang-format's ColumnLimit: where a long hint wraps


# Declarations the stub may leave unused: `  const int v = ...` inside a function, or a
# function definition starting in column 0, static or in `namespace {` (a file's helper).
LOCAL_DECL = re.compile(r"^(?P<indent>[ \t]+)(?P<decl>(?:const\s+)?[\w:<>]+\s+(?P<name>\w+)\s*=[^=])")
# A range-for over structured bindings, `for (const auto& [i, grad] : ...)`: unused when
# none of its names is, and the attribute goes after `for (`.
RANGE_FOR_BINDING = re.compile(r"^(?P<indent>[ \t]+for \()(?:\[\[maybe_unused\]\]\s*)?(?:const\s+)?auto\s*&?\s*\[(?P<names>[\w\s,]+)\]")
FUNCTION_DEF = re.compile(r"^(?P<decl>(?:static\s+)?[\w:][\w:<>,\s]*?[\s*&](?P<name>\w+)\()")
STRING_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//.*$')


class MarkerError(Exception):
    pass


def wraps_hint(begin_line, next_line):
    """True when next_line reads as the rest of the hint on begin_line (a BEGIN SOLUTION
    with a hint): a `//` comment at the marker's indent, not a marker itself, that does not
    start with a capital letter."""
    begin, comment = BEGIN.match(begin_line), COMMENT.match(next_line)
    if not (begin and begin.group("hint") and comment and comment.group("text")):
        return False
    if comment.group("indent") != begin.group("indent") or BEGIN.match(next_line) or END.match(next_line):
        return False
    return not comment.group("text")[0].isupper()


def unbound(line):
    """The line without the names a range-for binds (`for (auto& [a, b] :` keeps `for (`)."""
    binding = RANGE_FOR_BINDING.match(line)
    return line[:binding.end("indent")] + line[binding.end():] if binding else line


def mark_unused(out, declarations, region_text):
    """Prefixes with [[maybe_unused]] each declaration (index into out, its names, where
    the attribute goes) whose names the regions used and the stub's code (comments and
    strings aside, the declaring line too for a binding) no longer does."""
    for index, names, at in declarations:
        words = [re.compile(rf"\b{re.escape(name)}\b") for name in names]
        if not any(word.search(region_text) for word in words):
            continue
        # A binding's names count as used only past the brackets (another loop may bind
        # the same names); so does its own line.
        code = [unbound(STRING_OR_COMMENT.sub("", line)) for i, line in enumerate(out)
                if i != index]
        if len(names) > 1:
            code.append(unbound(STRING_OR_COMMENT.sub("", out[index])))
        if any(word.search(line) for word in words for line in code):
            continue
        line = out[index]
        out[index] = f"{line[:at]}[[maybe_unused]] {line[at:]}"


def stub_text(path: pathlib.Path, lesson: str) -> str:
    """Returns the stub version of one solution file."""
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path  # for errors
    out = []
    declarations = []  # (index into out, name) of lines outside the regions
    region_lines = []
    anonymous = False  # inside `namespace {`
    region = None  # (indent, hint, start line) while inside a region
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines, start=1):
        begin = BEGIN.match(line)
        if begin and number < len(lines) and wraps_hint(line, lines[number]):
            raise MarkerError(f"{where}:{number + 1}: the hint of the BEGIN SOLUTION above goes "
                              f"on here, but the stub keeps the marker's line alone: shorten "
                              f"the hint to fit that line ({COLUMN_LIMIT} columns), or start "
                              f"this comment with a capital if it is not part of the hint")
        if begin:
            if region:
                raise MarkerError(f"{where}:{number}: BEGIN SOLUTION inside the region "
                                  f"opened at line {region[2]} (regions do not nest)")
            hint = (begin.group("hint") or "write this part").strip()
            region = (begin.group("indent"), hint, number)
            continue
        if END.match(line):
            if not region:
                raise MarkerError(f"{where}:{number}: END SOLUTION without BEGIN SOLUTION")
            indent, hint, _ = region
            out.append(f"{indent}// TODO({lesson}): {hint}")
            if indent:
                out.append(f"{indent}COURSE_TODO();")
            region = None
            continue
        if region:
            region_lines.append(line)
            continue
        if line.startswith("namespace {"):
            anonymous = True
        elif line.startswith("}  // namespace") and anonymous:
            anonymous = False
        function = FUNCTION_DEF.match(line)
        if function and (line.rstrip().endswith(";") or
                         not (anonymous or line.startswith("static "))):
            function = None  # a declaration, or a function other files may call
        decl = LOCAL_DECL.match(line) or function
        binding = RANGE_FOR_BINDING.match(line)
        if "[[maybe_unused]]" in line:
            pass
        elif binding:
            names = tuple(n.strip() for n in binding.group("names").split(","))
            declarations.append((len(out), names, binding.end("indent")))
        elif decl:
            at = len(line) - len(line.lstrip())
            declarations.append((len(out), (decl.group("name"),), at))
        out.append(line)
    if region:
        raise MarkerError(f"{where}:{region[2]}: BEGIN SOLUTION is never closed")
    mark_unused(out, declarations, "\n".join(STRING_OR_COMMENT.sub("", l) for l in region_lines))
    return "\n".join(out) + "\n"


def expected_files(out=ROOT, only=None):
    """Yields (lessons path under out, text) for every generated file (of lesson `only`)."""
    for lesson_dir in sorted((ROOT / "solutions").glob("[0-9][0-9]_*")):
        if not lesson_dir.is_dir() or (only and lesson_dir.name != only):
            continue
        lesson = "lesson" + lesson_dir.name[:2]
        for src in sorted(p for p in lesson_dir.rglob("*") if p.is_file()):
            rel = src.relative_to(ROOT / "solutions")
            if src.suffix not in STUBBED_SUFFIXES or not any(BEGIN.match(l) for l in src.read_text().splitlines()):
                raise MarkerError(f"{src.relative_to(ROOT)} holds no BEGIN SOLUTION region: "
                                  f"a file without an answer lives once, in lessons/{rel}")
            yield out / "lessons" / rel, stub_text(src, lesson)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report drift, write nothing")
    parser.add_argument("--out", type=pathlib.Path, help="write DIR/lessons/... instead of lessons/")
    parser.add_argument("--lesson", help="only this lesson (NN_topic), with --out")
    parser.add_argument("-q", "--quiet", action="store_true", help="say nothing when all is well")
    args = parser.parse_args()
    out = args.out.resolve() if args.out else ROOT
    try:
        expected = dict(expected_files(out, args.lesson))
    except MarkerError as e:
        print(f"make_stubs: {e}", file=sys.stderr)
        return 1
    drift = []
    for path, text in expected.items():
        current = path.read_text() if path.exists() else None
        if current == text:
            continue
        if args.check:
            drift.append(path)
            diff = difflib.unified_diff((current or "").splitlines(), text.splitlines(),
                                        f"{path.relative_to(out)} (now)",
                                        f"{path.relative_to(out)} (generated)", lineterm="", n=1)
            print("\n".join(list(diff)[:40]))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if not args.quiet:
                print(f"make_stubs: wrote {path.relative_to(out) if args.out else path.relative_to(ROOT)}")
    if args.check and drift:
        print(f"make_stubs: lessons/ differs from the stubs generated from solutions/ in "
              f"{len(drift)} file(s). If you are working through the course, these are your "
              "answers: keep them (`make test` never uses your answers). Maintainers, after "
              "editing solutions/: `make stubs`, then commit the regenerated lessons/",
              file=sys.stderr)
        return 1
    if args.check:
        print(f"make_stubs: lessons/ matches solutions/ ({len(expected)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
