#!/usr/bin/env bash
# The main job: installs what is missing, builds in release mode, and round-trips the bundled
# samples (WAV → Ogg Opus → WAV, IVF → Y4M → VP8/VP9 IVF → Y4M) into ./out, with SNR and PSNR.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift run -c release pipebench roundtrip "$@"
