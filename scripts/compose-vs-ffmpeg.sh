#!/usr/bin/env bash
# Times `pipebench compose` of 16 VP8 640x360 files into a 1920x1080 grid against ffmpeg's
# xstack doing the same in the same run: same inputs, size, rate, libvpx realtime encoder at
# speed 8, 4 Mbit/s, 2 threads. Prints both wall times and their ratio.
#   scripts/compose-vs-ffmpeg.sh [runs]     (release pipebench: swift build -c release first)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
pipebench=.build/release/pipebench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
inputs=()
for i in $(seq 1 16); do cp samples/motion-640x360.ivf "$tmp/in$i.ivf"; inputs+=("$tmp/in$i.ivf"); done
ffmpeg_inputs=()
scales=""
stack=""
layout=""
for i in $(seq 0 15); do
  ffmpeg_inputs+=(-i "${inputs[$i]}")
  scales+="[$i:v]scale=480:270:flags=bilinear[v$i];"
  stack+="[v$i]"
  layout+="$(( (i % 4) * 480 ))_$(( (i / 4) * 270 ))|"
done
filter="${scales}${stack}xstack=inputs=16:layout=${layout%|}[v]"
ours() { "$pipebench" compose "${inputs[@]}" "$tmp/ours.webm" --size 1920x1080 --fps 30 --speed -8 --bitrate 4M \
  --threads 2 --quiet >/dev/null; }
theirs() { ffmpeg -nostdin -v error -y "${ffmpeg_inputs[@]}" -filter_complex "$filter" -map "[v]" -r 30 -c:v libvpx \
  -deadline realtime -cpu-used 8 -b:v 4M -threads 2 -filter_complex_threads 2 "$tmp/ffmpeg.webm"; }
seconds() { local start end; start=$(date +%s.%N); "$@"; end=$(date +%s.%N); echo "$end - $start" | bc; }
for run in $(seq 1 "$runs"); do
  a=$(seconds ours)
  b=$(seconds theirs)
  echo "run $run: pipebench compose ${a}s, ffmpeg xstack ${b}s, ratio ours/ffmpeg $(echo "scale=3; $a / $b" | bc)"
done
ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$tmp/ours.webm" | head -1 |
  sed 's/^/pictures in ours: /'
ffprobe -v error -count_frames -show_entries stream=nb_read_frames -of csv=p=0 "$tmp/ffmpeg.webm" | head -1 |
  sed 's/^/pictures in ffmpeg'"'"'s: /'
