#!/usr/bin/env bash
# Runs the engine's concurrency, network and packet suites under ThreadSanitizer (its own build
# folder, .build-tsan). `swift test` exits non-zero on any report, even where the tests passed.
#   scripts/tsan.sh                      the default suites
#   scripts/tsan.sh --filter Concurrency  a subset
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# RTPNetworkTests, RTPImpairedNetworkTests and the Janus suites that run `pipebench join`
# (JanusChannelTests, JanusBrowserTests, JanusLossTests) are left out: they run pipebench as child
# processes, and the ThreadSanitizer build of pipebench dies at start (signal 11) when a test
# spawns it. keyframeIsPaced times packets in milliseconds, which ThreadSanitizer's slowness
# distorts (an unpaced keyframe takes 36 ms to send under it); it runs in the normal suite.
# ChannelConformanceTests is left out too: its Janus variants run the test binary as a child
# process inside a namespace (not tried under ThreadSanitizer), and its LocalHub variants run
# media in real time, which ThreadSanitizer's slowdown would distort as it does keyframeIsPaced.
# The WebRTC transport's suites (ICE agent, DTLS-SRTP, connections, garbage) and Janus signalling
# (a real Janus in a network namespace: root) run too; the C libraries (libnice, GLib, OpenSSL,
# libsrtp2) are not instrumented, so only the Swift side and the CWebRTC glue are checked.
filter=(--filter "EngineConcurrencyTests|EngineLossTests|LocalHubNetworkTests|Engine|RTP|RTCP|AudioReceiver|RecordingTests|ICEAgent|WebRTC|DTLS|JanusSignalling"
  --skip "RTPNetworkTests|RTPImpairedNetworkTests|LipSyncRTPTests|JanusChannelTests|JanusBrowserTests|JanusLossTests|ChannelConformanceTests|keyframeIsPaced")
[[ $# -gt 0 ]] && filter=("$@")
swift build --build-tests --sanitize=thread --scratch-path .build-tsan
SWIFT_BACKTRACE=enable=no swift test --skip-build --sanitize=thread --scratch-path .build-tsan "${filter[@]}"
