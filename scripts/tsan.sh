#!/usr/bin/env bash
# Runs the engine's concurrency, network and packet suites under ThreadSanitizer (its own build
# folder, .build-tsan). `swift test` exits non-zero on any report, even where the tests passed.
#   scripts/tsan.sh                      the default suites
#   scripts/tsan.sh --filter Concurrency  a subset
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# The suites that run `pipebench` as a child process run its ThreadSanitizer build, so a race in
# the child fails the test (the child exits 66). (Until this was found, every such suite was left
# out: the sanitized pipebench died at start, its malloc interposer called by the loader before
# the sanitizer's runtime was up; sanitized builds now have no interposer.) Left out are the
# tests whose bounds are real-time figures that ThreadSanitizer's slowdown distorts (5-15 times
# on this machine's two cores): RTPImpairedNetworkTests (PSNR and frames under loss), the Janus
# three-engine mix, the Janus kill timing, the Janus loss, lip-sync and browser suites,
# ChannelConformanceTests (its Janus variants run the test binary inside a namespace, its
# LocalHub variants run media in real time), keyframeIsPaced (packets timed in milliseconds) and
# noPacingReceived (a burst of 201 packets in 0.1 s, which the sanitized receiver cannot drain
# before the socket's buffer overflows). Also left out, as single-threaded media work that only
# loads the run: the adaptation session (32 s of 640x360 video), VP9, resolution-change,
# playout-format and API-gap tests, and the CLI's send/receive processes (RTPNetworkTestsCLI, and
# sendToFFmpeg and sendEncodedToReceive: in one run the sanitized sender, starved on two cores,
# fell silent past receive's 1.5 s idle bound, which ended it with half the speech, and ffmpeg's
# recording of it failed; both pass in test.sh, and the RTP session's threads are checked here by
# the in-process RTPSessionTests); beside them the Janus connect-timeout bound (4.5 s) took
# 38-76 s. ffmpeg's lip-sync marks (ffmpegSender: ±45 ms
# at every mark of a real-time recording) are left out too: alone under ThreadSanitizer they
# measured 52 ms at three marks, beside a second suite 96 ms (they pass in test.sh). And the SRTP
# bench's ratio to libsrtp2 (it times the release pipebench, nothing sanitized: judged in
# test.sh's serial pass; 1.23 against 1.1 beside the sanitized suites).
# The WebRTC transport's suites (ICE agent, DTLS-SRTP, connections, garbage) and Janus signalling
# (a real Janus in a network namespace: root) run too; the C libraries (libnice, GLib, OpenSSL,
# libsrtp2) are not instrumented, so only the Swift side and the CWebRTC glue are checked.
# Dual stream on LocalHub (DualStreamTests: layers chosen per subscriber, switching under loss
# and jitter, fallback; VideoLayerForwardingTests: the hub's layer switching) runs too: 34 s
# here under ThreadSanitizer.
# Janus signalling runs in a second invocation of its own, after the rest: its connect-timeout
# bound (4.5 s) is wall time of an actor on the shared cooperative pool, whose two threads (two
# cores) the other suites' blocking waits for child processes hold; beside them it took 38-76 s
# in CI, alone it takes the timeout.
filter=(--filter "EngineConcurrencyTests|EngineLossTests|LocalHubNetworkTests|Engine|RTP|RTCP|AudioReceiver|RecordingTests|ICEAgent|WebRTC|DTLS|JanusChannelTests|DualStreamTests|VideoLayerForwardingTests"
  --skip "RTPImpairedNetworkTests|JanusChannelTests/(threeEnginesTwoChannels|janusKilled)|JanusBrowserTests|JanusLossTests|JanusLipSyncTests|ChannelConformanceTests|keyframeIsPaced|noPacingReceived|EngineAdaptationTests|EngineVP9Tests|RTPNetworkTestsVP9|ResolutionChange|EnginePlayoutFormatTests|EngineAPIGapTests|RTPNetworkTestsCLI|RTPNetworkTests/(sendToFFmpeg|sendEncodedToReceive)|benchAllocatesNothing|ffmpegSender")
[[ $# -gt 0 ]] && filter=("$@")
swift build --build-tests --sanitize=thread --scratch-path .build-tsan
MEDIAPIPELINE_TEST_TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/mediapipeline-run.XXXXXX")
chmod 1777 "$MEDIAPIPELINE_TEST_TMPDIR"
export MEDIAPIPELINE_TEST_TMPDIR
SWIFT_BACKTRACE=enable=no swift test --skip-build --sanitize=thread --scratch-path .build-tsan "${filter[@]}"
if [[ $# -eq 0 ]]; then
    SWIFT_BACKTRACE=enable=no swift test --skip-build --sanitize=thread --scratch-path .build-tsan --filter JanusSignalling
fi
bash scripts/leftovers.sh
