#!/bin/bash
# `make launch` copies the launch tool out of the build tree: the file it copies must be the
# one CMake builds. Runs the Makefile's recipe dry (make -n), so nothing is configured or built.
#   make_launch_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
line=$(make -n -s -C "$src" launch BUILD="$build" | grep -E '^cp -f ' | head -n 1)
if [ -z "$line" ]; then
  echo "FAIL: the launch recipe in $src/Makefile copies nothing"
  exit 1
fi
from=$(echo "$line" | awk '{print $3}')
case $from in /*) ;; *) from=$src/$from ;; esac
if [ ! -x "$from" ]; then
  echo "FAIL: make launch copies '$from', which the build does not produce"
  exit 1
fi
echo "ok: make launch copies $from"
