#!/usr/bin/env bash
# Side-by-side benchmark of `latscope noise` against rt-tests' oslat on the same CPU, alternated in one run
# (oslat, latscope, oslat, latscope, ...), so that both see the same machine state.
#
# Prints, per pair and as medians over the pairs:
#   - loop cost: counter ticks per iteration (run time x counter frequency / iterations), for both tools,
#     and the ratio latscope/oslat (<= 1.0 means latscope's loop is at least as cheap);
#   - the longest gap of each tool and the ratio;
#   - total noise above the threshold, computed the same way for both from their histograms: oslat has 1 us
#     buckets and an open last one (>= 1024 us), so gaps beyond it count as 1024 us except the longest, and
#     latscope's histogram is clamped the same way for the ratio; latscope's own exact total is shown too.
#
# Usage: scripts/bench-noise-vs-oslat.sh        (env: CPU=1 DUR=5 PAIRS=3 PRIO=0 THRESHOLD_US=5)
# Never pass/fail: it prints figures. Needs root for oslat's mlock (and for PRIO > 0).
set -euo pipefail

CPU=${CPU:-1}
DUR=${DUR:-5}
PAIRS=${PAIRS:-3}
PRIO=${PRIO:-0}
THRESHOLD_US=${THRESHOLD_US:-5}
cd "$(dirname "$0")/.."
BIN=${LATSCOPE:-target/release/latscope}

command -v oslat >/dev/null 2>&1 || { echo "oslat not found: install rt-tests (scripts/install-deps.sh)" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "python3 not found (scripts/install-deps.sh)" >&2; exit 1; }
[ -x "$BIN" ] || cargo build --release -p latscope

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

oslat_prio=()
[ "$PRIO" -gt 0 ] && oslat_prio=(-f "$PRIO")

echo "noise benchmark: CPU $CPU, $DUR s per run, $PAIRS alternated pairs, priority $PRIO (0 = SCHED_OTHER), threshold ${THRESHOLD_US}us"
for i in $(seq 1 "$PAIRS"); do
    oslat -c "$CPU" -D "$DUR" -q -b 1024 "${oslat_prio[@]}" --json="$tmp/oslat.$i.json" >/dev/null
    "$BIN" noise -c "$CPU" -D "${DUR}s" -p "$PRIO" --threshold "${THRESHOLD_US}us" -q \
        --json "$tmp/latscope.$i.json" >/dev/null
done

python3 - "$tmp" "$PAIRS" "$THRESHOLD_US" <<'EOF'
import json, statistics, sys

tmp, pairs, thr_us = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
OSLAT_LAST_US = 1024  # oslat -b 1024: 1 us buckets, the last one open

def oslat(path):
    t = next(iter(json.load(open(path))["thread"].values()))
    hist = {int(k): v for k, v in t["histogram"].items()}
    loops = sum(hist.values())
    freq = t["freq"] * 1e6
    last = max(hist) if hist else 0
    noise_us = 0.0
    for us, n in hist.items():
        if us > thr_us:
            # The last bucket holds every longer latency: count the known maximum once, the rest at the bucket.
            if us == last and n > 0:
                noise_us += max(t["max"], us) + (n - 1) * us
            else:
                noise_us += us * n
    return dict(cyc=t["duration"] * freq / loops, max_us=float(t["max"]), noise_us=noise_us, loops=loops,
                secs=t["duration"])

def latscope(path):
    r = json.load(open(path))
    c = r["cpus"][0]
    noise_hist_us = sum(b["high_ns"] * b["count"] for b in c["histogram"] if b["high_ns"] > thr_us * 1000) / 1e3
    # The same total as oslat can see it: every gap past oslat's last bucket counted at that bucket,
    # except the longest, counted in full.
    cap_us = float(OSLAT_LAST_US)
    like_oslat = sum(min(b["high_ns"] / 1e3, cap_us) * b["count"] for b in c["histogram"]
                     if b["high_ns"] > thr_us * 1000)
    like_oslat += max(c["max_gap_ns"] / 1e3 - cap_us, 0.0)
    return dict(cyc=c["runtime_ns"] * r["counter"]["freq_hz"] / 1e9 / c["loops"], quiet=c["loop_cycles"],
                max_us=c["max_gap_ns"] / 1e3, noise_us=like_oslat, hist_us=noise_hist_us, exact_us=c["noise_ns"] / 1e3,
                loops=c["loops"], secs=c["runtime_ns"] / 1e9)

rows = []
print(f"{'pair':<5}{'oslat cyc/it':>13}{'latscope':>10}{'ratio':>7}{'(quiet)':>9}"
      f"{'oslat max':>11}{'latscope':>10}{'oslat noise':>13}{'latscope':>10}{'latscope exact':>16}")
for i in range(1, pairs + 1):
    o, l = oslat(f"{tmp}/oslat.{i}.json"), latscope(f"{tmp}/latscope.{i}.json")
    rows.append((o, l))
    print(f"{i:<5}{o['cyc']:>13.1f}{l['cyc']:>10.1f}{l['cyc'] / o['cyc']:>7.2f}{l['quiet']:>9.1f}"
          f"{o['max_us']:>9.0f}us{l['max_us']:>8.0f}us{o['noise_us'] / 1e3:>11.2f}ms{l['noise_us'] / 1e3:>8.2f}ms"
          f"{l['exact_us'] / 1e3:>14.2f}ms")

med = lambda xs: statistics.median(xs)
cost = med([l["cyc"] / o["cyc"] for o, l in rows])
mx = med([l["max_us"] / o["max_us"] for o, l in rows if o["max_us"] > 0] or [float("nan")])
tot = med([l["noise_us"] / o["noise_us"] for o, l in rows if o["noise_us"] > 0] or [float("nan")])
print(f"median ratios latscope/oslat: loop cost {cost:.2f}, max gap {mx:.2f}, total noise {tot:.2f}")
print(f"run-to-run spread of oslat alone: max gap {min(o['max_us'] for o, _ in rows):.0f}-{max(o['max_us'] for o, _ in rows):.0f}us, "
      f"total noise {min(o['noise_us'] for o, _ in rows) / 1e3:.2f}-{max(o['noise_us'] for o, _ in rows) / 1e3:.2f}ms")
EOF
