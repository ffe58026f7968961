#!/usr/bin/env python3
"""lint_key_test.py: tests of tools/lint.py's verdict cache key, run by `make test`.

A file's verdict is reused while the key is unchanged (tools/lint.py, cache_key): the key
must change with what clang-tidy reads (the file's text, a header it includes, a flag that
changes the preprocessed text or the language, the .clang-tidy files, clang-tidy's
version, the comments clang-tidy reads: NOLINT and `/*name=*/`), and must not change with
the level of debug information (-g, -g1), which the reference build lowered to line
tables, or with other comments. The verdicts also travel with the tree
(tools/lint_passed.txt): a fresh machine, without the cache, lints again only the files
whose key is not the recorded one, a file with findings leaves the record, and `make
lint-all` lints everything. Skipped, saying so, where clang++ is missing.
"""
import contextlib
import io
import json
import os
import pathlib
import shutil
import sys
import tempfile
import unittest
import unittest.mock

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
sys.dont_write_bytecode = True  # no __pycache__ in the course tree
sys.path.insert(0, str(ROOT / "tools"))

import lint  # noqa: E402


@unittest.skipIf(shutil.which("clang++") is None, "no clang++ (make setup installs it)")
class CacheKey(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.dir)
        (self.dir / "a.h").write_text("int twice(int x);\n")
        (self.dir / "a.cpp").write_text('#include "a.h"\nint twice(int x) { return 2 * x; }\n')

    def key(self, *flags, version="clang-tidy 14"):
        entry = {"directory": str(self.dir), "file": str(self.dir / "a.cpp")}
        args = ["c++", "-std=c++20", *flags, "-c", "a.cpp", "-o", "a.o"]
        return lint.cache_key(entry, args, version)

    def test_debug_information_does_not_change_the_key(self):
        base = self.key("-O2", "-g")
        self.assertIsNotNone(base)
        for flag in ("-g1", "-g0", "-g3", "-ggdb"):
            with self.subTest(flag=flag):
                self.assertEqual(self.key("-O2", flag), base)

    def test_what_clang_tidy_reads_changes_the_key(self):
        base = self.key("-O2", "-g")
        self.assertNotEqual(self.key("-O1", "-g"), base)
        self.assertNotEqual(self.key("-O2", "-g", "-DCOURSE_HAVE_CUDA=1"), base)
        self.assertNotEqual(self.key("-O2", "-g", version="clang-tidy 15"), base)
        (self.dir / "a.h").write_text("int twice(long x);\n")
        self.assertNotEqual(self.key("-O2", "-g"), base)

    def test_the_comments_clang_tidy_reads_change_the_key(self):
        # clang -E drops comments; NOLINT and argument comments (/*name=*/) are read by
        # clang-tidy, so they are in the key; other comments are not.
        lint.ROOT = self.dir  # the course's own files: those under the tree
        self.addCleanup(setattr, lint, "ROOT", ROOT)
        base = self.key("-O2", "-g")
        (self.dir / "a.h").write_text("int twice(int x);  // doubles x\n")
        self.assertEqual(self.key("-O2", "-g"), base)
        (self.dir / "a.h").write_text("int twice(int x);  // NOLINT(bugprone-foo)\n")
        nolint = self.key("-O2", "-g")
        self.assertNotEqual(nolint, base)
        (self.dir / "a.h").write_text("int twice(int x);\nint four = twice(/*x=*/2);\n")
        named = self.key("-O2", "-g")
        self.assertNotIn(named, (base, nolint))
        (self.dir / "a.h").write_text("int twice(int x);\nint four = twice(/*y=*/2);\n")
        self.assertNotIn(self.key("-O2", "-g"), (base, nolint, named))


FAKE_TIDY = """#!/usr/bin/env python3
import pathlib, sys
if sys.argv[1:] == ["--version"]:
    print("fake clang-tidy 1")
    sys.exit(0)
path = pathlib.Path(sys.argv[-1])
with open(pathlib.Path(__file__).with_name("calls"), "a") as log:
    log.write(path.name + "\\n")
if "bad(" in path.read_text():  # a finding in the file itself
    print(f"{path}:1:1: warning: a finding [fake-check]")
    sys.exit(1)
"""


@unittest.skipIf(shutil.which("clang++") is None, "no clang++ (make setup installs it)")
class Record(unittest.TestCase):
    """main() over a tree of two files, with a stand-in clang-tidy that logs its calls."""

    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.dir)
        tree, build = self.dir / "tree", self.dir / "tree" / "build"
        (tree / "common").mkdir(parents=True)
        build.mkdir()
        (tree / "common" / "a.h").write_text("int twice(int x);\n")
        (tree / "common" / "a.cpp").write_text('#include "a.h"\nint twice(int x) { return 2 * x; }\n')
        (tree / "common" / "bad.cpp").write_text("int bad() { return 1; }\n")
        (build / "compile_commands.json").write_text(json.dumps([
            {"directory": str(build), "file": str(tree / "common" / f),
             "arguments": ["c++", "-std=c++20", "-c", str(tree / "common" / f), "-o", f + ".o"]}
            for f in ("a.cpp", "bad.cpp")]))
        self.tidy = self.dir / "tidy" / "clang-tidy"
        self.tidy.parent.mkdir()
        self.tidy.write_text(FAKE_TIDY)
        self.tidy.chmod(0o755)
        for name, value in (("ROOT", tree), ("RECORD", tree / "tools" / "lint_passed.txt")):
            self.addCleanup(setattr, lint, name, getattr(lint, name))
            setattr(lint, name, value)
        (tree / "tools").mkdir()
        self.tree, self.build, self.runs = tree, build, 0

    def lint(self, cache=None):
        """Runs main() with an empty machine cache (a fresh machine), or COURSE_LINT_CACHE=cache;
        returns its exit status and the files clang-tidy was called on."""
        self.runs += 1
        calls = self.tidy.with_name("calls")
        calls.unlink(missing_ok=True)
        env = {"COURSE_LINT_CACHE": cache or str(self.dir / f"machine{self.runs}")}
        argv = ["lint.py", str(self.build), "common/", "--jobs", "1", "--clang-tidy", str(self.tidy)]
        with unittest.mock.patch.dict(os.environ, env), unittest.mock.patch.object(sys, "argv", argv):
            with contextlib.redirect_stdout(io.StringIO()):
                rc = lint.main()
        return rc, sorted(calls.read_text().split()) if calls.exists() else []

    def test_a_fresh_machine_lints_only_what_changed_since_the_record(self):
        self.assertEqual(self.lint(), (1, ["a.cpp", "bad.cpp"]))
        record = lint.read_record(lint.RECORD)
        self.assertEqual(sorted(record), ["common/a.cpp"])  # the file with findings is not in it
        self.assertEqual(self.lint(), (1, ["bad.cpp"]))  # a fresh machine: a.cpp's key recorded
        (self.tree / "common" / "a.h").write_text("int twice(long x);\n")
        self.assertEqual(self.lint(), (1, ["a.cpp", "bad.cpp"]))  # its header changed
        (self.tree / "common" / "bad.cpp").write_text("int good() { return 1; }\n")
        self.assertEqual(self.lint(), (0, ["bad.cpp"]))  # fixed: now it passes and is recorded
        self.assertEqual(self.lint(), (0, []))
        self.assertEqual(self.lint(cache="off"), (0, ["a.cpp", "bad.cpp"]))  # make lint-all
        self.assertEqual(sorted(lint.read_record(lint.RECORD)), ["common/a.cpp", "common/bad.cpp"])

    def test_a_forged_or_stale_key_is_linted_again(self):
        self.lint()
        text = lint.RECORD.read_text()
        key = lint.read_record(lint.RECORD)["common/a.cpp"]
        lint.RECORD.write_text(text.replace(key, "0" * 64) + "common/bad.cpp " + "1" * 64 + "\n")
        self.assertEqual(self.lint(), (1, ["a.cpp", "bad.cpp"]))
        (self.tree / "common" / "bad.cpp").write_text("int good() { return 1; }\n")
        self.assertEqual(self.lint(), (0, ["bad.cpp"]))
        self.assertIn("common/bad.cpp", lint.read_record(lint.RECORD))
        (self.tree / "common" / "bad.cpp").unlink()  # a file that is gone leaves the record
        self.build.joinpath("compile_commands.json").write_text(json.dumps(
            [e for e in json.loads(self.build.joinpath("compile_commands.json").read_text())
             if "bad" not in e["file"]]))
        self.assertEqual(self.lint(), (0, []))
        self.assertEqual(sorted(lint.read_record(lint.RECORD)), ["common/a.cpp"])


if __name__ == "__main__":
    unittest.main(verbosity=1)
