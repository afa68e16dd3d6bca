#!/usr/bin/env bash
# Runs a local Janus (Debian's `janus`, 1.1.x) with a loopback-only configuration, for trying the
# engine's Janus transport by hand. The configuration lives in a temporary folder removed on exit.
#
#   scripts/janus.sh                      HTTP API on http://127.0.0.1:8088/janus
#   scripts/janus.sh --port 8090          another port
#   scripts/janus.sh --session-timeout 5  sessions expire after 5 s without a request (default 60)
#   scripts/janus.sh --namespace NAME     Janus inside a network namespace NAME made for it (root)
#   scripts/janus.sh --publishers 24      each room takes 24 publishers (default 6)
#
# Stops Janus on Ctrl-C or SIGTERM. Rooms (VideoRoom with string_ids = true, so rooms and
# participant ids are strings): "channel-1", "channel-2", and "pinned" whose pin is "1234".
# Only the VideoRoom plugin and the HTTP transport are loaded (links in the temporary folder).
#
# Media: Janus 1.1.2 skips loopback interfaces when it gathers ICE candidates, so in the root
# namespace (signalling on 127.0.0.1) it offers this machine's other interfaces' addresses, and a
# local engine's media may not reach it. `--namespace NAME` does what the tests do: a namespace
# with lo up and a veth pair whose both ends stay inside it, 127.0.0.2/32 on one end, IPv6 off,
# Janus's ICE restricted to that veth. Its one candidate is then 127.0.0.2; run the engine inside
# too (`ip netns exec NAME ...`). The namespace is deleted on exit.
set -euo pipefail

port=8088
session_timeout=60
publishers=6
namespace=""
while [[ $# -gt 0 ]]; do
    case "$1" in
    --port) port="$2"; shift 2 ;;
    --session-timeout) session_timeout="$2"; shift 2 ;;
    --publishers) publishers="$2"; shift 2 ;;
    --namespace) namespace="$2"; shift 2 ;;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

libs=/usr/lib/x86_64-linux-gnu/janus
command -v janus >/dev/null || { echo "janus is not installed (apt-get install janus)" >&2; exit 1; }
[[ -e "$libs/plugins/libjanus_videoroom.so" ]] || { echo "no VideoRoom plugin in $libs" >&2; exit 1; }

folder=$(mktemp -d /tmp/janus-XXXXXX)
janus_pid=""
veth="jv0"
cleanup() {
    if [[ -n "$janus_pid" ]] && kill -0 "$janus_pid" 2>/dev/null; then
        kill -INT "$janus_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$janus_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$janus_pid" 2>/dev/null || true
        wait "$janus_pid" 2>/dev/null || true
    fi
    [[ -n "$namespace" ]] && ip netns del "$namespace" 2>/dev/null || true
    rm -rf "$folder"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$folder"/{plugins,transports,events,loggers}
ln -s "$libs/plugins/libjanus_videoroom.so" "$folder/plugins/"
ln -s "$libs/transports/libjanus_http.so" "$folder/transports/"

nat=""
if [[ -n "$namespace" ]]; then
    ip netns add "$namespace"
    ip -n "$namespace" link set lo up
    ip -n "$namespace" link add "$veth" type veth peer name jv1
    for dev in all default; do ip netns exec "$namespace" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"; done
    for dev in "$veth" jv1; do
        ip netns exec "$namespace" sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1"
        ip -n "$namespace" link set "$dev" up
    done
    ip -n "$namespace" addr add 127.0.0.2/32 dev "$veth"
    nat="ice_enforce_list = \"$veth\""
fi

cat >"$folder/janus.jcfg" <<EOF
general: {
	configs_folder = "$folder"
	plugins_folder = "$folder/plugins"
	transports_folder = "$folder/transports"
	events_folder = "$folder/events"
	loggers_folder = "$folder/loggers"
	debug_level = 4
	session_timeout = $session_timeout
	server_name = "MediaPipeline-local"
}
certificates: {
}
media: {
	ipv6 = false
	min_nack_queue = 1000
}
nat: {
	$nat
}
plugins: {
}
transports: {
}
events: {
	broadcast = false
}
loggers: {
}
EOF
cat >"$folder/janus.transport.http.jcfg" <<EOF
general: {
	json = "plain"
	base_path = "/janus"
	http = true
	port = $port
	ip = "127.0.0.1"
	https = false
}
admin: {
	admin_http = false
	admin_https = false
}
cors: {
}
EOF
cat >"$folder/janus.plugin.videoroom.jcfg" <<EOF
general: {
	string_ids = true
}
room-channel-1: {
	description = "channel-1"
	publishers = $publishers
	bitrate = 512000
	fir_freq = 10
}
room-channel-2: {
	description = "channel-2"
	publishers = $publishers
	bitrate = 512000
	fir_freq = 10
}
room-pinned: {
	description = "pinned (pin 1234)"
	pin = "1234"
	publishers = $publishers
}
EOF

runner=()
[[ -n "$namespace" ]] && runner=(ip netns exec "$namespace")
"${runner[@]}" janus -F "$folder" -C "$folder/janus.jcfg" -o >"$folder/janus.log" 2>&1 &
janus_pid=$!
for _ in $(seq 100); do
    if "${runner[@]}" ss -Hltn "sport = :$port" | grep -q .; then break; fi
    kill -0 "$janus_pid" 2>/dev/null || { cat "$folder/janus.log" >&2; exit 1; }
    sleep 0.1
done
echo "Janus ${namespace:+in namespace $namespace }at http://127.0.0.1:$port/janus (log: $folder/janus.log); Ctrl-C stops it"
wait "$janus_pid"
