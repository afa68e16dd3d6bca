#!/usr/bin/env bash
# After the test suite: nothing the tests made may be left behind. Lists, and fails on, any
# network namespace of ours (mpjanus*, mpa*, mpb*), process started from this checkout's build
# (pipebench, the delay line) or naming a test's temporary folder (Janus, GStreamer, ffmpeg,
# Chromium and its driver), iptables rule of ours in this machine's own tables, and temporary file or folder
# (mediapipeline-*, mpjanus*). Run by scripts/test.sh once the suite has passed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
temporary=${TMPDIR:-/tmp}
found=0
report() { echo "left behind: $1"; found=1; }

while read -r name _; do
    case "$name" in mpjanus* | mpa[0-9]* | mpb[0-9]*) report "network namespace $name" ;; esac
done < <(ip netns list 2>/dev/null)

# Processes whose command line names this checkout's build or a test's temporary files.
while read -r pid args; do
    [ "$pid" = "$$" ] && continue
    case "$args" in
    *"$root/.build"* | *mpjanus* | *mediapipeline-tests-*)
        report "process $pid: ${args:0:160}" ;;
    esac
done < <(ps -eo pid=,args= | grep -v -e "leftovers.sh" -e " ps -eo" -e "grep -v")

if command -v iptables >/dev/null && iptables -S >/dev/null 2>&1; then
    while read -r rule; do report "iptables rule: $rule"; done < <(iptables -S | grep -e '"mp-' -e 'mp-count' -e 'mp-video' -e 'mp-offered' || true)
fi

for path in "$temporary"/mediapipeline-tests-* "$temporary"/mpjanus*; do
    [ -e "$path" ] && report "temporary file $path"
done

if [ "$found" -ne 0 ]; then
    echo "the test suite left the above behind" >&2
    exit 1
fi
echo "leftovers: none (namespaces, processes, iptables rules, temporary files)"
