#!/usr/bin/env bash
# A short libFuzzer run of each network parser (RTP with its payload descriptors, RTCP, the
# depacketizers and receive pipelines' packet sides, SDP), of the WebRTC transport's inbound
# paths (datagrams into a DTLS association, SRTP/SRTCP unprotect), and of the file parsers
# (WAV, Ogg Opus, Y4M, IVF, WebM: FuzzContainers, seeded with files ffmpeg, opusenc and vpxenc
# wrote), from the committed seeds in Fuzz/Seeds. The cases run in waves of at most three,
# SECONDS/2 each (default 60: on two cores a case gets about the same CPU time either way, and
# few ASan processes run at a time). Exit status non-zero on any finding (the crash input is
# left in .fuzz/smoke/).
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
  for product in FuzzPackets FuzzContainers; do
    swift build --package-path Fuzz --product "$product" --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address \
      >>.fuzz/build.log 2>&1 || return 1
  done
}
: >.fuzz/build.log
if ! build && ! { rm -rf Fuzz/.build && build; }; then
  echo "fuzz: the harness did not build:" >&2
  grep -E "error:" .fuzz/build.log | head -20 >&2 || tail -40 .fuzz/build.log >&2
  exit 1
fi
work=".fuzz/smoke"
rm -rf "$work"
waves=("rtp rtcp depacketizers" "sdp dtls srtp" "containers")
per_case=$((seconds / 2 > 0 ? seconds / 2 : 1))
failed=0
for wave in "${waves[@]}"; do
  read -r -a cases <<<"$wave"
  pids=()
  for case in "${cases[@]}"; do
    mkdir -p "$work/$case"
    cp Fuzz/Seeds/"$case"/* "$work/$case/"
    # No Swift backtracer: under ASan it trips over its own stack reads and can hang, hiding the
    # fatalError that a finding is.
    binary="Fuzz/.build/debug/FuzzPackets"
    [[ "$case" == containers ]] && binary="Fuzz/.build/debug/FuzzContainers"
    SWIFT_BACKTRACE=enable=no FUZZ_CASE="$case" "$binary" -max_total_time="$per_case" -use_value_profile=1 \
      -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$work/$case-" -print_final_stats=1 "$work/$case" \
      >"$work/$case.log" 2>&1 &
    pids+=($!)
  done
  for index in "${!cases[@]}"; do
    case="${cases[$index]}"
    if wait "${pids[$index]}"; then
      runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$case.log" | grep -o '[0-9]*$' || echo "?")
      echo "fuzz $case: ${per_case} s, $runs runs, nothing found"
    else
      echo "fuzz $case: FOUND something (see $work/$case.log and $work/$case-*)" >&2
      tail -30 "$work/$case.log" >&2
      failed=1
    fi
  done
done
exit "$failed"
