import Foundation
import Testing

@testable import MediaPipeline

@Suite("pipebench", .timeLimit(.minutes(5)))
struct CommandLineTests {
    private func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("decode --md5 prints vpxdec's per-frame lines")
    func md5Lines() throws {
        let result = try pipebench(["decode", Fixtures.motionIVF, "--md5"])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let folder = TemporaryFolder()
        let expected = try reference(
            "vpxdec", ["--md5", "--i420", "-o", folder.file("frame-%4.i420"), Fixtures.motionIVF]
        )
        .split(separator: "\n").map { $0.replacingOccurrences(of: folder.path + "/", with: "") }
        #expect(Array(lines.dropLast()) == expected)
        #expect(lines.last?.contains("90 frames 640x360") == true)
    }

    @Test("encode and decode with --json report what was done; 64k means 64000")
    func audioJSON() throws {
        let folder = TemporaryFolder()
        let a = try pipebench(["encode", Fixtures.speechWAV, folder.file("a.opus"), "--bitrate", "48k", "--json"])
        #expect(a.status == 0, "\(a.stderr)")
        let b = try pipebench(["encode", Fixtures.speechWAV, folder.file("b.opus"), "--bitrate", "48000", "--json"])
        #expect(b.status == 0)
        #expect(FileManager.default.contentsEqual(atPath: folder.file("a.opus"), andPath: folder.file("b.opus")))
        let c = try pipebench(["encode", Fixtures.speechWAV, folder.file("c.opus"), "--bitrate", "0.048M", "--quiet"])
        #expect(c.status == 0)
        #expect(FileManager.default.contentsEqual(atPath: folder.file("a.opus"), andPath: folder.file("c.opus")))
        let encoded = try json(a.stdout)
        #expect(encoded["frames"] as? Int == 192_000)
        #expect(encoded["sampleRate"] as? Int == 48000)
        #expect((encoded["speedRealtime"] as? Double ?? 0) > 1)

        let d = try pipebench(["decode", folder.file("a.opus"), folder.file("a.wav"), "--json"])
        #expect(d.status == 0, "\(d.stderr)")
        #expect(try json(d.stdout)["frames"] as? Int == 192_000)
        let info = try json(try pipebench(["info", folder.file("a.opus"), "--json"]).stdout)
        #expect(info["format"] as? String == "ogg-opus")
        #expect(info["sampleFrames48k"] as? Int == 192_000)
        #expect(info["preSkip"] as? Int == 312)
    }

    @Test("--frame-size=60 makes every Opus packet 60 ms (2880 samples); the whole 4 s still decode")
    func frameSize() throws {
        let folder = TemporaryFolder()
        let output = folder.file("60.opus")
        #expect(try pipebench(["encode", Fixtures.speechWAV, output, "--frame-size=60", "--quiet"]).status == 0)
        let reader = try OggOpusReader(path: output)
        var samples: [Int] = []
        while let packet = try reader.nextPacket() {
            samples.append(try OpusDecoder.samplesPerChannel(inPacket: packet.bytes, sampleRate: 48000))
        }
        #expect(!samples.isEmpty && samples.allSatisfy { $0 == 2880 }, "\(Set(samples))")
        #expect(try ffmpegSampleCount(output, channels: 2) == 192_000)
    }

    @Test("--cbr makes every Opus packet one size (160 bytes at 64 kbit/s); the default VBR's sizes spread")
    func constantBitrate() throws {
        let folder = TemporaryFolder()
        #expect(try pipebench(["encode", Fixtures.speechWAV, folder.file("vbr.opus"), "--quiet"]).status == 0)
        #expect(try pipebench(["encode", Fixtures.speechWAV, folder.file("cbr.opus"), "--cbr", "--quiet"]).status == 0)
        let cbr = try oggOpusPacketSizes(folder.file("cbr.opus"))
        let vbr = try oggOpusPacketSizes(folder.file("vbr.opus"))
        #expect(cbr.count == vbr.count && cbr.count >= 200)
        // 64 kbit/s is 160 bytes a 20 ms packet: every CBR packet has exactly that (measured: all
        // of them, the first and the last too).
        #expect(cbr.allSatisfy { $0 == 160 }, "CBR packet sizes \(Set(cbr).sorted())")
        // VBR spends bits where the speech needs them: a few bytes in its pauses, twice CBR's in
        // loud vowels (measured: 3 to 340 bytes).
        let spread = (vbr.max() ?? 0) - (vbr.min() ?? 0)
        #expect(spread > 100, "VBR packet sizes \(vbr.min() ?? 0)...\(vbr.max() ?? 0)")
    }

    @Test(
        "--bitrate: the Opus file's measured bitrate follows the target: 16k and 32k VBR within 15 %, 96k CBR within 1 %"
    )
    func audioBitrate() throws {
        let folder = TemporaryFolder()
        // No target is the default (64k), whose VBR encode measures 103.7 kbit/s: an option that
        // did not reach the encoder fails all three. The default VBR is unconstrained: up to
        // 32k (SILK and hybrid modes) it stays near the target on the 4 s fixture (measured
        // 17.2 and 33.3 kbit/s), but from 48k (CELT) it spends half as much again on this
        // speech (74.7 kbit/s for 48k, 154.1 for 96k; opusenc and ffmpeg's libopus measure the
        // same), so 96k is checked with CBR: 240 bytes a packet, 201 packets for 4 s (the last
        // carries the encoder's lookahead), measured 96.48 kbit/s.
        for (target, bitsPerSecond, options, tolerance) in [
            ("16k", 16_000.0, [String](), 0.15), ("32k", 32_000.0, [], 0.15), ("96k", 96_000.0, ["--cbr"], 0.01),
        ] {
            let output = folder.file("\(target).opus")
            let result = try pipebench(
                ["encode", Fixtures.speechWAV, output, "--bitrate", target, "--quiet"] + options)
            #expect(result.status == 0, "\(result.stderr)")
            let measured = try oggOpusBitrate(output)
            #expect(abs(measured / bitsPerSecond - 1) < tolerance, "\(target) \(options): measured \(measured) bit/s")
        }
    }

    @Test("--complexity=0 encodes with less than 1/1.4 of complexity 10's CPU time (measured 1/2.2)")
    func complexity() throws {
        let folder = TemporaryFolder()
        // At 32k, complexity costs most on this speech. Times, unlike bytes, vary with the
        // machine's load: CPU time (not the clock's), the least of three runs, and a bound well
        // inside the measured ratio (0.19 s against 0.084 s, 2.2 to 2.3 over runs on two loaded
        // cores; at 64k, CELT only, it is 1.15). An option that did not reach the encoder
        // measures 1.02. (Complexity 0 also turns libopus's signal analysis off: it then codes
        // this speech in CELT, 23.1 kB, where complexity 10 chooses hybrid, 16.7 kB.)
        func cpuSeconds(_ complexity: Int) throws -> Double {
            try pipebenchCPUSeconds(
                [
                    "encode", Fixtures.speechWAV, folder.file("\(complexity).opus"), "--bitrate", "32k",
                    "--complexity", String(complexity), "--quiet",
                ], runs: 3)
        }
        let best = try cpuSeconds(10)
        let fastest = try cpuSeconds(0)
        #expect(best / fastest > 1.4, "complexity 10: \(best) s, complexity 0: \(fastest) s")
    }

    @Test("--application=voip high-passes the input: a 30 Hz hum under the speech loses 8 dB or more; audio keeps it")
    func application() throws {
        let folder = TemporaryFolder()
        // The speech at 70 % with a 30 Hz hum of amplitude 4000 on both channels.
        let speech = try wavSamples(Fixtures.speechWAV)
        let hummed = speech.indices.map { index in
            let t = Double(index / 2) / 48000
            return Int16(Double(speech[index]) * 0.7 + 4000 * sin(2 * .pi * 30 * t))
        }
        let input = folder.file("hum.wav")
        let writer = try WAVWriter(path: input, sampleRate: 48000, channelCount: 2)
        try writer.write(hummed)
        try writer.finish()
        var hum: [String: Double] = [:]
        for application in ["audio", "voip"] {
            let output = folder.file("\(application).opus")
            let result = try pipebench(["encode", input, output, "--application=\(application)", "--quiet"])
            #expect(result.status == 0, "\(result.stderr)")
            // The hum's amplitude in the left channel from 1 s to 3 s of the decode.
            let decoded = try oggOpusDecoded(output)
            #expect(decoded.count == speech.count)
            hum[application] = toneAmplitude(decoded[96_000..<288_000], channel: 0, of: 2, frequency: 30)
        }
        let original = toneAmplitude(hummed[96_000..<288_000], channel: 0, of: 2, frequency: 30)
        func decibels(_ amplitude: Double?) -> Double { 20 * log10((amplitude ?? 0) / original) }
        // VOIP runs the input through libopus's variable high-pass (a second-order filter at
        // 60 Hz or more), which takes 12 dB off 30 Hz (measured -12.4 dB); AUDIO only removes DC
        // (measured -0.07 dB).
        #expect(decibels(hum["audio"]) > -1, "audio: \(decibels(hum["audio"])) dB")
        #expect(decibels(hum["voip"]) < -8, "voip: \(decibels(hum["voip"])) dB")
    }

    @Test("video encode options: codec, size and keyframe interval")
    func videoOptions() throws {
        let folder = TemporaryFolder()
        let result = try pipebench([
            "encode", Fixtures.oddY4M, folder.file("o.ivf"), "--codec", "vp9", "--keyframe-interval", "10", "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try json(result.stdout)
        #expect(summary["codec"] as? String == "vp9")
        #expect(summary["frames"] as? Int == 30)
        let info = try json(try pipebench(["info", folder.file("o.ivf"), "--json"]).stdout)
        #expect(info["codec"] as? String == "vp9")
        #expect(info["width"] as? Int == 161 && info["height"] as? Int == 91)
        let vp8 = try pipebench([
            "encode", Fixtures.oddY4M, folder.file("k.ivf"), "--keyframe-interval", "10", "--quiet",
        ])
        #expect(vp8.status == 0)
        let vp8Info = try json(try pipebench(["info", folder.file("k.ivf"), "--json"]).stdout)
        #expect((vp8Info["keyframes"] as? Int ?? 0) >= 3)
    }

    @Test(
        "--bitrate: the IVF file's measured bitrate lies within 10 % of the target, 200k and 800k",
        arguments: VideoCodec.allCases)
    func videoBitrate(codec: VideoCodec) throws {
        let folder = TemporaryFolder()
        // 4 s of a detailed moving pattern at 320x180, 30 fps: enough for the rate control's
        // 1 s buffer to settle, and neither target saturates it (the 161x91 fixture does: its
        // best quality costs less than 400 kbit/s).
        let input = folder.file("pattern.y4m")
        try testPatternY4M(input, width: 320, height: 180, framesPerSecond: 30, seconds: 4)
        // Neither target is the default (500k). libvpx's CBR with the 1 s buffer lands within a
        // few % over 4 s: measured 195.3 and 781.6 kbit/s (VP8), 202.3 and 792.8 (VP9).
        for (target, bitsPerSecond) in [("200k", 200_000.0), ("800k", 800_000.0)] {
            let output = folder.file("\(target).ivf")
            let result = try pipebench([
                "encode", input, output, "--codec", codec.rawValue, "--bitrate", target, "--quiet",
            ])
            #expect(result.status == 0, "\(result.stderr)")
            let measured = try ivfBitrate(output)
            #expect(abs(measured / bitsPerSecond - 1) < 0.1, "\(codec) \(target): measured \(measured) bit/s")
        }
    }

    @Test(
        "--speed: a slow speed encodes at least 1 dB closer to the source and takes at least 1.8 times the CPU time",
        arguments: [(VideoCodec.vp8, -2), (.vp9, -4)])
    func videoSpeed(codec: VideoCodec, slow: Int) throws {
        let folder = TemporaryFolder()
        let input = folder.file("pattern.y4m")
        try testPatternY4M(input, width: 320, height: 180, framesPerSecond: 30, seconds: 4)
        func encode(_ speed: Int) throws -> (psnr: Double, cpuSeconds: Double) {
            let output = folder.file("\(speed).ivf")
            let seconds = try pipebenchCPUSeconds([
                "encode", input, output, "--codec", codec.rawValue, "--bitrate", "200k", "--speed", String(speed),
                "--quiet",
            ])
            return (try ivfPSNR(output, reference: input), seconds)
        }
        // At one bitrate (200k, which both speeds meet within 2 %), a slower speed searches more
        // and spends the bits better. Measured, against speed -8: VP8 -2 +2.3 dB (35.95 and
        // 33.61 dB) in 3.5 to 3.6 times the CPU time; VP9 -4 +5.1 dB (37.78 and 32.71 dB) in 2.9
        // to 3.3 times. (VP9 -2 takes 2.4 s here, too long for this test.) The times are CPU
        // times, the least of two runs, with a bound well under the measured ratios: they vary
        // with the machine's load. An option that did not reach the encoder measures 0 dB and a
        // ratio of 1.
        let slowRun = try encode(slow)
        let fastRun = try encode(-8)
        #expect(slowRun.psnr > fastRun.psnr + 1, "\(codec): speed \(slow) \(slowRun), -8 \(fastRun)")
        #expect(slowRun.cpuSeconds / fastRun.cpuSeconds > 1.8, "\(codec): speed \(slow) \(slowRun), -8 \(fastRun)")
    }

    @Test("--error-resilient reaches libvpx: with one frame of a VP9 file lost, the rest decode; without it, none do")
    func errorResilient() throws {
        let folder = TemporaryFolder()
        var refused: [String: Int] = [:]
        for options in [[], ["--error-resilient"]] {
            let output = folder.file("o\(options.count).ivf")
            let result = try pipebench(["encode", Fixtures.oddY4M, output, "--codec", "vp9", "--quiet"] + options)
            #expect(result.status == 0, "\(result.stderr)")
            // Frame 5 of 30 lost; the decoder's errors counted over the 24 after it.
            let reader = try IVFReader(path: output)
            let decoder = try VPXDecoder(codec: .vp9)
            var index = 0
            var errors = 0
            while let frame = try reader.readFrame() {
                if index != 5 {
                    do { _ = try decoder.decode(frame.bytes) } catch { errors += 1 }
                }
                index += 1
            }
            #expect(index == 30)
            refused[options.first ?? "plain"] = errors
        }
        // Measured: all 24 refused without the option (the frames depend on state the lost one
        // changed), none with it. VPXCodecTests measures the same loss for VP8 and VP9 in PSNR.
        #expect(refused["plain"] == 24 && refused["--error-resilient"] == 0, "\(refused)")
    }

    @Test("roundtrip, the main job, reports quality for every step")
    func roundTrip() throws {
        let folder = TemporaryFolder()
        let result = try pipebench(["roundtrip", "--samples", Fixtures.samples, "--output", folder.path, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let steps = try #require(try json(result.stdout)["steps"] as? [[String: Any]])
        #expect(steps.count == 9)
        let snr = steps.compactMap { $0["snrDecibels"] as? Double }
        let psnr = steps.compactMap { $0["psnrDecibels"] as? Double }
        #expect(snr.count == 1 && snr[0] > 18)
        #expect(psnr.count == 3 && psnr.allSatisfy { $0 > 30 }, "\(psnr)")
    }
}

@Suite("Streaming keeps memory bounded", .timeLimit(.minutes(5)))
struct StreamingMemoryTests {
    private func peak(_ arguments: [String]) throws -> Int {
        let result = try pipebench(arguments + ["--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        return try #require(object?["peakResidentKilobytes"] as? Int)
    }

    @Test("a file 30 times longer does not need more memory")
    func longFiles() throws {
        let folder = TemporaryFolder()
        for (name, seconds) in [("short", 4), ("long", 120)] {
            try reference(
                "ffmpeg",
                [
                    "-nostdin", "-v", "error", "-stream_loop", "-1", "-i", Fixtures.speechWAV, "-t", String(seconds),
                    "-c:a", "pcm_s16le", folder.file("\(name).wav"),
                ])
            try reference(
                "ffmpeg",
                [
                    "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30",
                    "-frames:v", String(seconds * 5), "-pix_fmt", "yuv420p", folder.file("\(name).y4m"),
                ])
        }
        var peaks: [String: Int] = [:]
        for name in ["short", "long"] {
            peaks["wav-\(name)"] = try peak(["encode", folder.file("\(name).wav"), folder.file("\(name).opus")])
            peaks["opus-\(name)"] = try peak(["decode", folder.file("\(name).opus"), folder.file("\(name)-out.wav")])
            peaks["y4m-\(name)"] = try peak(["encode", folder.file("\(name).y4m"), folder.file("\(name).ivf")])
            peaks["ivf-\(name)"] = try peak(["decode", folder.file("\(name).ivf"), folder.file("\(name)-out.y4m")])
        }
        // The long inputs are 23 MB of audio and 52 MB of video; holding them would show.
        for kind in ["wav", "opus", "y4m", "ivf"] {
            let growth = peaks["\(kind)-long"]! - peaks["\(kind)-short"]!
            #expect(growth < 4096, "\(kind): peak grew by \(growth) KiB (\(peaks))")
        }
    }
}

@Suite("pipebench simulate", .timeLimit(.minutes(5)))
struct SimulateCommandTests {
    @Test("a session writes a playable mix, a WebM per channel, a Y4M per canvas and a PNG grid per channel")
    func simulate() throws {
        let folder = TemporaryFolder()
        let result = try pipebench([
            "simulate", "--samples", Fixtures.samples, "--output", folder.path, "--duration", "5", "--channels", "2",
            "--users", "2", "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let channels = try #require(report["channels"] as? [[String: Any]])
        #expect(channels.count == 2)
        for channel in channels {
            #expect(channel["users"] as? Int == 2)
            #expect(channel["streamsDecoding"] as? Int == 2)
            // 150 frames decoded of 5 s at 15 frames/s, less the first's trip. simulate renders
            // once a frame period; while the delay that keeps each user's video on its audio
            // steps down (40 ms per 100 ms, as the audio's jitter buffer settles), two frames are
            // sometimes due at one render and the canvas shows the newer (136 in this seeded run).
            #expect((channel["videoFramesDecoded"] as? Int ?? 0) >= 145)
            #expect((channel["canvasFramesRendered"] as? Int ?? 0) >= 130)
            // Past the 4 s sample's loop every stream still decodes, with no state change after the start.
            #expect(channel["stateChanges"] as? Int == 8)
        }
        #expect(report["audioFramesEncoded"] as? Int == 250)
        #expect((report["playoutPeak"] as? Int ?? 0) > 1000)
        let wav = try reference(
            "ffprobe",
            [
                "-v", "error", "-show_entries", "stream=sample_rate,channels,duration", "-of", "csv=p=0",
                folder.file("playout.wav"),
            ])
        #expect(wav.trimmingCharacters(in: .whitespacesAndNewlines) == "48000,2,5.000000")
        let canvas = try reference(
            "ffprobe",
            [
                "-v", "error", "-count_frames", "-show_entries", "stream=width,height,nb_read_frames", "-of", "csv=p=0",
                folder.file("canvas-channel-2-2001.y4m"),
            ])
        #expect(canvas.trimmingCharacters(in: .whitespacesAndNewlines) == "320,180,75")
        let png = try reference(
            "ffprobe",
            [
                "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0",
                folder.file("grid-channel-1.png"),
            ])
        #expect(png.trimmingCharacters(in: .whitespacesAndNewlines) == "1280,720")
        // Per channel, one WebM of its grid (75 pictures of 640x360 at 15 fps, the last from
        // 4.94 s) and its mix (5 s of Opus and the encoder's lookahead), read without a warning.
        for channel in ["channel-1", "channel-2"] {
            let probe = try runTool(
                "ffprobe",
                [
                    "-v", "warning", "-count_frames", "-show_entries",
                    "stream=codec_name,width,height,nb_read_frames:format=duration", "-of", "csv=p=0",
                    folder.file("\(channel).webm"),
                ])
            #expect(probe.status == 0 && probe.stderr.isEmpty, "\(probe.stderr)")
            #expect(
                probe.stdout.split(separator: "\n") == ["vp8,640,360,75", "opus,251", "5.007000"], "\(probe.stdout)")
        }
    }

    @Test(
        "simulate runs from any folder: the samples are found above the built executable, or named, or missed clearly")
    func anyFolder() throws {
        let folder = TemporaryFolder()
        // From an empty folder, with no --samples: found above .build/…/pipebench, in the checkout.
        let found = try runTool(
            Fixtures.pipebench, ["simulate", "--duration", "1", "--json", "--output", "out"], in: folder.path)
        #expect(found.status == 0, "\(found.stderr)")
        #expect(FileManager.default.fileExists(atPath: folder.file("out/channel-1.webm")))
        // A copy of the executable with no samples near it, and a --samples folder without them:
        // one line naming where it looked, and a usage exit status.
        try FileManager.default.createDirectory(atPath: folder.file("bin"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Fixtures.pipebench, toPath: folder.file("bin/pipebench"))
        let missed = try runTool(folder.file("bin/pipebench"), ["simulate", "--duration", "1"], in: folder.path)
        #expect(missed.status == 64)
        #expect(
            missed.stderr.hasPrefix("pipebench: error: the sample media were not found (looked in "), "\(missed.stderr)"
        )
        #expect(missed.stderr.contains("\(folder.path)/bin/samples") && missed.stderr.split(separator: "\n").count == 1)
        let wrong = try runTool(Fixtures.pipebench, ["simulate", "--samples", folder.path, "--duration", "1"])
        #expect(wrong.status == 64 && wrong.stderr.contains("does not hold speech-48k-stereo.wav"), "\(wrong.stderr)")
    }

    @Test("the 2 s statistics reports are printed as they come and summed at the end, in text and JSON")
    func statistics() throws {
        let folder = TemporaryFolder()
        let arguments = [
            "simulate", "--samples", Fixtures.samples, "--output", folder.path, "--duration", "5", "--channels", "2",
            "--users", "2", "--no-canvas-video", "--loss", "10", "--delay", "20",
        ]
        let text = try pipebench(arguments)
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n").map(String.init)
        // Two intervals per channel as they come, then the session's sums.
        let rows = lines.filter { $0.contains("channel-") && $0.contains("|") }
        #expect(
            rows.map { String($0.prefix(6)).trimmingCharacters(in: .whitespaces) } == [
                "2.0", "2.0", "4.0", "4.0", "all", "all",
            ])

        let result = try pipebench(arguments + ["--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let channels = try #require(report["channels"] as? [[String: Any]])
        #expect(channels.count == 2)
        for channel in channels {
            let statistics = try #require(channel["statistics"] as? [String: Any])
            let intervals = try #require(statistics["intervals"] as? [[String: Any]])
            #expect(intervals.map { $0["sessionMs"] as? Int } == [2000, 4000])
            for interval in intervals {
                // The links drop 10 % of packets; retransmissions make some of it good before the report.
                let loss = try #require(interval["receivedPacketLossPercent"] as? Double)
                #expect(loss > 2 && loss < 20, "\(loss) %")
            }
            let session = try #require(statistics["session"] as? [String: Any])
            // An interval counts what happened in it; the session, since subscribing: the
            // intervals' NACKs add up to at most the session's (it ends after the last one), and
            // no interval holds more frozen time per user than its 2 s.
            let nacks = intervals.compactMap { $0["nacksSent"] as? Int }
            #expect(nacks.count == 2 && nacks.reduce(0, +) <= session["nacksSent"] as? Int ?? 0, "\(nacks)")
            for interval in intervals {
                let users = try #require(interval["users"] as? Int)
                #expect(users == 2)
                for key in ["audioFrozenMs", "videoFrozenMs"] {
                    #expect((interval[key] as? Int ?? -1) >= 0 && (interval[key] as? Int ?? 0) <= 2000 * users)
                }
            }
            #expect((session["nacksSent"] as? Int ?? 0) > 0)
            #expect((session["audioPacketsRecovered"] as? Int ?? 0) > 0)
            #expect((session["audioFrames"] as? Int ?? 0) > 2 * 300)
            // The session's loss against what the links say they dropped: never more (plus the
            // packets still in flight at a report), less where retransmissions made it good.
            let mean = try #require(session["receivedPacketLossPercent"] as? Double)
            let dropped = try #require(channel["packetsDroppedByLink"] as? Int)
            let offered = try #require(channel["packetsSent"] as? Int)
            let linkLoss = Double(dropped) * 100 / Double(offered)
            #expect(linkLoss > 7 && linkLoss < 13, "\(linkLoss) %")
            #expect(mean > linkLoss / 3 && mean < linkLoss + 2, "\(mean) % reported, \(linkLoss) % dropped")
        }
    }

    @Test(
        "receive: no sender, a missing SDP and two files for one stream are one-line errors that say so; nothing is written"
    )
    func receiveMistakes() throws {
        let folder = TemporaryFolder()
        // A UDP port the kernel gives, then frees: nobody sends to it.
        let port = try UDPSocket(address: "127.0.0.1", port: 0).port  // closed when dropped
        let sdp = folder.file("peer.sdp")
        try
            "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio \(port) RTP/AVP 111\r\na=rtpmap:111 opus/48000/2\r\n"
            .write(toFile: sdp, atomically: true, encoding: .utf8)
        let silent = try pipebench([
            "receive", sdp, folder.file("out.wav"), folder.file("out.opus"), "--wait", "0.5", "--quiet",
        ])
        #expect(silent.status == 1)
        #expect(
            silent.stderr.split(separator: "\n").count == 1 && silent.stderr.contains("no RTP packet arrived"),
            "\(silent.stderr)")
        #expect(silent.stderr.contains("audio \(port)"), "\(silent.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.file("out.wav")))
        #expect(!FileManager.default.fileExists(atPath: folder.file("out.opus")))
        let missing = try pipebench(["receive", folder.file("none.sdp"), folder.file("out.wav")])
        #expect(
            missing.status == 1 && missing.stderr.contains("none.sdp: cannot read the SDP file: no such file"),
            "\(missing.stderr)")
        let twice = try pipebench(["receive", sdp, folder.file("a.opus"), folder.file("b.webm"), "--wait", "0.5"])
        #expect(twice.status == 1 && twice.stderr.split(separator: "\n").count == 1, "\(twice.stderr)")
        #expect(
            twice.stderr.contains("a.opus and ") && twice.stderr.contains("b.webm would both hold the audio"),
            "\(twice.stderr)")
    }

    @Test("--quiet leaves only what was asked for on standard output; send takes k and M bitrates")
    func quietAndBitrates() throws {
        let folder = TemporaryFolder()
        let ivf = Fixtures.motionIVF
        let quiet = try pipebench(["decode", ivf, folder.file("out.y4m"), "--quiet"])
        #expect(quiet.status == 0 && quiet.stdout.isEmpty, "\(quiet.stdout)")
        let md5 = try pipebench(["decode", ivf, "--md5", "--quiet"])
        let lines = md5.stdout.split(separator: "\n")
        #expect(
            md5.status == 0 && !lines.isEmpty && lines.allSatisfy { $0.contains(".i420") }, "\(md5.stdout.suffix(200))")
        let loud = try pipebench(["decode", ivf, folder.file("out2.y4m")])
        #expect(loud.stdout.contains("decoded"), "\(loud.stdout)")
        let help = try pipebench(["send", "--help"])
        #expect(help.stdout.contains("k and M suffixes"))
        let wrong = try pipebench(["send", "--bitrate", "fast", folder.file("x.sdp"), ivf])
        #expect(wrong.status != 0 && wrong.stderr.contains("--bitrate"), "\(wrong.stderr)")
    }

    @Test("bad settings fail in one line")
    func badSettings() throws {
        let folder = TemporaryFolder()
        for arguments in [
            ["--canvas", "12"], ["--render-mode", "stretch"], ["--channels", "0"], ["--duration", "-1"],
        ] {
            let result = try pipebench(
                ["simulate", "--samples", Fixtures.samples, "--output", folder.path] + arguments)
            #expect(result.status != 0)
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
    }

    @Test("join refuses bad settings before it joins, in one line naming the option and value")
    func joinBadSettings() throws {
        let folder = TemporaryFolder()
        // A server that is never reached: the settings are refused first.
        let server = "http://127.0.0.1:9/janus"
        for (arguments, named) in [
            (["--fallback", "sometimes"], "--fallback 'sometimes'"),
            (["--remote-video-type", "medium"], "--remote-video-type 'medium'"),
            (["--keyframe-request-interval", "0"], "--keyframe-request-interval 0"),
            (["--keyframe-request-interval", "soon"], "soon"),
        ] {
            let result = try pipebench(
                ["join", server, "--subscribe", "c", "--samples", Fixtures.samples, "--output", folder.path]
                    + arguments)
            #expect(result.status != 0, "\(arguments)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains(named), "\(arguments): \(result.stderr)")
        }
    }

    @Test("join refuses files it cannot publish before it joins, in one line naming the file")
    func joinSourceFiles() throws {
        let folder = TemporaryFolder()
        let wav44 = folder.file("44k.wav")
        let writer = try WAVWriter(path: wav44, sampleRate: 44_100, channelCount: 2)
        try writer.write([Int16](repeating: 0, count: 8_820))
        try writer.finish()
        let notY4M = folder.file("not.y4m")
        try Data("RIFF".utf8).write(to: URL(fileURLWithPath: notY4M))
        // A server that is never reached: the files are refused first.
        let server = "http://127.0.0.1:9/janus"
        for (arguments, file, words) in [
            (["--audio", wav44], wav44, "48 kHz"), (["--video", notY4M], notY4M, "Y4M"),
            (["--video", folder.file("missing.y4m")], folder.file("missing.y4m"), "No such file"),
        ] {
            let result = try pipebench(
                ["join", server, "--publish", "c", "--samples", Fixtures.samples, "--output", folder.path] + arguments)
            #expect(result.status != 0)
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains(file) && lines[0].contains(words), "\(result.stderr)")
        }
    }
}

@Suite("Steady state allocates nothing", .timeLimit(.minutes(5)))
struct AllocationTests {
    /// Heap allocations of a whole `pipebench simulate` run of `seconds` (the release build:
    /// allocation counts mean something only for optimised code), counted by an LD_PRELOAD library.
    private func allocations(seconds: Int, publish: Bool, counter: String) throws -> Int {
        let releasePipebench = try Fixtures.releasePipebench()
        let folder = TemporaryFolder()
        var arguments = [
            "LD_PRELOAD=\(counter)", releasePipebench, "simulate", "--samples", Fixtures.samples, "--output",
            folder.path,
            "--channels", "2", "--users", "4", "--duration", String(seconds), "--no-canvas-video",
            // JSON prints the statistics reports at the end only; keeping them allocates nothing.
            "--json",
        ]
        if !publish { arguments.append("--no-publish") }
        let result = try runTool("/usr/bin/env", arguments)
        #expect(result.status == 0, "\(result.stderr)")
        let line = try #require(result.stderr.split(separator: "\n").first { $0.hasPrefix("mallocs: ") })
        return try #require(Int(line.dropFirst(9)))
    }

    @Test(
        "subscribing, decoding, mixing and rendering 8 streams, and encoding and publishing, allocate nothing per frame"
    )
    func steadyState() throws {
        _ = try Fixtures.releasePipebench()  // refused here when missing or stale
        let folder = TemporaryFolder()
        let counter = folder.file("libcount.so")
        try reference(
            "cc",
            ["-O2", "-shared", "-fPIC", "-o", counter, Fixtures.packageRoot + "/Tests/Tools/malloc_counter.c", "-ldl"])
        // 2 s more of session: 200 playout ticks, 30 video ticks, 8 remote streams. A per-frame
        // allocation anywhere would add hundreds; a few come and go with thread start-up timing.
        let subscribeOnly =
            try allocations(seconds: 3, publish: false, counter: counter)
            - allocations(seconds: 1, publish: false, counter: counter)
        #expect(subscribeOnly <= 8, "\(subscribeOnly) allocations in 2 s of steady state")
        // Publishing adds 100 Opus packets and 30 VP8 frames in 2 s; their bytes live in recycled storage.
        let publishing =
            try allocations(seconds: 3, publish: true, counter: counter)
            - allocations(seconds: 1, publish: true, counter: counter)
        #expect(publishing <= 8, "\(publishing) allocations in 2 s of steady state")
    }
}

@Suite("pipebench bench", .timeLimit(.minutes(5)))
struct BenchCommandTests {
    @Test("engine paths report zero allocations per unit, and one encoder run per frame for 1000 subscribers")
    func enginePathsAllocateNothing() throws {
        let releasePipebench = try Fixtures.releasePipebench()
        let result = try runTool(
            releasePipebench,
            ["bench", "--samples", Fixtures.samples, "--repeats", "1", "--only", "mixer,fan-out,render,tick", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let paths = try #require(object["paths"] as? [[String: Any]])
        // 5 mixer + 6 fan-out + 6 render + 3 tick rows, every one at zero allocations per unit.
        #expect(paths.count == 20)
        for path in paths {
            #expect(path["allocationsPerUnit"] as? Double == 0, "\(path["path"] ?? "?")")
        }
        #expect(object["encodesPerFrameWith1000Subscribers"] as? Double == 1)
        #expect(object["engineAllocationsPerUnit"] as? Double == 0)
        #expect(object["sessionCapacityUsers"] == nil)  // the capacity section was not selected
    }

    @Test("an unknown section is refused in one line")
    func unknownSection() throws {
        let result = try pipebench(["bench", "--only", "mixer,warp"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("unknown section 'warp'"))
    }
}
