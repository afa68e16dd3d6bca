#!/usr/bin/env bash
# Runs the benchmark package (Benchmarks/) and checks its malloc counts against the committed
# thresholds (Benchmarks/Thresholds/*.p90.json). Allocation counts are deterministic and gated;
# wall-clock figures are printed, not gated. Exit status: 0 when every count matches.
#   scripts/bench-check.sh                 all suites
#   scripts/bench-check.sh --filter mix    a subset (regular expression on benchmark names)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cd Benchmarks
swift package benchmark thresholds check --no-progress "$@"
