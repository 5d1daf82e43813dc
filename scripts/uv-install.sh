#!/usr/bin/env bash
# Install into a venv with uv, as pip would on this machine: `scripts/uv-install.sh VENV_PYTHON PIP_INSTALL_ARGS...`.
#
# uv resolves and installs the engine's ~150 packages in about 15 s where pip took about 2 min (2026-11-27, 2-core
# AMD EPYC VM: the same versions of every package both installed), plus about a minute to compile their bytecode, as
# pip does (below). uv reads none of pip's configuration, and on this
# kind of machine that configuration is what finds the CPU build of torch (pip's find-links: a wheel on disk; without
# it, torch==2.13.0 from PyPI is a CUDA build of several GB) and caps its version (pip's constraint file). So pip's
# own `pip config list` (files and PIP_* variables) is read and handed to uv as flags: find-links, index-url,
# extra-index-url and constraint. Where pip has none of them, uv uses PyPI as pip would.
set -euo pipefail
python=$1
shift
UV_VERSION=0.13.9
uv_dir=$(dirname "$python")
if [[ ! -x $uv_dir/uv ]] || [[ $("$uv_dir/uv" --version | cut -d' ' -f2) != "$UV_VERSION" ]]; then
  "$python" -m pip install -q "uv==$UV_VERSION"
fi
flags=()
while IFS= read -r line; do
  key=${line%%=*}
  key=${key#*.}
  value=${line#*=}
  value=${value#\'}
  value=${value%\'}
  case $key in
    find-links) for v in $value; do flags+=(--find-links "$v"); done ;;
    index-url) flags+=(--index-url "$value") ;;
    extra-index-url) for v in $value; do flags+=(--extra-index-url "$v"); done ;;
    constraint) for v in $value; do flags+=(--constraint "$v"); done ;;
  esac
done < <("$python" -m pip config list 2>/dev/null | sort -u)
# No --compile-bytecode: uv's compiles all of site-packages, and most of it is never imported here; the modules are
# compiled after the install instead, all but the trees nothing here imports (scripts/compile-bytecode.py). Compiled
# they must be: where PYTHONDONTWRITEBYTECODE is set (it is on these machines) nothing is ever compiled to disk
# otherwise, and each of a vLLM server's three processes compiled its imports from source at every launch (ready
# after 126-140 s instead of 71-82 s, 2026-11-27)
# pip takes the best version across all its indexes and links; uv's default stops at the first index that has the
# package, which would ignore the wheel on disk for a version on an index
"$uv_dir/uv" pip install --quiet --python "$python" --index-strategy unsafe-best-match "${flags[@]}" "$@"
"$python" "$(dirname "$0")/compile-bytecode.py"
