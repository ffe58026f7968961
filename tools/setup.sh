#!/usr/bin/env bash
# setup.sh: installs the Debian packages the course needs that are missing.
# Silent and fast when nothing is missing; as root it installs (apt-get), otherwise it
# prints the exact command to run. `make setup` calls it; other make targets call make setup.
set -euo pipefail

packages=(
  cmake make g++ python3 procps
  ninja-build           # the build (the Makefile falls back to Make without it)
  libgtest-dev          # GoogleTest
  libgloo-dev           # the gloo backend
  libopenblas-dev       # matmul kernels
  zlib1g-dev            # gzip IDX files
  libcli11-dev          # driver flags
  nlohmann-json3-dev    # grade.json, safetensors headers
  dataset-fashion-mnist # lesson 07 onwards
  fortunes              # lesson 17's text: English prose, BSD licence, about 1 MB
  doxygen               # make docs
  clang-format          # make format, make format-check (part of make test)
  clang-tidy            # make lint
  gnuplot-nox           # make bench plots
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing packages: ${missing[*]}" >&2
  echo "setup: run: sudo apt-get update && sudo $cmd" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Update the package lists only when an install fails for want of them.
if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/course-setup.log 2>&1; then
  apt-get update -q >>/tmp/course-setup.log 2>&1
  apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/course-setup.log 2>&1 || {
    echo "setup: '$cmd' failed; see /tmp/course-setup.log" >&2
    exit 1
  }
fi
echo "setup: installed ${missing[*]}"
