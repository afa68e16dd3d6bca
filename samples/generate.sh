#!/usr/bin/env bash
# Regenerates the bundled sample media from Debian tools, deterministically:
#   speech-48k-stereo.wav  4 s of synthetic speech (espeak-ng), 48 kHz stereo, 16-bit
#   motion-640x360.ivf     3 s of moving test pattern at 30 fps, VP8 by vpxenc (fixed speed)
#   odd-161x91.y4m         2 s of moving test pattern at 15 fps, an odd picture size
# Needs: espeak-ng ffmpeg vpx-tools (apt-get install espeak-ng ffmpeg vpx-tools).
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

espeak-ng -v en-us -s 150 -w "$tmp/voice.wav" \
  "Media pipeline sample. One, two, three, four. The quick brown fox jumps over the lazy dog."
# Left: the voice; right: the same voice 7 ms later and quieter, so the channels differ.
ffmpeg -nostdin -loglevel error -y -i "$tmp/voice.wav" -filter_complex \
  "[0]aresample=48000:resampler=soxr,apad,atrim=0:4,asplit[l][r];[r]adelay=7,volume=0.7[rd];[l][rd]join=inputs=2:channel_layout=stereo[out]" \
  -map "[out]" -c:a pcm_s16le -bitexact speech-48k-stereo.wav

ffmpeg -nostdin -loglevel error -y -f lavfi -i "testsrc2=size=640x360:rate=30:duration=3" \
  -pix_fmt yuv420p -f yuv4mpegpipe "$tmp/motion.y4m"
vpxenc --codec=vp8 --good --cpu-used=4 --target-bitrate=600 --end-usage=cbr --kf-max-dist=90 \
  --threads=1 --quiet --ivf -o motion-640x360.ivf "$tmp/motion.y4m" 2>/dev/null

ffmpeg -nostdin -loglevel error -y -f lavfi -i "testsrc2=size=176x96:rate=15:duration=2" -vf "crop=161:91:8:4:exact=1" \
  -pix_fmt yuv420p -f yuv4mpegpipe -bitexact odd-161x91.y4m
ls -l speech-48k-stereo.wav motion-640x360.ivf odd-161x91.y4m
