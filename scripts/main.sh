#!/usr/bin/env bash
# The main job: installs what is missing, builds in release mode, and runs a multi-channel
# session on the in-process hub (2 channels × 3 remote users, 3 s; remote users replay the
# bundled samples, the local user publishes in one channel and subscribes everywhere).
# Outputs go to ./out/simulate: playout.wav, a Y4M per canvas, a PNG grid per channel.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift run -c release pipebench simulate "$@"
