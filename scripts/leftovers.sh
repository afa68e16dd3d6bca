#!/usr/bin/env bash
# After a test run: nothing the tests made may be left behind. Lists, and fails on:
# - a network namespace of ours (mpjanus<pid>x…, mpa<pid>x…, mpb<pid>x…) whose test process is
#   gone;
# - a process started from this checkout's build (pipebench, the delay line) or naming the run's
#   temporary folder (Janus, GStreamer, ffmpeg, Chromium and its driver);
# - an iptables rule of ours in this machine's own tables (the tests put theirs in namespaces);
# - anything in the run's temporary folder: scripts/test.sh and tsan.sh give the tests a folder
#   of their own (MEDIAPIPELINE_TEST_TMPDIR, mediapipeline-run.*), which this removes when it is
#   empty. Without one, it looks in TMPDIR for the tests' folders (mediapipeline-tests-*,
#   mpjanus*).
# A second suite run meanwhile from another clone (as load) is not mistaken for this one.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
temporary=${MEDIAPIPELINE_TEST_TMPDIR:-${TMPDIR:-/tmp}}
temporary=${temporary%/}
found=0
report() { echo "left behind: $1"; found=1; }

while read -r name _; do
    if [[ "$name" =~ ^(mpjanus|mpa|mpb)([0-9]+)x ]]; then
        pid=${BASH_REMATCH[2]}
        [ -d "/proc/$pid" ] || report "network namespace $name (its test process $pid is gone)"
    fi
done < <(ip netns list 2>/dev/null)

run_folder=""
case "$(basename "$temporary")" in mediapipeline-run.*) run_folder=$temporary ;; esac

while read -r pid args; do
    [ "$pid" = "$$" ] && continue
    case "$args" in
    *"$root/.build"*) report "process $pid: ${args:0:160}" ;;
    *)
        if [ -n "$run_folder" ] && [[ "$args" == *"$run_folder"* ]]; then
            report "process $pid: ${args:0:160}"
        elif [ -z "$run_folder" ] && [[ "$args" == *mpjanus* || "$args" == *mediapipeline-tests-* ]]; then
            report "process $pid: ${args:0:160}"
        fi
        ;;
    esac
done < <(ps -eo pid=,args= | grep -v -e "leftovers.sh" -e " ps -eo" -e "grep -v")

if command -v iptables >/dev/null && iptables -S >/dev/null 2>&1; then
    while read -r rule; do report "iptables rule: $rule"; done < <(iptables -S | grep -e 'mp-count' -e 'mp-video' -e 'mp-offered' || true)
fi

if [ -n "$run_folder" ]; then
    while read -r path; do report "temporary file $path"; done < <(find "$run_folder" -mindepth 1 -maxdepth 1)
    [ "$found" -eq 0 ] && rmdir "$run_folder"
else
    for path in "$temporary"/mediapipeline-tests-* "$temporary"/mpjanus*; do
        [ -e "$path" ] && report "temporary file $path"
    done
fi

if [ "$found" -ne 0 ]; then
    echo "the test run left the above behind" >&2
    exit 1
fi
echo "leftovers: none (namespaces, processes, iptables rules, temporary files)"
