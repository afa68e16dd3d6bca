#!/usr/bin/env bash
# Installs the Debian packages MediaPipeline needs, only those missing.
#   scripts/install-deps.sh          the codec libraries, the WebRTC transport's libnice,
#                                    libsrtp2 and OpenSSL, and libcurl for the Janus API (to
#                                    build and run)
#   scripts/install-deps.sh --test   also the reference tools the tests compare against (ffmpeg,
#                                    opusdec/opusenc, vpxdec/vpxenc, mkvinfo/mkvmerge, GStreamer,
#                                    and iproute2/iptables/libnetfilter-queue-dev for the tests'
#                                    own network namespaces) and Janus, the SFU the WebRTC tests
#                                    join
set -euo pipefail
packages=(pkg-config libopus-dev libvpx-dev libsoxr-dev libyuv-dev zlib1g-dev libssl-dev libcurl4-openssl-dev libnice-dev libsrtp2-dev)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(ffmpeg opus-tools vpx-tools mkvtoolnix gstreamer1.0-tools gstreamer1.0-plugins-base
    gstreamer1.0-plugins-good gcc libc6-dev iproute2 iptables libnetfilter-queue-dev janus socat)
  # The browser test (Tests/Browser): headless Chromium driven by Debian's Selenium (run with
  # /usr/bin/python3) through chromium-driver, the page on janus.js and its adapter.
  packages+=(chromium chromium-driver python3-selenium libjs-janus-gateway libjs-webrtc-adapter)
fi
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  sudo=""
  [[ "$(id -u)" -ne 0 ]] && sudo="sudo"
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v swift >/dev/null 2>&1; then
  if [[ -x /opt/swift/usr/bin/swift ]]; then
    echo "swift is not on PATH: export PATH=/opt/swift/usr/bin:\$PATH" >&2
  else
    echo "no Swift toolchain found: Swift 6.1 or later is needed (swift.org)" >&2
  fi
  exit 1
fi
