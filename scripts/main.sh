#!/usr/bin/env bash
# The main job: installs what is missing, builds in release mode, and runs a multi-channel
# session on the in-process hub (2 channels × 3 remote users, 3 s; each remote user replays its
# own variant of the bundled samples, the local user publishes in one channel and subscribes
# everywhere). Outputs go to ./out/simulate: per channel a WebM file of its grid (each tile
# labelled with its uid) and its mix, playable in ffplay and browsers; playout.wav, a Y4M per
# canvas and a PNG grid per channel.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift run -c release pipebench simulate "$@"
