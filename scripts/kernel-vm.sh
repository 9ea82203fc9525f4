#!/usr/bin/env bash
# Boots a Debian distribution kernel (PREEMPT_RT or the standard one of the same release) under qemu TCG
# with a busybox initramfs holding the current latscope binary and the guest tools (chrt, rtla,
# trace-cmd), runs a guest script as root and copies the guest's /tmp/out back.
#
#   scripts/kernel-vm.sh run GUEST_SCRIPT OUTDIR    boot, run GUEST_SCRIPT, copy /tmp/out to OUTDIR
#   scripts/kernel-vm.sh fetch                      only download and unpack the kernels into the cache
#
# Environment:
#   LATSCOPE_GUEST_KERNEL  rt (default) or std: Debian's linux-image-rt-amd64 or linux-image-amd64
#   LATSCOPE_GUEST_APPEND  extra kernel arguments (isolcpus=, nohz_full=, …)
#   LATSCOPE_GUEST_TIMEOUT seconds before the guest counts as hung (default 300)
#   LATSCOPE_KERNEL_CACHE  where the kernel packages and unpacked kernels live (default ~/.cache/latscope-kernels)
#   LATSCOPE_BIN           the latscope binary to put in the guest (default target/release/latscope)
#
# Exit status: the guest script's, or 1 when the guest hung, crashed or wrote nothing.
# KVM is not used: nested KVM hangs on the development machine; TCG timings are meaningless, so guest tests
# assert what happened, never how long it took.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${LATSCOPE_KERNEL_CACHE:-$HOME/.cache/latscope-kernels}
flavour=${LATSCOPE_GUEST_KERNEL:-rt}
timeout_s=${LATSCOPE_GUEST_TIMEOUT:-300}
latscope_bin=${LATSCOPE_BIN:-$repo/target/release/latscope}
# Modules the kernel has as modules, not built in, in load order: the output disk is a virtio block device.
virtio_modules="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_blk"
# Programs from the host that the guest scripts use, with their libraries (busybox-static has no chrt).
guest_tools="chrt rtla trace-cmd"

die() { echo "kernel-vm: $*" >&2; exit 1; }

# The Debian package name of the kernel behind a metapackage (linux-image-rt-amd64 -> linux-image-6.1.0-56-rt-amd64).
kernel_package() {
    local meta=$1 name
    name=$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    if [ -z "$name" ] && [ "$(id -u)" = 0 ]; then
        apt-get update -qq >/dev/null 2>&1 || true
        name=$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    fi
    [ -n "$name" ] || die "cannot resolve $meta with apt-cache (run apt-get update as root)"
    echo "$name"
}

# Downloads (once) and unpacks (once) one kernel package; prints its directory in the cache.
fetch_kernel() {
    local pkg=$1 dir="$cache/$1" deb
    if [ ! -f "$dir/vmlinuz" ]; then
        mkdir -p "$cache/debs"
        deb=$(ls "$cache/debs/${pkg}_"*.deb 2>/dev/null | head -1 || true)
        if [ -z "$deb" ]; then
            (cd "$cache/debs" && apt-get download "$pkg" >/dev/null 2>&1) || die "apt-get download $pkg failed"
            deb=$(ls "$cache/debs/${pkg}_"*.deb | head -1)
        fi
        rm -rf "$dir.tmp" && mkdir -p "$dir.tmp/x" "$dir.tmp/modules"
        dpkg-deb -x "$deb" "$dir.tmp/x"
        cp "$dir.tmp/x"/boot/vmlinuz-* "$dir.tmp/vmlinuz"
        cp "$dir.tmp/x"/boot/config-* "$dir.tmp/config"
        for m in $virtio_modules; do
            find "$dir.tmp/x/lib/modules" -name "$m.ko" -exec cp {} "$dir.tmp/modules/" \;
            [ -f "$dir.tmp/modules/$m.ko" ] || die "$pkg has no $m.ko"
        done
        basename "$deb" >"$dir.tmp/package"
        rm -rf "$dir.tmp/x" "$dir" && mv "$dir.tmp" "$dir"
    fi
    echo "$dir"
}

kernel_dir() {
    local rt_pkg
    # An empty cache is no error (pipefail would end the script here without a word).
    rt_pkg=$(ls -d "$cache"/linux-image-*-rt-amd64 2>/dev/null | head -1 | xargs -r basename || true)
    [ -n "$rt_pkg" ] || rt_pkg=$(kernel_package linux-image-rt-amd64)
    case $flavour in
        rt) fetch_kernel "$rt_pkg" ;;
        # The standard kernel of the same release: the same ABI name without "-rt".
        std) fetch_kernel "${rt_pkg/-rt-amd64/-amd64}" ;;
        *) die "LATSCOPE_GUEST_KERNEL must be rt or std, not '$flavour'" ;;
    esac
}

# Copies a host program and the libraries ldd lists into the initramfs tree $1, at the same paths.
copy_with_libs() {
    local root=$1 prog=$2 lib
    mkdir -p "$root$(dirname "$prog")"
    cp -L "$prog" "$root$prog"
    for lib in $(ldd "$prog" 2>/dev/null | grep -o '/[^ ]*'); do
        [ -e "$root$lib" ] && continue
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
}

# The part of the initramfs that does not change between runs: busybox, the tools, the modules, /init.
# Rebuilt when the kernel or a tool changes (its key is their checksums).
base_cpio() {
    local kdir=$1 busybox tool key tools_paths=() root out
    busybox=$(command -v busybox) || die "busybox is missing (scripts/install-deps.sh installs busybox-static)"
    for tool in $guest_tools; do
        command -v "$tool" >/dev/null || die "$tool is missing (scripts/install-deps.sh installs it)"
        tools_paths+=("$(command -v "$tool")")
    done
    key=$( (cat "$kdir/package"; cat "$0"; sha1sum "$busybox" "${tools_paths[@]}") | sha1sum | cut -c1-12)
    out="$kdir/base-$key.cpio"
    if [ ! -f "$out" ]; then
        root=$(mktemp -d)
        mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,lib/modules,guest,etc,root}
        copy_with_libs "$root" "$busybox"
        [ "$busybox" = /bin/busybox ] || mv "$root$busybox" "$root/bin/busybox"
        for applet in $("$busybox" --list); do
            [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
        done
        for tool in "${tools_paths[@]}"; do
            rm -f "$root$tool" "$root/bin/$(basename "$tool")"
            copy_with_libs "$root" "$tool"
        done
        # rtla and trace-cmd load their plugins and read /etc files only optionally; chrt needs nothing else.
        cp "$kdir"/modules/*.ko "$root/lib/modules/"
        echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
        echo "root:x:0:" >"$root/etc/group"
        cat >"$root/init" <<EOF
#!/bin/sh
export PATH=/usr/bin:/usr/sbin:/bin:/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tracefs nodev /sys/kernel/tracing
mount -t debugfs nodev /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
for m in $virtio_modules; do insmod /lib/modules/\$m.ko || echo "guest: insmod \$m failed"; done
mkdir -p /tmp/out
cd /tmp
sh /guest/script.sh >/tmp/out/guest.log 2>&1
rc=\$?
echo \$rc >/tmp/out/guest.rc
tar cf /dev/vda -C /tmp/out . || echo "guest: cannot write /dev/vda"
sync
echo "LATSCOPE-GUEST-DONE rc=\$rc"
poweroff -f
EOF
        chmod +x "$root/init"
        (cd "$root" && find . | cpio -o -H newc --quiet) >"$out.tmp"
        rm -rf "$root"
        mv "$out.tmp" "$out"
    fi
    echo "$out"
}

# The part that changes each run: the latscope binary (and its libraries) and the guest script.
run_cpio() {
    local script=$1 out=$2 root
    root=$(mktemp -d)
    mkdir -p "$root/guest" "$root/usr/bin"
    copy_with_libs "$root" "$latscope_bin"
    [ "$latscope_bin" = "$root/usr/bin/latscope" ] || mv "$root$latscope_bin" "$root/usr/bin/latscope"
    cp "$script" "$root/guest/script.sh"
    (cd "$root" && find . | cpio -o -H newc --quiet) >"$out"
    rm -rf "$root"
}

run() {
    local script=$1 outdir=$2 kdir base rc
    [ -f "$script" ] || die "no guest script $script"
    [ -x "$latscope_bin" ] || die "no latscope binary at $latscope_bin (cargo build --release)"
    command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing (scripts/install-deps.sh installs qemu-system-x86)"
    kdir=$(kernel_dir)
    base=$(base_cpio "$kdir")
    work=$(mktemp -d)
    trap 'kill "${qemu:-}" 2>/dev/null || true; rm -rf "${work:-}"' EXIT
    run_cpio "$script" "$work/run.cpio"
    cat "$base" "$work/run.cpio" >"$work/initrd.cpio"
    truncate -s 128M "$work/out.img"
    # The monitor on a pair of FIFOs (qemu opens both read-write: neither side blocks): a guest that hangs has
    # its vCPUs' state dumped there before it is killed. nokaslr: the same kernel symbols at the same addresses
    # in every boot, so a dumped RIP can be looked up in /proc/kallsyms of any boot of the kernel.
    mkfifo "$work/monitor.in" "$work/monitor.out"
    qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m 1024 \
        -kernel "$kdir/vmlinuz" -initrd "$work/initrd.cpio" \
        -append "console=ttyS0 panic=-1 loglevel=4 nokaslr ${LATSCOPE_GUEST_APPEND:-}" \
        -drive "file=$work/out.img,format=raw,if=virtio" \
        -nographic -no-reboot -monitor "pipe:$work/monitor" -serial stdio </dev/null >"$work/console.log" 2>&1 &
    qemu=$!
    waited=0
    while kill -0 "$qemu" 2>/dev/null && [ "$waited" -lt "$timeout_s" ]; do
        sleep 1
        waited=$((waited + 1))
    done
    rc=0
    mkdir -p "$outdir"
    if kill -0 "$qemu" 2>/dev/null; then
        printf 'info cpus\ninfo registers -a\n' >"$work/monitor.in"
        sleep 2
        timeout 3 cat "$work/monitor.out" >"$outdir/monitor.txt" 2>&1 || true
        kill "$qemu" 2>/dev/null || true
        sleep 2
        kill -9 "$qemu" 2>/dev/null || true
        wait "$qemu" 2>/dev/null || true
        rc=124
    else
        wait "$qemu" || rc=$?
    fi
    cp "$work/console.log" "$outdir/console.log"
    [ $rc = 124 ] && die "guest timed out after ${timeout_s}s (console: $outdir/console.log; vCPU registers: $outdir/monitor.txt)"
    [ $rc = 0 ] || die "qemu exited with $rc (console: $outdir/console.log)"
    grep -q LATSCOPE-GUEST-DONE "$work/console.log" || die "the guest stopped before its script ended (console: $outdir/console.log)"
    tar xf "$work/out.img" -C "$outdir" 2>/dev/null || die "the guest wrote no output (console: $outdir/console.log)"
    cat "$kdir/package" >"$outdir/kernel-package"
    return "$(cat "$outdir/guest.rc" 2>/dev/null || echo 1)"
}

case ${1:-} in
    run) [ $# = 3 ] || die "usage: $0 run GUEST_SCRIPT OUTDIR"; run "$2" "$3" ;;
    fetch) flavour=rt; kernel_dir; flavour=std; kernel_dir ;;
    *) die "usage: $0 run GUEST_SCRIPT OUTDIR | $0 fetch" ;;
esac
