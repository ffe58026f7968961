#!/usr/bin/env bash
# export_learner.sh DEST: a learner's copy of the course, without solutions/.
#
# What goes in: every file git knows here (tracked, plus untracked files that are not
# ignored) except solutions/, tests/grader/ (the grader's own tests need solutions/) and
# this script; plus reference/lib/libex_NN_ref.a, the reference code of every lesson
# prebuilt as a static library, so that lesson NN's driver and tests still link the
# reference for lessons before NN (cmake/Lessons.cmake uses them when solutions/ is absent).
# In the copy, `make lessonNN`, `make grade`, `make grade-lessonNN` and `make docs` work as
# here; `make test` runs the reference tests against the prebuilt libraries and the stub
# builds, and skips the stub drift check and the grader's self-tests.
#
#   tools/export_learner.sh /tmp/course-learner        then: cd /tmp/course-learner && make grade
#   COURSE_EXPORT_BUILD=build/solutions                 reference build tree to reuse (default)
#
# DEST must be empty, new, or an earlier export (it holds .course-export): updating one
# rewrites only the files that changed and removes those that are gone, so an existing
# build inside it stays incremental.
#
# What this is not: obfuscation. The archives are compiled reference code (see
# docs/instructors.md); they keep a learner from reading the solutions, not from
# disassembling them.
set -euo pipefail

if [ $# -ne 1 ] || [[ "$1" == -* ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
dest=$(mkdir -p "$1" && cd "$1" && pwd)
build=${COURSE_EXPORT_BUILD:-$root/build/solutions}
[[ "$build" = /* ]] || build="$root/$build"
manifest="$dest/.course-export"

[ -d "$root/solutions" ] || { echo "export: $root has no solutions/ (already a learner's copy?)" >&2; exit 1; }
case "$dest/" in
  "$root/"*) [[ "$dest/" == "$root/build/"* ]] || {
               echo "export: DEST must be outside the course tree (or under build/)" >&2; exit 1; } ;;
esac
if [ -n "$(ls -A "$dest")" ] && [ ! -f "$manifest" ]; then
  echo "export: $dest is not empty and is not an earlier export; pick a new folder" >&2
  exit 1
fi

# 1. The file list.
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list_files() { git ls-files --cached --others --exclude-standard; }
else
  list_files() { find . -path ./build -prune -o -path ./.git -prune -o -type f -print | sed 's|^\./||'; }
fi
mapfile -t files < <(list_files | sort -u |
  grep -vE '^(solutions/|tests/grader/|tools/export_learner\.sh$|reference/|docs/html/)' |
  while read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done)

# 2. The reference libraries, built from solutions/ in the reference build tree.
lessons=()
for d in solutions/[0-9][0-9]_*/; do lessons+=("$(basename "$d")"); done
targets=()
for topic in "${lessons[@]}"; do
  if compgen -G "solutions/$topic/*.cpp" >/dev/null || compgen -G "solutions/$topic/*.cu" >/dev/null; then
    targets+=("ex_${topic:0:2}_ref")
  fi
done
if [ ${#targets[@]} -gt 0 ]; then
  echo "export: building the reference libraries (${targets[*]}) in ${build#$root/}"
  cmake -S "$root" -B "$build" -DIMPL=solutions -DCHAIN=ref >/dev/null
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >/dev/null
fi

# 3. Copy what changed; remember what was exported.
copy_if_changed() {  # SRC DST: copy only when the content differs (keeps build mtimes valid)
  if ! cmp -s "$1" "$2"; then
    mkdir -p "$(dirname "$2")"
    cp "$1" "$2"
    changed=$((changed + 1))
  fi
}
changed=0
new_manifest=()
for f in "${files[@]}"; do
  copy_if_changed "$root/$f" "$dest/$f"
  new_manifest+=("$f")
done
for target in "${targets[@]}"; do
  lib=$(find "$build" -maxdepth 3 -name "lib$target.a" -print -quit)
  [ -n "$lib" ] || { echo "export: lib$target.a was not built in $build" >&2; exit 1; }
  copy_if_changed "$lib" "$dest/reference/lib/lib$target.a"
  new_manifest+=("reference/lib/lib$target.a")
done
readme="reference/README.md"
tmp=$(mktemp)
cat >"$tmp" <<EOF
# reference/

Prebuilt reference code of every lesson (\`lib/libex_NN_ref.a\`), made by
\`tools/export_learner.sh\`. Lesson NN's driver and tests link your \`lessons/NN\` and
these libraries for the lessons before it, so an unfinished lesson never blocks the next
(\`make lessonNN CHAIN=mine\` uses your own code all the way). Do not edit; rebuild them
with the instructor's copy of the course.

Lessons: ${lessons[*]}
EOF
copy_if_changed "$tmp" "$dest/$readme"
rm -f "$tmp"
new_manifest+=("$readme")

# 4. Remove what an earlier export wrote and this one did not.
removed=0
declare -A exported=()
for f in "${new_manifest[@]}"; do exported["$f"]=1; done
if [ -f "$manifest" ]; then
  while read -r old; do
    if [ -n "$old" ] && [ -z "${exported[$old]:-}" ]; then
      rm -f "$dest/$old" && removed=$((removed + 1))
    fi
  done <"$manifest"
fi
printf '%s\n' "${new_manifest[@]}" >"$manifest"

echo "export: $dest: ${#files[@]} files and ${#targets[@]} reference libraries" \
     "($changed written, $removed removed); no solutions/"
echo "export: next: cd $dest && make grade     (to publish: git init && git add -A && git commit)"
