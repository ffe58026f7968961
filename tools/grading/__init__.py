"""grading: the pieces of tools/grade.py, the course's autograder.

  points.py    tests/NN_topic/points.json: points, timeouts and visibility per test
  contain.py   runs one command in its own session under a hard timeout, then sweeps it
  verdict.py   turns a test's exit and output into passed/failed and a one-line reason
  build.py     configures and builds the grading tree; compiler errors as a reason
  lessons.py   finds the lessons (solutions/NN_* or lessons/NN_*) and their tests
  report.py    the score table and grade.json (Gradescope's results format)

What this is not: a test framework. The tests are GoogleTest executables built by CMake;
this package only runs them one case at a time and keeps score.
"""
