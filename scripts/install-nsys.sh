#!/usr/bin/env bash
# Nsight Systems (nsys) for `harness` profiling, unpacked into a folder of the repo: nothing is installed system-wide
# and the machine's apt sources and state are left as they are.
#
#   bash scripts/install-nsys.sh [DEST]      (DEST defaults to build/nsys; nsys is then DEST/usr/bin/nsys)
#
# An nsys already on PATH is used as it is. Otherwise Debian's non-free component has nsight-systems 2022.4 (bookworm):
# a private apt configuration (a copy of the machine's Debian sources with non-free added, its own lists and cache,
# in DEST.apt/, removed at exit) downloads nsight-systems, nsight-systems-target and libssh-4, and `dpkg -x` unpacks
# them into DEST. A plain `apt-get install` cannot be used: nsight-systems-target depends on libcuda1 (the driver).
# Each trap it avoids is commented where it does; what nsys captures on the CPU: docs/cpu-engine.md.
set -euo pipefail

DEST="${1:-build/nsys}"
DEST="${DEST%/}"
[ -n "$DEST" ] || { echo "error: install-nsys.sh: empty destination. fix: pass a folder such as build/nsys" >&2; exit 2; }
case "$DEST" in /*) ;; *) DEST="$PWD/$DEST" ;; esac
APTDIR="$DEST.apt"
NSYS="$DEST/usr/bin/nsys"
STAMP="$DEST/.installed"
PACKAGES=(nsight-systems nsight-systems-target libssh-4)
# One install at a time: make test and make bench start one in the background from their first second, and setup's
# own call then waits here and finds it done.
mkdir -p "$(dirname "$DEST")"
exec 9>"$DEST.lock"
flock 9

# 1. An nsys on PATH wins (a machine with the CUDA toolkit or a newer Nsight Systems).
if found="$(command -v nsys)"; then
  echo "nsys: using $found ($(timeout 60 "$found" --version 2>&1 | head -1 || true)); nothing installed"
  exit 0
fi

# 2. Already unpacked by an earlier run (the stamp is written last, so a run cut short has none).
if [ -f "$STAMP" ] && [ -x "$NSYS" ] && timeout 60 "$NSYS" --version >/dev/null 2>&1; then
  echo "nsys: $NSYS is installed ($(head -1 "$STAMP"))"
  exit 0
fi

# 3. Install. Every failure ends in `fail`: one error line naming the step and the fix, and no half-made folder.
LOG="$(mktemp)"
owned=0  # DEST is ours to remove on failure (set once the checks below pass)
ok=0
cleanup() {
  rm -f "$LOG"
  if [ "$owned" = 1 ]; then rm -rf "$APTDIR"; fi
  if [ "$owned" = 1 ] && [ "$ok" != 1 ]; then rm -rf "$DEST"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

fail() {  # fail WHAT FIX: the tool's last lines, then the one error line
  if [ -s "$LOG" ]; then tail -n 8 "$LOG" | sed 's/^/  | /' >&2; fi
  echo "error: install-nsys.sh: $1 failed. fix: $2" >&2
  exit 1
}
run() { : >"$LOG"; "$@" >"$LOG" 2>&1; }  # quiet unless it fails (then `fail` shows its output)

arch="$(dpkg --print-architecture 2>/dev/null || echo unknown)"
[ "$arch" = amd64 ] || fail "architecture check (this is $arch)" \
  "Debian ships nsight-systems for amd64 only; install Nsight Systems from NVIDIA and put nsys on PATH"

# DEST is removed on failure, so refuse a folder that holds anything besides what an earlier run left.
if [ -e "$DEST" ]; then
  other="$(find "$DEST" -mindepth 1 -maxdepth 1 ! -name usr ! -name .installed -print -quit)"
  [ -z "$other" ] || fail "destination check ($DEST holds $other)" \
    "pass an empty or new folder, or remove $DEST"
fi
owned=1
rm -rf "$DEST" "$APTDIR"
mkdir -p "$DEST" "$APTDIR/sources.d" "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$APTDIR/debs"

# The machine's Debian sources, with non-free added: deb822 (bookworm's default) or the classic one-line format.
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  sed -E -e 's/^Types:.*/Types: deb/' -e 's/^Components:.*/Components: main contrib non-free/' \
    /etc/apt/sources.list.d/debian.sources >"$APTDIR/sources.d/debian.sources"
elif [ -f /etc/apt/sources.list ] && grep -Eq '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list; then
  grep -E '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list \
    | awk '{ line = $0; if (line !~ /[[:space:]]non-free([[:space:]]|$)/) line = line " non-free"; print line }' \
    >"$APTDIR/sources.d/debian.list"
else
  fail "finding the machine's Debian apt sources (neither /etc/apt/sources.list.d/debian.sources nor deb lines in /etc/apt/sources.list)" \
    "on a non-Debian machine install Nsight Systems from NVIDIA and put nsys on PATH"
fi

APT=(apt-get -q
  -o Dir::Etc::sourcelist=/dev/null -o "Dir::Etc::sourceparts=$APTDIR/sources.d"
  -o "Dir::State::Lists=$APTDIR/lists" -o "Dir::Cache=$APTDIR/cache"
  -o Acquire::Languages=none)
if [ "$(id -u)" = 0 ] && getent passwd _apt >/dev/null; then
  # apt downloads as the unprivileged _apt user when run as root: let it write the private folders.
  chown -R _apt "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$APTDIR/debs"
fi

start=$SECONDS
run "${APT[@]}" update || fail "private 'apt-get update' with non-free" \
  "check that the Debian mirror in the machine's apt sources is reachable, then run make setup again"
cp "$LOG" "$APTDIR/update.log"
if ! (cd "$APTDIR/debs" && run "${APT[@]}" download "${PACKAGES[@]}"); then
  # apt-get update only warns when an index cannot be fetched: name that cause if it is the one.
  if grep -q '^W: Failed to fetch' "$APTDIR/update.log"; then
    grep '^W: Failed to fetch' "$APTDIR/update.log" >>"$LOG"
    fail "'apt-get download ${PACKAGES[*]}' (the private apt-get update could not reach the mirror)" \
      "check network access to the Debian mirror (deb.debian.org), then run make setup again"
  fi
  fail "'apt-get download ${PACKAGES[*]}'" \
    "these come from Debian bookworm non-free (nsight-systems 2022.4); on another release install Nsight Systems from NVIDIA and put nsys on PATH"
fi

for p in "${PACKAGES[@]}"; do
  deb="$(find "$APTDIR/debs" -maxdepth 1 -name "${p}_*.deb" -print -quit)"
  [ -n "$deb" ] || fail "download of $p (no ${p}_*.deb)" "run make setup again"
  run dpkg-deb -x "$deb" "$DEST" || fail "'dpkg -x $(basename "$deb")'" "check free space under $(dirname "$DEST")"
  echo "$p $(dpkg-deb -f "$deb" Version)" >>"$APTDIR/versions"
done

# nsys looks for the host tools (the QdstrmImporter that writes .nsys-rep) beside target-linux-x64.
libdir="$DEST/usr/lib/x86_64-linux-gnu/nsight-systems"
[ -d "$DEST/usr/lib/nsight-systems/host-linux-x64" ] && [ -d "$libdir" ] \
  || fail "finding host-linux-x64 and target-linux-x64 in the unpacked packages" \
          "the package layout changed; update the link made in scripts/install-nsys.sh"
[ -e "$libdir/host-linux-x64" ] || ln -s ../../nsight-systems/host-linux-x64 "$libdir/host-linux-x64"

run timeout 60 "$NSYS" --version || fail "'$NSYS --version'" "see the output above; remove $DEST and run make setup again"
version="$(head -1 "$LOG")"
{ echo "$version"; cat "$APTDIR/versions"; echo "installed $(date -u +%Y-%m-%dT%H:%M:%SZ) by scripts/install-nsys.sh"; } >"$STAMP"
ok=1
echo "nsys: installed $version into $DEST in $((SECONDS - start)) s (use $NSYS)"
