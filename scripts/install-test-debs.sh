#!/usr/bin/env bash
# The Debian packages the tests and `make bench-slurm` / `make report-pdf` need, each group installed only when its
# command is missing (so a second run takes a second):
#
#   bash scripts/install-test-debs.sh
#
# - Slurm: a 2-node cluster on this machine for `make bench-slurm` and the Slurm tests (harness/cluster/local.py)
# - a headless Chromium and poppler for `harness report --pdf` (harness/report/pdf_pages.py), the Chromium also
#   for the explorer page's browser test (Playwright drives it: tests/integration/test_explorer_browser.py)
# - PostgreSQL 15 for the results-history tests against a real server (tests/support/postgres.py)
#
# make test runs it twice: in the background from its first second, beside setup (it needs nothing of the venv), and
# again in setup-test, where it finds the packages there or waits for dpkg's lock (DPkg::Lock::Timeout) while the
# first run finishes. An install that fails is retried once after `apt-get update` (a fresh machine's lists may be
# stale), then stops with the fix.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
APT=(apt-get -q -o DPkg::Lock::Timeout=900)

install() {  # install PACKAGES... unless CHECK (a shell test) already holds
  local check="$1"; shift
  if bash -c "$check" >/dev/null 2>&1; then
    return 0
  fi
  "${APT[@]}" install -y --no-install-recommends "$@" \
    || { "${APT[@]}" update && "${APT[@]}" install -y --no-install-recommends "$@"; } \
    || { echo "error: install-test-debs.sh: apt-get could not install $*; fix: run 'apt-get update && apt-get" \
              "install $*' as root and read apt's message" >&2; exit 2; }
}

install "command -v slurmctld && command -v munged" slurmctld slurmd slurm-client munge
install "command -v chromium-headless-shell && command -v pdftoppm" chromium-headless-shell poppler-utils \
  fonts-dejavu-core
install "test -x /usr/lib/postgresql/15/bin/initdb" postgresql-15
