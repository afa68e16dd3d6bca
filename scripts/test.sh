#!/usr/bin/env bash
# Installs what is missing (codec libraries and the reference tools ffmpeg, opus-tools,
# vpx-tools), builds the release pipebench (the allocation test measures optimised code), then
# runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
swift build -c release --product pipebench
swift build --build-tests
swift test --skip-build "$@"
