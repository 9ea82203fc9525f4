# latscope: `make run` is the main job, `make test` is everything CI runs.
CARGO ?= cargo
DURATION ?= 10s

.PHONY: all deps build run test lint doc bench clean

all: build

deps:
	@scripts/install-deps.sh

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
test: deps lint
	LATSCOPE_REQUIRE_LIVE=1 $(CARGO) test --workspace --release --locked

bench: build
	scripts/bench-all.sh

clean:
	$(CARGO) clean
