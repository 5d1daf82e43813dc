#!/usr/bin/env bash
# SGLang's own environment for the CPU (make setup-sglang): a venv at $1 with the CPU torch, sglang==0.5.23 without
# its CUDA dependencies, the project's sgl_kernel stand-in (engines/sglang_cpu) on its path, and the one torchvision
# import fix. SGLang pins torch==2.14.1, a CUDA build of several GB here, so it is installed --no-deps on top of the
# CPU torch 2.13.0 and its other dependencies come from a pinned list (engines/sglang_cpu/requirements.txt).
# Facts it rests on: docs/sglang-cpu.md. Idempotent: a second run on a finished environment does nothing.
set -euo pipefail
env_dir=${1:?usage: install-sglang.sh DIR [PYTHON]}
python=${2:-python3.11}
repo=$(cd "$(dirname "$0")/.." && pwd)
stamp="$env_dir/.ready"
inputs=("$repo/scripts/install-sglang.sh" "$repo/scripts/patch-torchvision-meta.py"
        "$repo/engines/sglang_cpu/requirements.txt" "$repo/scripts/uv-install.sh" "$repo/scripts/compile-bytecode.py")
digest=$(cat "${inputs[@]}" | sha256sum | cut -c1-16)
# one install at a time: a second caller (make test's SGLang test beside the lane that started it) waits here,
# then finds the environment current
mkdir -p "$(dirname "$env_dir")"
exec 9>"$env_dir.lock"
flock 9
if [[ -f $stamp && $(cat "$stamp") == "$digest" ]]; then
  exit 0
fi
rm -rf "$env_dir"
"$python" -m venv "$env_dir"
# uv with pip's configuration (scripts/uv-install.sh), which is what finds the CPU torch on this machine's disk
install=(bash "$repo/scripts/uv-install.sh" "$env_dir/bin/python")
# torch 2.13.0 is the CPU build on this machine's disk (the index's newer torch is CUDA): it must come first
"${install[@]}" torch==2.13.0
"${install[@]}" --no-deps sglang==0.5.23 torchvision==0.28.0 -r "$repo/engines/sglang_cpu/requirements.txt"
site=$("$env_dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$env_dir/bin/python" "$repo/scripts/patch-torchvision-meta.py" "$site"
# the stand-in sgl_kernel and the CPU launcher, importable in this environment only
echo "$repo/engines/sglang_cpu" > "$site/harness-sglang-cpu.pth"
# the import's own error is shown: once (2026-11-28, a fresh clone beside another install) it failed and the same
# import passed a minute later, so it is tried twice before the environment is refused
check=("$env_dir/bin/python" -c 'import sglang, sgl_kernel, torchvision')
"${check[@]}" 2>"$env_dir/import-check.log" || { cat "$env_dir/import-check.log" >&2; sleep 5; "${check[@]}"; } || {
  echo "error: $env_dir cannot import sglang, sgl_kernel and torchvision after install (its error above);" \
       "run: $env_dir/bin/python -c 'import sglang, sgl_kernel, torchvision'" >&2; exit 1; }
echo "$digest" > "$stamp"
