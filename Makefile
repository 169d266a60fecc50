# SPDX-License-Identifier: Apache-2.0
# Makefile - a thin wrapper over CMake for the three things people type.
#
#   make demo    packages (if missing), Release-ish build in build/, then the
#                flash-sale demo (tests/support/demo.sh; logs in _demo/): on a
#                local cluster (coordinator + 2 nodes, 8 segments, skewed
#                demand); DEMO_MODE=single: one node in static mode;
#                DEMO_MODE=gateway: a sale over HTTPS through escrow-gateway
#   make regions packages, the build in build/, then two regions (eu, us) from
#                examples/regions on this machine and a sale across them
#                (tests/integration/regions_sale.sh, 10,000 units)
#   make test    packages, build in build-test/ with sanitizers and tests,
#                then every test (ctest, all labels but package: make
#                test-package installs into the system), then each libFuzzer
#                target for FUZZ_SMOKE_SECONDS (tests/fuzz/run.sh)
#   make test-ha the same build, then the failover tests (ctest -L ha:
#                a cluster on a pg_auto_failover formation loses its primary
#                mid-sale; a standby coordinator takes over from a leader
#                killed mid-sale); not part of make test, which leaves label
#                ha out
#   make fuzz    the libFuzzer targets for FUZZ_SECONDS each (long runs)
#   make bench   packages (redis-server among them: baseline C), the
#                Release-ish build in build/ (as make demo), then the benchmark
#                against the alternatives, each figure the median of 3 runs
#                with its range (tests/support/bench.sh; results and the
#                latency plot in BENCH_DIR, build/bench); QUICK=1: one short
#                run of each (a first look, not figures)
#   make bench-profile  the same build, then where a durable hold's time goes:
#                WAL bytes and records, the top statements, CPU per hold, perf
#                (tests/support/profile_hold.sh; logs in BENCH_DIR/profile)
#   make bench-bindings  the same build, then the Python binding against C
#                (escrow-load) on one local cluster
#                (tests/support/bench_bindings.sh; logs in BENCH_DIR/bindings)
#   make bench-gateway  the same build, then escrow-gateway against native
#                libescrow (tests/support/gateway_bench.sh)
#   make bench-catalog  the same build (with coord_probe), then a catalog of
#                1,000 / 10,000 / 100,000 items: import, placement, idle CPU,
#                status and route latency, a sale among idle items
#                (tests/tools/catalog_bench.sh; not part of make test)
#   make bench-history  the same build, then durable holds/s and p99 with 20
#                million ended holds in the holds table against an empty one
#                (ROWS=N for another count; tests/support/history_bench.sh)
#   make deb     the Debian packages (debian/, docs/packages.md): dpkg-buildpackage
#                on a copy of the tree in DEB_DIR/src, the .deb files in DEB_DIR
#                (build-deb/), then lintian (no errors allowed)
#   make test-package  make deb, then install the packages on this machine
#                (root: purge, apt-get install ./*.deb) and run a sale with the
#                installed programs (tests/integration/package.sh), then purge
#   make clean   remove build/, build-test/, build-fuzz/, build-deb/ and _demo/
#
# Missing packages are installed with apt-get when running as root; otherwise
# the exact `sudo apt-get install` line is printed and make stops. The list
# lives in .ci/packages.txt (shared with CI).

PACKAGES := $(shell grep -v -e '^\#' -e '^[[:space:]]*$$' .ci/packages.txt)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
BUILD_TEST ?= build-test
DEMO_DIR ?= _demo
BENCH_DIR ?= $(BUILD)/bench
# make bench QUICK=1: one repetition of a second per measurement
QUICK ?= 0
# cluster (the default, tests/support/cluster.sh), single (one node, static
# mode) or gateway (the sale over HTTPS through escrow-gateway)
DEMO_MODE ?= cluster
# libFuzzer targets (tests/fuzz/run.sh): seconds per target in make test
# (skipped without clang) and in make fuzz.
FUZZ_SMOKE_SECONDS ?= 60
FUZZ_SECONDS ?= 600
# make deb: where the copy of the tree is built and the packages land.
DEB_DIR ?= build-deb
DEB_ABS := $(abspath $(DEB_DIR))

.PHONY: all deps build demo regions test test-ha fuzz clean bench bench-profile bench-bindings bench-gateway bench-catalog bench-history deb test-package

all: build

deps:
	@missing=""; \
	for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' "$$p" 2>/dev/null | grep -q 'install ok installed' || \
	    missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" -eq 0 ]; then \
	  echo "installing:$$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	else \
	  echo "missing packages:$$missing"; \
	  echo "install them with:"; \
	  echo "  sudo apt-get install -y$$missing"; \
	  exit 1; \
	fi

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DESC_TESTS=OFF -DESC_SANITIZE=OFF
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	ESC_BIN=$(abspath $(BUILD))/bin ESC_DEMO_DIR=$(abspath $(DEMO_DIR)) ESC_DEMO_MODE=$(DEMO_MODE) \
	  tests/support/demo.sh

regions: build
	ESC_BIN=$(abspath $(BUILD))/bin ESC_SRC=$(abspath .) ESC_REGIONS_TOTAL=10000 \
	  bash tests/integration/regions_sale.sh

bench: build
	ESC_BIN=$(abspath $(BUILD))/bin ESC_BENCH_DIR=$(abspath $(BENCH_DIR)) ESC_BENCH_QUICK=$(QUICK) \
	  tests/support/bench.sh

bench-profile: build
	ESC_BIN=$(abspath $(BUILD))/bin ESC_PROFILE_DIR=$(abspath $(BENCH_DIR))/profile \
	  tests/support/profile_hold.sh

bench-bindings: build
	ESC_BIN=$(abspath $(BUILD))/bin ESC_BB_DIR=$(abspath $(BENCH_DIR))/bindings \
	  tests/support/bench_bindings.sh

bench-gateway: build
	ESC_BIN=$(abspath $(BUILD))/bin tests/support/gateway_bench.sh

bench-catalog: build
	cmake -S . -B $(BUILD) -DESC_TESTS=ON >/dev/null
	cmake --build $(BUILD) -j $(JOBS) --target coord_probe
	ESC_BIN=$(abspath $(BUILD))/bin tests/tools/catalog_bench.sh
bench-history: build
	$(if $(ROWS),ESC_HIST_HOLDS=$(ROWS)) ESC_BIN=$(abspath $(BUILD))/bin tests/support/history_bench.sh

test: deps
	cmake -S . -B $(BUILD_TEST) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DESC_TESTS=ON -DESC_SANITIZE=ON
	cmake --build $(BUILD_TEST) -j $(JOBS)
	ctest --test-dir $(BUILD_TEST) --output-on-failure -j $(JOBS) -LE '^(package|ha)$$'
	tests/fuzz/run.sh --if-clang $(FUZZ_SMOKE_SECONDS)

test-ha: deps
	cmake -S . -B $(BUILD_TEST) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DESC_TESTS=ON -DESC_SANITIZE=ON
	cmake --build $(BUILD_TEST) -j $(JOBS)
	ctest --test-dir $(BUILD_TEST) --output-on-failure -L '^ha$$'

fuzz: deps
	tests/fuzz/run.sh $(FUZZ_SECONDS)

# dpkg-buildpackage writes into the tree it builds and its parent folder:
# both are under DEB_DIR, so the source tree stays as it is.
deb: deps
	rm -rf $(DEB_ABS)
	mkdir -p $(DEB_ABS)/src/escrow
	tar -c --exclude-vcs --exclude=./build --exclude='./build-*' --exclude=./_demo \
	  --exclude='./$(DEB_DIR)' --exclude=node_modules --exclude=__pycache__ . | \
	  tar -x -C $(DEB_ABS)/src/escrow
	cd $(DEB_ABS)/src/escrow && \
	  DEB_BUILD_OPTIONS="nocheck parallel=$(JOBS)" dpkg-buildpackage -b -us -uc
	mv $(DEB_ABS)/src/*.deb $(DEB_ABS)/src/*.buildinfo $(DEB_ABS)/src/*.changes $(DEB_ABS)/
	rm -rf $(DEB_ABS)/src
	lintian --fail-on error $(DEB_ABS)/*.changes
	@ls -l $(DEB_ABS)/*.deb

test-package: deb
	ESC_DEB_DIR=$(DEB_ABS) ESC_SRC=$(abspath .) bash tests/integration/package.sh

clean:
	rm -rf $(BUILD) $(BUILD_TEST) $(DEMO_DIR) build-fuzz $(DEB_DIR)
