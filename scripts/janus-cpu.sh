#!/usr/bin/env bash
# CPU time one engine spends receiving N users through a local Janus, per user-second, against the
# same session on the in-process hub (`pipebench simulate`). Root (a network namespace).
#
#   scripts/janus-cpu.sh                        16 publishers, 20 s measured after 15 s to settle
#   scripts/janus-cpu.sh --users 8 --seconds 30
#   scripts/janus-cpu.sh --attribute 5          also: gdb on the subscriber for 5 s, allocations
#                                               per packet by who made them (malloc-attribution.py)
#   scripts/janus-cpu.sh --full-publishers      publishers decode each other too (join's default)
#
# Janus (Debian's 1.1.x) runs under scripts/janus.sh --namespace (a namespace with a veth end at
# 127.0.0.2, ICE restricted to it), its room "channel-1" taking 24 publishers. N `pipebench join --publish channel-1` processes (uid 1…N, variant uid % 8,
# pre-encoded Opus 32 kbit/s + VP8 640x360 15 fps) and one subscriber (`--subscribe channel-1`,
# uid 1000) run inside it, every one a separate process (join publishes one user). The
# subscriber's utime + stime (/proc/PID/stat) over the window, divided by N × the window, is its
# CPU per user-second; so for `pipebench simulate --users N --channels 1 --realtime --no-publish`
# (whose process also runs the N remote users' replay). Both write their channel's WebM (join always
# does; simulate with its files on, and again with --no-canvas-video). Uses .build/release/pipebench
# (PIPEBENCH=path to choose another). --attribute runs after the window (gdb slows the process
# a hundredfold): the subscriber, then publisher 1.
#
# Check the "users decoding" line: on 2 cores, 16 publishers, Janus and the subscriber saturate the
# machine and some users' video stops, which lowers the subscriber's cost; 8 users fit.
set -euo pipefail
cd "$(dirname "$0")/.."

users=16
seconds=20
settle=15
attribute=0
full_publishers=0
port=8188
namespace="mpcpu$$"
while [[ $# -gt 0 ]]; do
    case "$1" in
    --users) users="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --settle) settle="$2"; shift 2 ;;
    --attribute) attribute="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --full-publishers) full_publishers=1; shift ;;
    -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
pipebench=${PIPEBENCH:-.build/release/pipebench}
[[ -x "$pipebench" ]] || { echo "no $pipebench (swift build -c release --product pipebench)" >&2; exit 1; }
pipebench=$(realpath "$pipebench")
command -v janus >/dev/null || { echo "janus is not installed (apt-get install janus)" >&2; exit 1; }

folder=$(mktemp -d /tmp/janus-cpu-XXXXXX)
mkdir -p "$folder/out"
pids=()
# `ip netns exec` waits for the command it starts: its child is pipebench.
child() { awk '{ print $1 }' "/proc/$1/task/$1/children" 2>/dev/null || true; }
cleanup() {
    local all=()
    for pid in "${pids[@]}"; do all+=("$pid" $(child "$pid")); done
    for pid in "${all[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
    sleep 2
    for pid in "${all[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    # janus.sh stops Janus and removes its namespace and folder on SIGTERM.
    [[ -n "${janus_script:-}" ]] && kill -TERM "$janus_script" 2>/dev/null || true
    wait 2>/dev/null || true
    [[ -n "${KEEP:-}" ]] || rm -rf "$folder"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Janus as scripts/janus.sh runs it in a namespace of its own, its rooms taking 24 publishers.
bash scripts/janus.sh --namespace "$namespace" --port "$port" --publishers 24 >"$folder/janus.log" 2>&1 &
janus_script=$!
run() { ip netns exec "$namespace" "$@"; }
for _ in $(seq 100); do
    if ip netns list | grep -q "^$namespace" && run ss -Hltn "sport = :$port" | grep -q .; then break; fi
    sleep 0.1
done
url="http://127.0.0.1:$port/janus"
duration=$((settle + seconds + 30 + attribute * 4))

ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# A publisher also subscribes to its channel (join has no publish-only mode): unless --full-publishers,
# each mutes every other user's audio and video at 6 s and again at 12 s (for later joiners), so
# 2 cores are not spent on N engines decoding N-1 users each.
mutes=()
if [[ "$full_publishers" == 0 ]]; then
    for at in 6 12; do
        for other in $(seq 1 "$users"); do
            mutes+=(--at "$at:mute-remote-audio:$other" --at "$at:mute-remote-video:$other")
        done
    done
fi
for uid in $(seq 1 "$users"); do
    run "$pipebench" join "$url" --local-address 127.0.0.2 --publish channel-1 --uid "$uid" \
        --variant $((uid % 8)) --duration "$duration" --output "$folder/out/publisher-$uid" "${mutes[@]}" \
        >"$folder/publisher-$uid.log" 2>&1 &
    pids+=("$!")
    sleep 0.3
done
run "$pipebench" join "$url" --local-address 127.0.0.2 --subscribe channel-1 --uid 1000 \
    --duration "$duration" --output "$folder/out/subscriber" >"$folder/subscriber.log" 2>&1 &
subscriber=$!
pids+=("$subscriber")
sleep "$settle"
subscriber=$(child "$subscriber")
janus_pid=$(for pid in $(ip netns pids "$namespace"); do
    if [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == janus ]]; then echo "$pid"; fi
done | head -1)
publisher_pids=()
for pid in "${pids[@]:0:$users}"; do publisher_pids+=("$(child "$pid")"); done
if ! kill -0 "$subscriber" 2>/dev/null; then
    echo "the subscriber ended early:" >&2
    tail -20 "$folder/subscriber.log" >&2
    exit 1
fi
load_before=$(awk '{ print $1 }' /proc/loadavg)
idle_before=$(awk '/^cpu / { print $5 + $6 }' /proc/stat)
total_before=$(awk '/^cpu / { s = 0; for (i = 2; i <= NF; i++) s += $i; print s }' /proc/stat)
before=$(cpu_ticks "$subscriber")
publishers_before=0
for pid in "${publisher_pids[@]}"; do publishers_before=$((publishers_before + $(cpu_ticks "$pid"))); done
sleep "$seconds"
after=$(cpu_ticks "$subscriber")
publishers_after=0
for pid in "${publisher_pids[@]}"; do publishers_after=$((publishers_after + $(cpu_ticks "$pid"))); done
idle_after=$(awk '/^cpu / { print $5 + $6 }' /proc/stat)
total_after=$(awk '/^cpu / { s = 0; for (i = 2; i <= NF; i++) s += $i; print s }' /proc/stat)
janus_cpu=$(cpu_ticks "$janus_pid")
# What the subscriber received over the window: per remote user, the last video frame rate and
# audio bitrate it reported.
statistics=$(python3 - "$folder/subscriber.log" <<'PY'
import re, sys
video, audio = {}, {}
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"remoteVideoStats\(RemoteVideoStats\(uid: (\d+).*?receivedBitrateKbps: (\d+), decoderOutputFrameRate: ([\d.]+)", line)
    if m: video[m[1]] = (int(m[2]), float(m[3]))
    m = re.search(r"remoteAudioStats\(RemoteAudioStats\(uid: (\d+).*?receivedBitrateKbps: (\d+)", line)
    if m: audio[m[1]] = int(m[2])
live = [u for u, (_, fps) in video.items() if fps >= 10]
print("users with video reported: %d, decoding >= 10 fps: %d; with audio > 0 kbit/s: %d"
      % (len(video), len(live), sum(1 for b in audio.values() if b > 0)))
if video:
    print("video fps min/median: %.1f / %.1f; kbit/s in all: video %d, audio %d" % (
        min(f for _, f in video.values()), sorted(f for _, f in video.values())[len(video) // 2],
        sum(b for b, _ in video.values()), sum(audio.values())))
PY
)

if [[ "$attribute" -gt 0 ]]; then
    echo "== allocations in the subscriber under gdb for $attribute s"
    gdb -p "$subscriber" -batch -ex "set \$seconds = $attribute" -x scripts/malloc-attribution.py 2>&1 \
        | grep -v -E "^\[|^Using|^warning|^0x|in __|^Reading|^Downloading|^During|^[0-9]+[[:space:]]|^Thread|^Program|^$" || true
    echo "== allocations in publisher 1 under gdb for $attribute s"
    gdb -p "${publisher_pids[0]}" -batch -ex "set \$seconds = $attribute" -x scripts/malloc-attribution.py 2>&1 \
        | grep -v -E "^\[|^Using|^warning|^0x|in __|^Reading|^Downloading|^During|^[0-9]+[[:space:]]|^Thread|^Program|^$" || true
fi

janus_cpu_per_user=$(awk -v t="$(cpu_ticks "$janus_pid")" -v hz="$ticks" 'BEGIN { print t / hz }')
echo "== $users publishers through Janus, subscriber measured over $seconds s (after $settle s)"
awk -v b="$before" -v a="$after" -v hz="$ticks" -v n="$users" -v s="$seconds" 'BEGIN {
    cpu = (a - b) / hz
    printf "subscriber CPU: %.2f s in %d s = %.1f%% of a core; %.2f ms per user-second\n", cpu, s, 100 * cpu / s, 1000 * cpu / (n * s)
}'
awk -v b="$publishers_before" -v a="$publishers_after" -v hz="$ticks" -v n="$users" -v s="$seconds" 'BEGIN {
    printf "publishers CPU: %.1f%% of a core in all (%.2f ms per publisher-second)\n", 100 * (a - b) / hz / s, 1000 * (a - b) / hz / (n * s)
}'
echo "Janus CPU since it started: $janus_cpu_per_user s"
awk -v ib="$idle_before" -v ia="$idle_after" -v tb="$total_before" -v ta="$total_after" -v l="$load_before" 'BEGIN {
    printf "machine busy over the window: %.0f%% of %d cores (load average before: %s)\n", 100 * (1 - (ia - ib) / (ta - tb)), '"$(nproc)"', l
}'
echo "subscriber's last statistics:"
echo "$statistics" | sed 's/^/  /'

# The same session on the in-process hub, its whole process timed (it also runs the remote users),
# once Janus and its clients are gone.
for pid in "${publisher_pids[@]}" "$subscriber" "$janus_pid"; do kill -INT "$pid" 2>/dev/null || true; done
sleep 3
for pid in "${publisher_pids[@]}" "$subscriber" "$janus_pid"; do kill -KILL "$pid" 2>/dev/null || true; done
echo "load average before simulate: $(cut -d' ' -f1-3 /proc/loadavg)"
for files in "" "--no-canvas-video"; do
    start=$(date +%s.%N)
    /usr/bin/time -f "%U %S" -o "$folder/simulate.time" "$pipebench" simulate --users "$users" --channels 1 \
        --realtime --no-publish --duration "$seconds" --output "$folder/out/simulate" $files >/dev/null 2>&1
    wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { print e - s }')
    awk -v n="$users" -v s="$seconds" -v w="$wall" -v f="${files:-with files}" '{
        cpu = $1 + $2
        printf "simulate (LocalHub, %s): %.2f s CPU in %.1f s = %.2f ms per user-second (remote users included)\n", f, cpu, w, 1000 * cpu / (n * s)
    }' "$folder/simulate.time"
done
