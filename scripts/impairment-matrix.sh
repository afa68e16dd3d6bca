#!/usr/bin/env bash
# Regenerates the impairment matrix (docs/impairment-matrix.md, shown in docs/loss-and-recovery.md): every cell of loss ×
# jitter × reordering × round trip, 2 channels × 4 remote users for 30 s each, measured against a
# lossless twin viewer. Runs two processes (one per core) and takes about half an hour here.
#   scripts/impairment-matrix.sh                 the whole matrix into docs/impairment-matrix.md
#   scripts/impairment-matrix.sh --duration 10   shorter cells (any pipebench matrix option)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build -c release --product pipebench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for k in 0 1; do .build/release/pipebench matrix --shard "$k/2" --markdown "$out/$k.md" "$@" > "$out/$k.log" & done
wait
mkdir -p docs
{
    head -3 "$out/0.md"
    # Interleave the shards' rows back into matrix order (shard k holds cells k, k+2, ...).
    paste -d '\n' <(tail -n +4 "$out/0.md") <(tail -n +4 "$out/1.md") | sed '/^$/d'
} > docs/impairment-matrix.md.partial
mv docs/impairment-matrix.md.partial docs/impairment-matrix.md
echo "docs/impairment-matrix.md updated"
