#!/usr/bin/python3
"""Drives headless Chromium into a MediaPipeline channel (a Janus VideoRoom room) through room.html.

For Tests/MediaPipelineTests/JanusBrowserTests.swift, run inside the test's network namespace with
Debian's python3-selenium and chromium-driver. Serves room.html, janus.js and adapter.js over HTTP
on 127.0.0.1 at a kernel-chosen port, starts Chromium with fake devices fed from --video (Y4M) and
--audio (WAV), opens the page and prints one JSON line a poll on standard output:
  {"s": seconds since start, "phase": ..., "mp": the page's window.mp}
Ends after --seconds, on SIGTERM or SIGINT (the page leaves the room first, then Chromium and
chromedriver quit), or when Chromium fails.
"""
import argparse
import functools
import http.server
import json
import os
import signal
import sys
import tempfile
import threading
import time
import urllib.parse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = {
    "/room.html": os.path.join(HERE, "room.html"),
    "/janus.js": "/usr/share/javascript/janus-gateway/janus.js",
    "/adapter.js": "/usr/share/javascript/webrtc-adapter/adapter.js",
}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = FILES.get(urllib.parse.urlsplit(self.path).path)
        if path is None:
            self.send_error(404)
            return
        with open(path, "rb") as f:
            body = f.read()
        self.send_response(200)
        kind = "text/html" if path.endswith(".html") else "text/javascript"
        self.send_header("Content-Type", kind + "; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Stop(Exception):
    pass


def stop(signum, frame):
    raise Stop()


def emit(started, phase, **fields):
    line = {"s": round(time.monotonic() - started, 3), "phase": phase}
    line.update(fields)
    print(json.dumps(line), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--janus", required=True, help="the Janus API URL")
    parser.add_argument("--room", required=True)
    parser.add_argument("--id", required=True, help="this publisher's id")
    parser.add_argument("--feed", required=True, help="the publisher to subscribe to")
    parser.add_argument("--video", required=True, help="Y4M for the fake camera")
    parser.add_argument("--audio", required=True, help="WAV for the fake microphone")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--poll", type=float, default=0.2)
    parser.add_argument("--simulcast", action="store_true", help="send the camera as two encodings (h, l)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    started = time.monotonic()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    emit(started, "serving", port=port)

    profile = tempfile.mkdtemp(prefix="mp-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
        "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
        "--use-file-for-fake-video-capture=" + args.video, "--use-file-for-fake-audio-capture=" + args.audio,
        "--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
        "--autoplay-policy=no-user-gesture-required", "--user-data-dir=" + profile,
    ]:
        options.add_argument(flag)
    driver = None
    try:
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        emit(started, "browser")
        query = urllib.parse.urlencode(
            {"janus": args.janus, "room": args.room, "id": args.id, "feed": args.feed,
             "simulcast": "1" if args.simulcast else "0"})
        driver.get("http://127.0.0.1:%d/room.html?%s" % (port, query))
        emit(started, "page")
        while time.monotonic() - started < args.seconds:
            emit(started, "poll", mp=driver.execute_script("return window.mp || null;"))
            time.sleep(args.poll)
        emit(started, "done")
    except Stop:
        # Leave as a participant closing the page does, within 5 s, then quit.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            driver.execute_script("window.mpLeave && window.mpLeave();")
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not driver.execute_script("return !!(window.mp && window.mp.left);"):
                time.sleep(0.05)
            emit(started, "stopped", mp=driver.execute_script("return window.mp || null;"))
        except Exception as error:
            emit(started, "stopped", error=str(error).splitlines()[0] if str(error) else repr(error))
    except Exception as error:  # reported to the test, which fails with it
        emit(started, "failed", error=str(error).splitlines()[0] if str(error) else repr(error))
        return 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if driver is not None:
            try:
                driver.quit()
            except Exception:
                pass
        server.shutdown()
        import shutil
        shutil.rmtree(profile, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
