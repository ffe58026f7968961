#!/usr/bin/env python3
"""make_docs.py: the course's documentation site (`make docs` -> docs/html/index.html).

Doxygen (docs/Doxyfile) reads the headers of common/ and pages this script stages in
build/docs/pages from the repository's Markdown:
  index.md        README.md, the front page, followed by a generated table of contents
                  that links every page below in order
  learners.md ... docs/*.md, each a page (learners and instructors first)
  lessonNN.md     lessons/NN_topic/README.md, every lesson in numeric order
Links between those files become Doxygen page references; links to other files of the
repository point at the source tree (../../path from docs/html). Doxygen runs with
FAIL_ON_WARNINGS: an undocumented public symbol of common/ or a broken reference fails the
build, and this script prints every warning.

    python3 tools/make_docs.py            build the site
    python3 tools/make_docs.py --stage    only write build/docs/pages (for debugging)

What this is not: a Markdown converter. Doxygen renders the pages.
"""
import argparse
import pathlib
import posixpath
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
STAGE = ROOT / "build" / "docs" / "pages"
WARNINGS = ROOT / "build" / "docs" / "warnings.log"
DOC_ORDER = ["learners", "instructors", "architecture"]  # other docs/*.md follow, by name
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")  # a link, or an image with "!"
HEADING = re.compile(r"^#\s+(.*?)\s*$", re.M)


def pages():
    """(label, source path, title) of every page, in the order of the table of contents."""
    found = []
    docs = sorted((ROOT / "docs").glob("*.md"),
                  key=lambda p: (DOC_ORDER.index(p.stem) if p.stem in DOC_ORDER else len(DOC_ORDER), p.stem))
    for p in docs:
        if p.stem in DOC_ORDER:
            found.append((p.stem, p))
    for readme in sorted((ROOT / "lessons").glob("[0-9][0-9]_*/README.md")):
        found.append(("lesson" + readme.parent.name[:2], readme))
    for p in docs:
        if p.stem not in DOC_ORDER:
            found.append((p.stem.replace("-", "_"), p))
    out = []
    for label, path in found:
        m = HEADING.search(path.read_text())
        out.append((label, path, m.group(1) if m else path.stem))
    return out


def rewrite_links(text: str, source: pathlib.Path, labels: dict) -> str:
    """Links to staged pages become @ref; links and images of other repo files point there."""
    def fix(m):
        bang, words, target = m.group(1), m.group(2), m.group(3)
        if re.match(r"^[a-z]+:", target) or target.startswith("#") or target.startswith("@"):
            return m.group(0)
        path, _, anchor = target.partition("#")
        rel = posixpath.normpath(posixpath.join(source.parent.relative_to(ROOT).as_posix(), path))
        if rel in labels and not bang:
            return f"[{words}](@ref {labels[rel]})"
        if (ROOT / rel).exists():  # docs/html/../../ is the repository root
            return f"{bang}[{words}](../../{rel}{'#' + anchor if anchor else ''})"
        return m.group(0)
    return LINK.sub(fix, text)


def stage() -> list:
    if STAGE.exists():
        shutil.rmtree(STAGE)
    STAGE.mkdir(parents=True)
    listed = pages()
    labels = {"README.md": "index"}
    labels.update({p.relative_to(ROOT).as_posix(): label for label, p, _ in listed})
    toc = ["", "## Contents of this site {#contents}", ""]
    for label, path, title in listed:
        text = rewrite_links(path.read_text(), path, labels)
        # The page's label goes on its first heading: "# Lesson 01: ranks {#lesson01}".
        text = HEADING.sub(lambda m: f"# {m.group(1)} {{#{label}}}", text, count=1)
        (STAGE / f"{label}.md").write_text(text)
        toc.append(f"- \\subpage {label}")
    front = rewrite_links((ROOT / "README.md").read_text(), ROOT / "README.md", labels)
    toc.append("- The API of `common/`: see **Namespaces** and **Files** in the menu above.")
    (STAGE / "index.md").write_text(front.rstrip() + "\n" + "\n".join(toc) + "\n")
    return listed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stage", action="store_true", help="write the pages, do not run Doxygen")
    args = ap.parse_args()
    listed = stage()
    lessons = [label for label, _, _ in listed if label.startswith("lesson")]
    print(f"docs: staged {len(listed) + 1} pages in {STAGE.relative_to(ROOT)} "
          f"(front page, {len(lessons)} lessons, {len(listed) - len(lessons)} guides)")
    if args.stage:
        return 0
    if not shutil.which("doxygen"):
        print("docs: doxygen is not installed (make setup installs it)", file=sys.stderr)
        return 1
    out = ROOT / "docs" / "html"
    if out.exists():
        shutil.rmtree(out)
    WARNINGS.parent.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(["doxygen", "docs/Doxyfile"], cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    log = WARNINGS.read_text() if WARNINGS.exists() else ""
    warnings = [l for l in log.splitlines() if re.search(r"warning:|error:", l)]
    if log.strip():
        print(log.replace(str(ROOT) + "/", "").rstrip())
    if p.returncode != 0 or warnings:
        tail = p.stdout.decode(errors="replace").strip().splitlines()[-10:]
        print("\n".join(tail))
        print(f"docs: FAILED with {len(warnings)} warning(s): document every public symbol "
              f"of common/ (/// comments) and fix the references above", file=sys.stderr)
        return 1
    print(f"docs: wrote docs/html/index.html, 0 warnings (Doxygen {doxygen_version()})")
    return 0


def doxygen_version() -> str:
    return subprocess.run(["doxygen", "--version"], stdout=subprocess.PIPE).stdout.decode().strip()


if __name__ == "__main__":
    sys.exit(main())
