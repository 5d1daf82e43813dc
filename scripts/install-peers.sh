#!/usr/bin/env bash
# The peer load clients `harness crosscheck --client NAME` drives (make peers): each pinned, each in a venv of its own
# under $1/<name> (default build/peers), never in the harness's .venv, whose vLLM tree theirs would fight.
# `scripts/install-peers.sh [DIR] [NAME...]`: every peer, or the ones named. Idempotent: a peer's venv carries a
# stamp with a digest of its pin, its interpreter and this script, and a second run with the same ones returns at once.
# inference-perf needs Python >= 3.12 (every release does), so it gets pyenv's 3.12 (PEER_PYTHON312 overrides the
# path); the others get the harness's 3.11 (PYTHON). uv is the harness venv's (scripts/uv-install.sh puts it there).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
peers_dir=${1:-$repo/build/peers}
shift || true
python311=${PYTHON:-$(command -v python3.11 || command -v python3)}
python312=${PEER_PYTHON312:-$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")/versions/3.12.1/bin/python3.12}
uv=${UV:-$repo/.venv/bin/uv}
# name -> "pin interpreter"; the pins are the releases the harness's adapters (harness/crosscheck_peers/) were
# written against: their flags and result files change between releases (guidellm 0.7 renamed its whole CLI)
declare -A pins=(
  [aiperf]="aiperf==0.13.0 $python311"
  [guidellm]="guidellm==0.8.1 $python311"
  [inference-perf]="inference-perf==0.7.0 $python312"
)
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(aiperf guidellm inference-perf)
[[ -x $uv ]] || { echo "error: no uv at $uv; run make setup first (it installs uv into .venv)" >&2; exit 2; }
mkdir -p "$peers_dir"
for name in "${names[@]}"; do
  [[ -n ${pins[$name]:-} ]] || { echo "error: unknown peer $name; known: ${!pins[*]}" >&2; exit 2; }
  read -r pin python <<<"${pins[$name]}"
  [[ -x $python ]] || { echo "error: $name needs $python (inference-perf: Python >= 3.12; pyenv install 3.12," \
                             "or PEER_PYTHON312=/path/to/python3.12)" >&2; exit 2; }
  env_dir=$peers_dir/$name
  digest=$(printf '%s %s\n' "$pin" "$("$python" --version 2>&1)" | cat - "$0" | sha256sum | cut -c1-16)
  if [[ -f $env_dir/.ready && $(cat "$env_dir/.ready") == "$digest" ]]; then
    echo "$name: current ($pin)"
    continue
  fi
  echo "$name: installing $pin into $env_dir"
  rm -rf "$env_dir"
  "$uv" venv --quiet --python "$python" "$env_dir"
  # PyPI alone: this machine's pip configuration (find-links, a torch cap) is for the engines' CPU torch, which no
  # peer needs; --no-config keeps a user's uv.toml out of a pinned install too
  "$uv" pip install --quiet --no-config --python "$env_dir/bin/python" "$pin"
  cli=$env_dir/bin/$name
  "$cli" --help >/dev/null 2>&1 || { echo "error: $cli --help failed after install; run it to see why" >&2; exit 1; }
  echo "$digest" > "$env_dir/.ready"
done
