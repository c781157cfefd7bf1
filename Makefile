# irqlab: `make demo` and `make test` set everything up on a fresh machine
# (apt packages, a virtualenv with every pip dependency, the Rust crates and the
# native module) and then run. Every step is idempotent.

SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
CARGO ?= cargo
# Debian packages the tests need (GHDL simulates and synthesizes the Latencies IP,
# yosys maps it to FPGA cells for the synthesis sanity check; rt-tests gives
# cyclictest, the timer-latency floor of bench/dispatch; chromium renders the
# `irqlab report` page headless in tests/python/test_report.py; clang and
# libbpf-dev build irqlab-rt's kernel-upcall BPF object, bpftool checks
# nothing stays attached; rt-app replays `irqlab export rt-app` in
# tests/python/test_export_rtapp.py; qemu-system-x86 boots kernel/ in
# tests/python/test_kernel.py).
APT_PACKAGES := ghdl yosys rt-tests chromium clang libbpf-dev linux-libc-dev bpftool rt-app qemu-system-x86
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export VIRTUAL_ENV := $(CURDIR)/$(VENV)

.PHONY: all setup apt venv develop wheel demo demo-kernel test test-rust test-python lint lint-kernel bench clean guest kernel test-kernel fuzz fuzz-smoke dispatch

all: setup

## ---- set-up ---------------------------------------------------------------

apt:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

$(VENV)/.deps: requirements-dev.txt
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.deps

develop: venv
	$(VENV)/bin/maturin develop --release -q

# The release wheel, in target/wheels (tests/python/test_wheel.py installs it
# into a fresh virtualenv outside the checkout). Built for the venv's
# interpreter, as `maturin develop` builds: PYO3_PYTHON is part of pyo3's
# cargo fingerprint, so after `make setup` this reuses that release build
# and only packs the wheel (a few seconds) instead of recompiling.
wheel: venv
	rm -f target/wheels/irqlab-*.whl
	$(VENV)/bin/maturin build --release -q -i $(PY) --out target/wheels

# bench/dispatch (UPCALL Figures 4-6, `irqlab reproduce upcall-dispatch`) is a
# standalone cargo project; built here so that a fresh machine has it.
dispatch:
	$(CARGO) build --release -q --manifest-path bench/dispatch/Cargo.toml

setup: apt develop dispatch

## ---- the two commands -----------------------------------------------------

demo: setup
	$(VENV)/bin/irqlab demo
	@$(MAKE) --no-print-directory demo-kernel
	@if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then \
	  echo "== real VMM (irqlab-vmm): UDP echoes to a busy KVM guest, VCPU 4 ms / 10 ms, without and with vINT =="; \
	  for v in "" "--vint 1000 300"; do \
	    $(CARGO) run --release -q -p irqlab-vmm --bin irqlab-vmm -- echo --busy --events 1000 \
	      --interval 1000 --budget 4000 --period 10000 --summary $$v || exit 1; done; \
	  echo "== real VMM: a decoder task in the guest under an interrupt storm every 60 us (VINT Fig. 12) =="; \
	  for s in baseline vint; do \
	    $(RT_HOST) $(CARGO) run --release -q -p irqlab-vmm --bin irqlab-vmm -- storm --scheme $$s --util 80 \
	      --seconds 2 --summary || exit 1; done; \
	else echo "real-VMM demo skipped: /dev/kvm is absent or not permitted"; fi

# The Quest kernel (kernel/) under QEMU: a quest model's VCPUs, tasks and USB
# devices run in the guest, next to the simulator's run of the same model
# (emulated time; docs/kernel.md).
demo-kernel: kernel
	@if command -v qemu-system-x86_64 >/dev/null; then \
	  echo "== the Quest kernel on QEMU (emulated time): usb-guest-small in the guest and in the simulator =="; \
	  $(VENV)/bin/irqlab guest usb-guest-small --out out/guest || exit 1; \
	else echo "Quest-kernel demo skipped: qemu-system-x86_64 is absent"; fi

# The guest kernel of irqlab-vmm (cargo builds it too, through build.rs).
guest:
	$(MAKE) -C guest

# The irqlab kernel (kernel/, docs/kernel.md): a standalone cargo project
# built for the host target as a freestanding ELF; it must be built from its
# own directory (kernel/.cargo/config.toml holds the link flags).
# tests/python/test_kernel.py boots it under QEMU.
KERNEL_CARGO := cd kernel && $(CARGO)
KERNEL_TARGET := --target x86_64-unknown-linux-gnu
kernel:
	$(KERNEL_CARGO) build --release -q $(KERNEL_TARGET)

# The kernel's tests alone (seconds): QEMU boots it; see docs/kernel.md.
test-kernel: kernel
	$(PY) -m pytest -q tests/python/test_kernel.py

test: setup lint fuzz-smoke kernel test-rust test-python

lint: lint-kernel
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -q -- -D warnings
	$(VENV)/bin/ruff check $(wildcard python tests bench hdl examples)

lint-kernel:
	$(KERNEL_CARGO) fmt -- --check
	$(KERNEL_CARGO) clippy --release -q $(KERNEL_TARGET) -- -D warnings

# The real-time tests run with the kernel's RT throttling off when root
# (restored after; see the script).
RT_HOST := $(CURDIR)/tests/host/rt-unthrottled

# Rust tests that skip (no SCHED_FIFO, io_uring, /dev/kvm...) log their reason
# to SKIP_LOG (irqlab_rt::skipped!): libtest hides a passing test's output.
SKIP_LOG := $(CURDIR)/target/rust-skips.txt
test-rust:
	@mkdir -p target && rm -f $(SKIP_LOG)
	IRQLAB_SKIP_LOG=$(SKIP_LOG) $(RT_HOST) $(CARGO) test --workspace --exclude irqlab-py --release -q; \
	rc=$$?; if [ -s $(SKIP_LOG) ]; then \
	  echo "Rust tests skipped ($$(wc -l < $(SKIP_LOG))), with the reason:"; sed 's/^/  /' $(SKIP_LOG); \
	else echo "Rust tests skipped: none"; fi; exit $$rc

test-python:
	$(RT_HOST) $(PY) -m pytest -q

## ---- fuzzing (fuzz/, cargo-fuzz on the nightly toolchain) -----------------
# `fuzz-smoke` runs each target for FUZZ_SMOKE_S seconds (part of `make test`
# when nightly is installed, else skipped with the reason); `fuzz` for FUZZ_S.
# New inputs go to fuzz/target/corpus/TARGET; the seed corpus
# fuzz/corpus/TARGET stays as committed; crashes land in fuzz/artifacts/.

FUZZ_TARGETS := model_load model_sim config_json config_extreme
FUZZ_SMOKE_S ?= 5
FUZZ_S ?= 600

fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz-run FUZZ_RUN_S=$(FUZZ_SMOKE_S)

fuzz:
	@$(MAKE) --no-print-directory fuzz-run FUZZ_RUN_S=$(FUZZ_S)

fuzz-run:
	@if ! $(CARGO) +nightly --version >/dev/null 2>&1; then \
	  echo "fuzz: skipped: the nightly Rust toolchain is not installed (rustup toolchain install nightly)"; \
	  exit 0; fi; \
	command -v cargo-fuzz >/dev/null || $(CARGO) install -q cargo-fuzz || exit 1; \
	cd fuzz && for t in $(FUZZ_TARGETS); do \
	  mkdir -p target/corpus/$$t; \
	  echo "fuzz: $$t for $(FUZZ_RUN_S) s"; \
	  $(CARGO) +nightly fuzz run -O $$t target/corpus/$$t corpus/$$t -- \
	    -max_total_time=$(FUZZ_RUN_S) -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
	    -print_final_stats=1 > target/$$t.log 2>&1; rc=$$?; \
	  grep -E "^(stat::number_of_executed_units|Done)" target/$$t.log; \
	  if [ $$rc != 0 ]; then tail -40 target/$$t.log; \
	    echo "fuzz: $$t failed (reproducer in fuzz/artifacts/$$t)"; exit 1; fi; \
	done

## ---- benchmarks (not part of the test suite) ------------------------------

bench: setup
	$(PY) bench/run.py

clean:
	$(CARGO) clean
	$(KERNEL_CARGO) clean
	rm -rf $(VENV) out
