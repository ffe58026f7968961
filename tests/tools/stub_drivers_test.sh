#!/usr/bin/env bash
# stub_drivers_test.sh BUILD_DIR LESSON_DIR...: every lesson's driver built on its stubs
# (BUILD_DIR/lessonNN_stubs) must stop with "lessonNN: TODO lessons/NN_topic/FILE:LINE" and
# exit 2, within a timeout: a stub must never hang.
set -u
build=$1
shift
failed=0
for topic in "$@"; do
  nn=${topic:0:2}
  exe="$build/lesson${nn}_stubs"
  [ -x "$exe" ] || { echo "stub check: $exe was not built"; failed=1; continue; }
  np=1  # two ranks where the lesson is distributed, so that a rank's stub stops the others
  "$exe" --help 2>/dev/null | grep -q "number of ranks" && np=2
  out=$(timeout -k 5 120 "$exe" --np $np 2>&1 </dev/null)
  rc=$?
  last=$(printf '%s\n' "$out" | tail -n 1)
  if [ $rc -eq 2 ] && [[ "$last" =~ ^lesson$nn:\ TODO\ lessons/${topic}/[A-Za-z0-9_./]+:[0-9]+$ ]]; then
    echo "stub check: lesson$nn stops at ${last#lesson$nn: TODO }"
  else
    echo "stub check: lesson$nn on the stubs should exit 2 with a TODO naming lessons/$topic;"
    echo "  got exit $rc, last line: $last"
    failed=1
  fi
done
exit $failed
