#!/usr/bin/env bash
# Installs what latscope's build, tests and benchmarks need on a Debian machine.
# Idempotent: installs only what is missing. Needs root for apt-get (skipped otherwise, with a note).
set -euo pipefail

need_apt=()
command -v cargo >/dev/null 2>&1 || need_apt+=(cargo rustc)
# A C compiler builds the bundled libzstd (the zstd crate); Debian's rustc brings gcc, rustup does not.
command -v cc >/dev/null 2>&1 || need_apt+=(gcc libc6-dev)
# The live tests (make test runs them with LATSCOPE_REQUIRE_LIVE=1: a missing tool fails them) need these.
command -v cyclictest >/dev/null 2>&1 || need_apt+=(rt-tests)
command -v trace-cmd >/dev/null 2>&1 || need_apt+=(trace-cmd)
# setpriv (the unprivileged runs), chrt and taskset (the capture script) come with util-linux.
for tool in setpriv chrt taskset; do
    command -v "$tool" >/dev/null 2>&1 || { need_apt+=(util-linux); break; }
done
command -v timeout >/dev/null 2>&1 || need_apt+=(coreutils)
command -v stress-ng >/dev/null 2>&1 || need_apt+=(stress-ng)
[ -x /usr/bin/time ] || need_apt+=(time)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
# Prometheus (server and promtool) scrapes `latscope monitor` and checks its exposition and rules in the tests.
need_prometheus=0
{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || need_prometheus=1
# The guest tests (make test-kernels, part of make test) boot Debian kernels under qemu with a busybox
# initramfs holding rtla and trace-cmd; scripts/kernel-vm.sh downloads the kernels with apt-get download.
command -v qemu-system-x86_64 >/dev/null 2>&1 || need_apt+=(qemu-system-x86)
dpkg -s busybox-static >/dev/null 2>&1 || need_apt+=(busybox-static)
command -v cpio >/dev/null 2>&1 || need_apt+=(cpio)
command -v rtla >/dev/null 2>&1 || need_apt+=(rtla)
# Headless Chromium opens the HTML reports in the report tests (make test fails without it).
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)

if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "install-deps: apt-get install ${need_apt[*]}"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
    else
        echo "install-deps: missing ${need_apt[*]}; install them with apt-get as root" >&2
    fi
fi
if [ "$need_prometheus" = 1 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "install-deps: apt-get install prometheus (the tests start their own server; the service is left off)"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
        # Debian's package enables a server on :9090; the tests need none running.
        if command -v systemctl >/dev/null 2>&1; then
            systemctl disable --now prometheus >/dev/null 2>&1 || true
        fi
    else
        echo "install-deps: missing prometheus/promtool; install the prometheus package with apt-get as root" >&2
    fi
fi

# rustfmt and clippy come with rustup toolchains; add them when rustup is there.
if command -v rustup >/dev/null 2>&1; then
    rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt >/dev/null 2>&1 || true
    rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy >/dev/null 2>&1 || true
fi

# tracefs: mount it when we are root and it is not mounted (the live tests need it; make test fails without).
if [ "$(id -u)" = 0 ] && [ -d /sys/kernel/tracing ] && [ ! -e /sys/kernel/tracing/trace ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi
