#!/usr/bin/env python3
"""lint_key_test.py: tests of tools/lint.py's verdict cache key, run by `make test`.

A file's verdict is reused while the key is unchanged (tools/lint.py, cache_key): the key
must change with what clang-tidy reads (the file's text, a header it includes, a flag that
changes the preprocessed text or the language, the .clang-tidy files, clang-tidy's
version, the comments clang-tidy reads: NOLINT and `/*name=*/`), and must not change with
the level of debug information (-g, -g1), which the reference build lowered to line
tables, or with other comments. Skipped, saying so, where clang++ is missing.
"""
import pathlib
import shutil
import sys
import tempfile
import unittest

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


if __name__ == "__main__":
    unittest.main(verbosity=1)
