# gdb script: attributes the heap allocations of a running pipebench (release build) to what
# made them, per SRTP packet. Used by scripts/janus-cpu.sh --attribute; by hand:
#
#   gdb -p PID -batch -ex 'set $seconds = 5' -x scripts/malloc-attribution.py
#
# Stops at every malloc/calloc/realloc/aligned_alloc/posix_memalign of the process (pipebench
# defines them itself: Sources/CAllocationCounter), and at every protect and unprotect of SRTP
# (cwebrtc_srtp_protect_rtp, cwebrtc_srtp_unprotect_rtp), for $seconds seconds of the
# process's time under gdb (it runs far slower than live: many stops a packet). Each allocation
# is put in one class by its call stack:
#   libsrtp2/NSS in F         a frame in libsrtp2, NSS (libnss3, libfreebl, libsoftokn, libnspr),
#                             under F: cwebrtc_srtp_protect_rtp, _protect_rtcp, _unprotect_rtp…
#   send path, libnice/GLib   under WebRTCConnection.sendRTP, a frame in libnice or GLib (ICE send)
#   send path (ours)          under WebRTCConnection.sendRTP / protectRTP, no such library frame
#   receive path (ours)       under WebRTCConnection.received (unprotect, ReceivedPacketMapper and
#                             what the mapper hands the packet to), no libsrtp2 frame
#   other                     the rest (decode, mixing, signalling, timers...), grouped by the
#                             nearest named frame of MediaPipeline
# and prints the counts with the calls of each F seen, so allocations per call (receive path:
# per unprotect, RTP or RTCP).
import collections
import time

import gdb

gdb.execute("set pagination off")
gdb.execute("set print demangle on")
gdb.execute("set confirm off")

LIBRARIES = ("libsrtp2", "libnss3", "libnssutil3", "libfreebl", "libsoftokn3", "libnspr4", "libplc4", "libplds4")
NICE = ("libnice", "libglib", "libgio", "libgobject")
# Swift names are mangled in a release build (…16WebRTCConnectionC7sendRTP…): substrings match.
SEND_MARKERS = ("7sendRTP", "cwebrtc_srtp_protect_rtp", "protectRTP")
RECEIVE_MARKERS = ("ReceivedPacketMapper", "cwebrtc_srtp_unprotect", "unprotectRTP", "16WebRTCConnectionC8received")

FUNCTIONS = ("cwebrtc_srtp_protect_rtp", "cwebrtc_srtp_protect_rtcp", "cwebrtc_srtp_unprotect_rtp",
             "cwebrtc_srtp_unprotect_rtcp")
counts = collections.Counter()
others = collections.Counter()
calls = collections.Counter()


def classify():
    frame = gdb.newest_frame()
    names = []
    in_library = False
    in_nice = False
    depth = 0
    while frame is not None and depth < 60:
        pc = frame.pc()
        library = gdb.solib_name(pc) or ""
        if any(name in library for name in LIBRARIES):
            in_library = True
        if any(name in library for name in NICE):
            in_nice = True
        name = frame.name() or ""
        names.append(name)
        try:
            frame = frame.older()
        except gdb.error:
            break
        depth += 1
    joined = " ".join(names)
    if in_library:
        for function in FUNCTIONS:
            if function in names:
                return "libsrtp2/NSS in " + function
        return "libsrtp2/NSS elsewhere"
    if any(marker in joined for marker in SEND_MARKERS):
        if in_nice:
            return "send path, libnice/GLib"
        others["send: " + nearest(names)] += 1
        return "send path (ours)"
    if any(marker in joined for marker in RECEIVE_MARKERS):
        others["receive: " + nearest(names)] += 1
        return "receive path (ours)"
    others[nearest(names)] += 1
    return "other"


def nearest(names):
    """The first frame of MediaPipeline (or failing that, any named frame past the allocator)."""
    for name in names[1:]:
        if "MediaPipeline" in name:
            return name[:160]
    for name in names[1:]:
        if name and not name.startswith(("swift_", "malloc", "_Z", "operator new")):
            return name[:160]
    return "?"


class Allocation(gdb.Breakpoint):
    def stop(self):
        counts[classify()] += 1
        return False


class Call(gdb.Breakpoint):
    def __init__(self, spec, key):
        super().__init__(spec, internal=True)
        self.key = key

    def stop(self):
        calls[self.key] += 1
        return False


seconds = int(gdb.parse_and_eval("$seconds")) if str(gdb.parse_and_eval("$seconds")) != "void" else 5
for function in ("malloc", "calloc", "realloc", "aligned_alloc", "posix_memalign", "memalign"):
    Allocation(function, internal=True)
for function in FUNCTIONS:
    Call(function, function)

# Run for `seconds`, then interrupt from a timer thread and detach.
import threading


def interrupt():
    time.sleep(seconds)
    gdb.post_event(lambda: gdb.execute("interrupt"))


threading.Thread(target=interrupt, daemon=True).start()
try:
    gdb.execute("continue")
except gdb.error:
    pass

print("== calls under gdb: " + ", ".join("%s %d" % (f, calls[f]) for f in FUNCTIONS))
for key, value in sorted(counts.items()):
    function = key.split(" in ")[-1]
    packets = calls[function] if function in FUNCTIONS else 0
    if key.startswith("send"):
        packets = calls["cwebrtc_srtp_protect_rtp"]
    if key.startswith("receive"):
        packets = calls["cwebrtc_srtp_unprotect_rtp"] + calls["cwebrtc_srtp_unprotect_rtcp"]
    per = " (%.2f per call)" % (value / packets) if packets else ""
    print("%-44s %7d%s" % (key, value, per))
print("== allocation sites on the send and receive paths (ours)")
for key, value in others.most_common():
    if key.startswith(("send: ", "receive: ")):
        print("%7d  %s" % (value, key))
print("== top other allocation sites")
for key, value in others.most_common(25):
    if not key.startswith(("send: ", "receive: ")):
        print("%7d  %s" % (value, key))
gdb.execute("detach")
