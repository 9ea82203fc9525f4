# latscope: `make run` is the main job, `make test` is everything CI runs.
CARGO ?= cargo
DURATION ?= 10s

.PHONY: all deps kernels build run test test-kernels test-loom lint doc bench clean

all: build

deps:
	@scripts/install-deps.sh

# The Debian kernels the guest tests boot (linux-image-rt-amd64's and the standard one of the same release),
# downloaded once with apt-get download into ~/.cache/latscope-kernels; qemu, busybox, cpio and rtla come with deps.
kernels: deps
	scripts/kernel-vm.sh fetch >/dev/null

build: deps
	$(CARGO) build --release --locked

# The main job: audit the machine, measure, trace, analyse and write the report.
run: build
	./target/release/latscope run -D $(DURATION)

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --locked

# Live tests that cannot run (no root, tracefs, CPU 1 or a tool) fail here instead of skipping.
# The guest tests (crates/latscope/tests/kernels.rs: Debian's 6.1 RT and standard kernels under qemu TCG, one
# guest at a time) run with make test-kernels; they are ignored in make test for time: 4 to 6.5 minutes (236-387 s
# of tests in 5 runs, 2026-11-26 evening) and 8 to 11 with the host loaded, on top of make test's 13 (#17, README
# "Other kernels"). They take /tmp/latscope-guest.lock and /tmp/latscope-live.lock themselves: do not wrap them in flock.
# --no-fail-fast and the loom models run whatever failed before them: one run shows every failing test, not only
# the first failing binary's; the exit status is still the failure.
test: deps lint
	LATSCOPE_REQUIRE_LIVE=1 $(CARGO) test --workspace --release --locked --no-fail-fast; \
	status=$$?; $(MAKE) test-loom && exit $$status

# Only the guest tests, the ignored ones too: scripts/kernel-vm.sh boots each kernel (cached in
# ~/.cache/latscope-kernels).
test-kernels: deps kernels
	LATSCOPE_REQUIRE_LIVE=1 $(CARGO) test --release --locked -p latscope --test kernels -- --include-ignored

# The .dat decoder's hand-off protocol (decode/src/dat/board.rs) model-checked with loom, in its own target dir
# (the loom cfg rebuilds the dependencies: about 4 minutes cold here, 1 s of checking). Part of make test: with the
# lost wake-up of #19 put back, all 4 models report the deadlock.
test-loom: deps
	CARGO_TARGET_DIR=target/loom RUSTFLAGS="--cfg loom" $(CARGO) test --release --locked -p latscope-decode --lib board::loom_model

bench: build
	scripts/bench-all.sh

clean:
	$(CARGO) clean
