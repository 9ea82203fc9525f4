#!/usr/bin/env bash
# Runs every benchmark, one after the other (they measure latency: never two at once), each printing its
# ratio against the reference tool run side by side: cyclictest, oslat, trace-cmd report, and latscope
# without --trace. Needs root and tracefs for the measuring ones. Usage: scripts/bench-all.sh
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
for b in bench-timer-vs-cyclictest bench-noise-vs-oslat bench-trace-overhead bench-decode-text bench-decode-dat bench-monitor bench-analyze-scale; do
    echo "=== $b"
    scripts/$b.sh || { echo "=== $b failed (exit $?)"; status=1; }
done
exit $status
