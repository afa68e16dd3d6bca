#!/usr/bin/env bash
# A short libFuzzer run of each network parser (RTP with its payload descriptors, RTCP, the
# depacketizers and receive pipelines' packet sides, SDP), from the committed seeds in
# Fuzz/Seeds. Runs the four at once, SECONDS each (default 60). Exit status non-zero on any
# finding (the crash input is left in .fuzz/smoke/).
#   scripts/fuzz-smoke.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
seconds="${1:-60}"
mkdir -p .fuzz
# The build's output is kept, and shown only when it fails (compiler errors go to stdout). A
# failed incremental build is tried once more from clean: Fuzz/.build may not have seen files
# added to the library since it was made.
build() {
  swift build --package-path Fuzz --product FuzzPackets --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address \
    >.fuzz/build.log 2>&1
}
if ! build && ! { rm -rf Fuzz/.build && build; }; then
  echo "fuzz: the harness did not build:" >&2
  grep -E "error:" .fuzz/build.log | head -20 >&2 || tail -40 .fuzz/build.log >&2
  exit 1
fi
binary="Fuzz/.build/debug/FuzzPackets"
work=".fuzz/smoke"
rm -rf "$work"
pids=()
cases=(rtp rtcp depacketizers sdp)
for case in "${cases[@]}"; do
  mkdir -p "$work/$case"
  cp Fuzz/Seeds/"$case"/* "$work/$case/"
  FUZZ_CASE="$case" "$binary" -max_total_time="$seconds" -use_value_profile=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$work/$case-" -print_final_stats=1 "$work/$case" >"$work/$case.log" 2>&1 &
  pids+=($!)
done
failed=0
for index in "${!cases[@]}"; do
  case="${cases[$index]}"
  if wait "${pids[$index]}"; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$case.log" | grep -o '[0-9]*$' || echo "?")
    echo "fuzz $case: ${seconds} s, $runs runs, nothing found"
  else
    echo "fuzz $case: FOUND something (see $work/$case.log and $work/$case-*)" >&2
    tail -30 "$work/$case.log" >&2
    failed=1
  fi
done
exit "$failed"
