import Foundation
import Testing

@testable import MediaPipeline

// pipebench send and receive options that had no test (issue 22): send --no-pacing, receive
// --duration and --wait. Loopback only, on ports the kernel chose; in the serial real-time pass
// of scripts/test.sh (the struct's name holds "RTPNetworkTests").

/// The datagrams that reach each of `sockets` while `sender` runs and until 0.2 s without one
/// after it ended (60 s at most), each with its arrival time in seconds from the first of all.
private func capture(_ sockets: [Int32], while sender: Process) -> [[(seconds: Double, bytes: [UInt8])]] {
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(60)
    var first: ContinuousClock.Instant?
    var datagrams: [[(seconds: Double, bytes: [UInt8])]] = sockets.map { _ in [] }
    var buffer = [UInt8](repeating: 0, count: 65_536)
    var quietPolls = 0
    while clock.now < deadline && quietPolls < 10 {
        var fds = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let ready = poll(&fds, nfds_t(fds.count), 20)
        quietPolls = ready == 0 && !sender.isRunning ? quietPolls + 1 : 0
        guard ready > 0 else { continue }
        for (index, fd) in fds.enumerated() where fd.revents & Int16(POLLIN) != 0 {
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                guard count > 0 else { break }
                let now = clock.now
                let start = first ?? now
                first = start
                let elapsed = (now - start).components
                datagrams[index].append(
                    (Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18, Array(buffer[0..<count])))
            }
        }
    }
    return datagrams
}

/// The RTP packets among `datagrams` with their arrival times, each sequence number once (the
/// first copy: the sender sends its last video packet again at the end, a tail probe), in
/// arrival order.
private func distinctPackets(_ datagrams: [(seconds: Double, bytes: [UInt8])]) throws -> [(
    seconds: Double, packet: RTPPacket
)] {
    var seen = Set<UInt16>()
    return try datagrams.compactMap { datagram in
        let packet = try RTPPacket(datagram.bytes)
        return seen.insert(packet.header.sequenceNumber).inserted ? (datagram.seconds, packet) : nil
    }
}

/// The index of the first element where `a` and `b` differ (the shorter one's count when one is
/// the other's beginning), or nil when they are equal.
private func firstDifference(_ a: [[UInt8]], _ b: [[UInt8]]) -> Int? {
    a == b ? nil : (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
}

/// The frames of an IVF file, byte for byte.
private func ivfFrames(_ path: String) throws -> [[UInt8]] {
    let reader = try IVFReader(path: path)
    var frames: [[UInt8]] = []
    while let frame = try reader.readFrame() { frames.append(frame.bytes) }
    return frames
}

/// The packets of an Ogg Opus file, byte for byte.
private func oggPackets(_ path: String) throws -> [[UInt8]] {
    let reader = try OggOpusReader(path: path)
    var packets: [[UInt8]] = []
    while let packet = try reader.nextPacket() { packets.append(packet.bytes) }
    return packets
}

/// Starts `pipebench ARGUMENTS`, its standard output and error into the files `output` and
/// `errors`.
private func startPipebench(_ arguments: [String], output: String, errors: String) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: Fixtures.pipebench)
    process.arguments = arguments
    for path in [output, errors] { _ = FileManager.default.createFile(atPath: path, contents: nil) }
    process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
    process.standardInput = FileHandle.nullDevice
    try process.run()
    return process
}

private func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

@Suite("pipebench send --no-pacing, receive --duration and --wait, over loopback", .timeLimit(.minutes(5)))
struct RTPNetworkTestsCLI {
    @Test(
        "send --no-pacing: the files' packets leave in one burst instead of at the media's pace; every packet arrives, byte for byte"
    )
    func noPacingBursts() throws {
        let folder = TemporaryFolder()
        let opus = folder.file("speech.opus")
        try AudioFileEncoder.encode(input: Fixtures.speechWAV, output: opus)
        let (sourceFrames, sourcePackets) = (try ivfFrames(Fixtures.motionIVF), try oggPackets(opus))
        #expect(sourceFrames.count == 90 && sourcePackets.count == 201)
        // When each video frame (its marker packet) and each audio packet reached this test's
        // sockets, paced and not.
        var frameTimes: [Bool: [Double]] = [:]
        var audioTimes: [Bool: [Double]] = [:]
        for paced in [true, false] {
            // Video RTP and RTCP, audio RTP and RTCP.
            let (port, sockets) = try kernelBoundUDPPorts(count: 4, receiveBufferBytes: 4 << 20)
            defer {
                for fd in sockets { close(fd) }
            }
            let (output, errors) = (folder.file("send-\(paced).json"), folder.file("send-\(paced).stderr"))
            let sender = try startPipebench(
                ["send", Fixtures.motionIVF, opus, "rtp://127.0.0.1:\(port)", "--json", "--quiet", "--linger", "0.2"]
                    + (paced ? [] : ["--no-pacing"]), output: output, errors: errors)
            defer { sender.finish(within: 0) }
            let datagrams = capture(sockets, while: sender)
            #expect(sender.finish(within: 30), "the sender did not end")
            #expect(sender.terminationStatus == 0, "\(text(errors))")
            let report = try #require(
                try JSONSerialization.jsonObject(with: Data(text(output).utf8)) as? [String: Any], "\(text(output))")
            let streams = try #require(report["streams"] as? [[String: Any]], "\(report)")
            let sent = streams.map { ($0["codec"] as? String ?? "?", $0["packets"] as? Int ?? -1) }
            #expect(sent.map(\.0) == ["vp8", "opus"], "\(report)")

            // Every packet the sender counted arrived (on loopback nothing is lost), none asked
            // for again; the sequence numbers follow each other.
            let video = try distinctPackets(datagrams[0])
            let audio = try distinctPackets(datagrams[2])
            #expect(datagrams[0].count == sent.first?.1, "video datagrams (paced: \(paced)): \(sent)")
            #expect(datagrams[2].count == sent.last?.1, "audio datagrams (paced: \(paced)): \(sent)")
            for packets in [video, audio] {
                let numbers = packets.map(\.packet.header.sequenceNumber)
                #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "paced: \(paced)")
            }
            // The frames they carry are the files', byte for byte.
            var frames: [[UInt8]] = []
            var frame: [UInt8] = []
            var ends: [Double] = []
            for (seconds, packet) in video {
                try packet.withUnsafePayload { payload in
                    frame += payload[try VP8PayloadDescriptor(parsing: payload).byteCount...]
                }
                if packet.header.marker {
                    frames.append(frame)
                    frame = []
                    ends.append(seconds)
                }
            }
            let opusPackets = audio.map { entry in entry.packet.withUnsafePayload { [UInt8]($0) } }
            #expect(
                firstDifference(frames, sourceFrames) == nil,
                "paced: \(paced): \(frames.count) frames, the first unlike the file's at \(firstDifference(frames, sourceFrames) ?? -1)"
            )
            #expect(
                firstDifference(opusPackets, sourcePackets) == nil,
                "paced: \(paced): \(opusPackets.count) packets, the first unlike the file's at \(firstDifference(opusPackets, sourcePackets) ?? -1)"
            )
            frameTimes[paced] = ends
            audioTimes[paced] = audio.map(\.seconds)
        }
        // Paced, the video's 90 frames arrive over the file's 2.97 s, a frame period (33 ms) apart,
        // and the audio's 201 packets over 4 s; not paced, they all come as fast as the sender
        // reads and packetizes them (seen: video over 2.93-2.97 s, 33.3 ms apart, paced; over
        // 0.34-0.50 s, 4.3-5.3 ms apart, not; the audio over 4.00 s paced, 0.10 s not).
        func span(_ times: [Double]) -> Double { (times.last ?? 0) - (times.first ?? 0) }
        func medianGap(_ times: [Double]) -> Double {
            let gaps = zip(times, times.dropFirst()).map { $1 - $0 }.sorted()
            return gaps.isEmpty ? 0 : gaps[gaps.count / 2]
        }
        let (pacedVideo, burstVideo) = (frameTimes[true] ?? [], frameTimes[false] ?? [])
        let (pacedAudio, burstAudio) = (audioTimes[true] ?? [], audioTimes[false] ?? [])
        #expect(span(pacedVideo) >= 0.95 * 89 / 30 && span(pacedVideo) < 1.5 * 89 / 30, "\(span(pacedVideo)) s")
        #expect(abs(medianGap(pacedVideo) * 30 - 1) < 0.2, "paced: \(medianGap(pacedVideo)) s between frames")
        #expect(span(pacedAudio) >= 0.95 * 4 && span(pacedAudio) < 1.5 * 4, "paced audio: \(span(pacedAudio)) s")
        #expect(
            span(burstVideo) < 0.5 * span(pacedVideo) && span(burstAudio) < 0.5 * span(pacedAudio),
            "not paced: video over \(span(burstVideo)) s, audio over \(span(burstAudio)) s")
        #expect(
            medianGap(burstVideo) < 0.5 * medianGap(pacedVideo),
            "not paced: \(medianGap(burstVideo)) s between frames, against \(medianGap(pacedVideo)) s paced")
        // Not paced, the last frame and packet came well before their media times (2.97 and 3.98 s
        // after the first).
        #expect((burstVideo.last ?? 9) < 0.5 * 89 / 30 && (burstAudio.last ?? 9) < 0.5 * 4)
    }

    @Test(
        "send --no-pacing to pipebench receive: the video arrives whole, byte for byte, and the audio file holds every packet"
    )
    func noPacingReceived() throws {
        let folder = TemporaryFolder()
        let opus = folder.file("speech.opus")
        try AudioFileEncoder.encode(input: Fixtures.speechWAV, output: opus)
        let sdp = folder.file("ours.sdp")
        let senderErrors = folder.file("send.stderr")
        let sender = try RTPNetworkTests.startSend(
            [Fixtures.motionIVF, opus, "--no-pacing", "--quiet"], sdp: sdp, startDelay: 1.5, errors: senderErrors)
        defer { sender.finish(within: 0) }
        try #require(FileManager.default.fileExists(atPath: sdp), "no SDP from pipebench send: \(text(senderErrors))")
        let (video, audio) = (folder.file("video.ivf"), folder.file("audio.opus"))
        let received = try pipebench(["receive", sdp, video, audio, "--idle", "1.5", "--quiet", "--json"])
        #expect(sender.finish(within: 30), "the sender did not end")
        #expect(sender.terminationStatus == 0, "\(text(senderErrors))")
        #expect(received.status == 0, "\(received.stderr)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(received.stdout.utf8)) as? [String: Any], "\(received.stdout)")
        // The session ended by the sender's BYE, not by waiting; every packet came.
        #expect(report["endedBy"] as? String == "bye", "\(report)")
        let streams = report["streams"] as? [[String: Any]] ?? []
        let audioStream = streams.first { $0["kind"] as? String == "audio" }
        #expect(audioStream?["packets"] as? Int == 201 && audioStream?["packetsLost"] as? Int == 0, "\(report)")
        let videoFrames = try ivfFrames(video)
        let sourceFrames = try ivfFrames(Fixtures.motionIVF)
        #expect(
            firstDifference(videoFrames, sourceFrames) == nil,
            "\(videoFrames.count) frames, the first unlike the file's at \(firstDifference(videoFrames, sourceFrames) ?? -1)"
        )
        // The .opus file holds "the audio packets, as received", every one of the 201 in order:
        // the jitter buffer's queue holds 100 (2 s) and pushes the oldest out unplayed when a
        // burst brings more, and those go to the recording as they leave (before, about half
        // were missing: 102 and 107 kept, while the transport counted all 201 and none lost).
        let packets = try oggPackets(audio)
        let sourcePackets = try oggPackets(opus)
        #expect(
            firstDifference(packets, sourcePackets) == nil && packets.count == sourcePackets.count,
            "\(packets.count) packets of \(sourcePackets.count), the first unlike the file's at \(firstDifference(packets, sourcePackets) ?? -1)"
        )
    }

    @Test("receive --duration N ends after N s while the packets keep coming; the frames so far are in whole files")
    func receiveDuration() throws {
        let folder = TemporaryFolder()
        let opus = folder.file("speech.opus")
        try AudioFileEncoder.encode(input: Fixtures.speechWAV, output: opus)
        let sdp = folder.file("ours.sdp")
        // The sender starts 1 s after writing the SDP and sends 4 s of media at its pace.
        let sender = try RTPNetworkTests.startSend([Fixtures.motionIVF, opus, "--quiet"], sdp: sdp, startDelay: 1)
        defer { sender.finish(within: 0) }
        try #require(FileManager.default.fileExists(atPath: sdp), "no SDP from pipebench send")
        let (video, audio) = (folder.file("video.ivf"), folder.file("audio.opus"))
        let started = Date()
        // --wait 5: the first packet, after about 1 s, is in time.
        let received = try pipebench([
            "receive", sdp, video, audio, "--duration", "2.5", "--wait", "5", "--quiet", "--json",
        ])
        let elapsed = Date().timeIntervalSince(started)
        // Still sending when receive ended: about 1.5 s of the 4 s were sent.
        let stillSending = sender.isRunning
        #expect(sender.finish(within: 30), "the sender did not end")
        #expect(received.status == 0, "\(received.stderr)")
        #expect(stillSending, "the sender had ended before receive did (\(elapsed) s)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(received.stdout.utf8)) as? [String: Any], "\(received.stdout)")
        #expect(report["endedBy"] as? String == "duration", "\(report)")
        let seconds = try #require(report["seconds"] as? Double)
        // 2.5 s by its clock (2.504 s seen), and by this one with the process's start (2.57 s).
        #expect(seconds >= 2.5 && seconds < 3.5, "\(seconds) s")
        #expect(elapsed >= 2.5 && elapsed < 6, "\(elapsed) s")
        // The frames received until then, the source's first ones, in whole files.
        let frames = try ivfFrames(video)
        #expect((10..<90).contains(frames.count), "\(frames.count) frames")  // 45
        let sourceFrames = Array(try ivfFrames(Fixtures.motionIVF).prefix(frames.count))
        #expect(
            firstDifference(frames, sourceFrames) == nil, "frame \(firstDifference(frames, sourceFrames) ?? -1) differs"
        )
        let packets = try oggPackets(audio)
        #expect((20..<201).contains(packets.count), "\(packets.count) packets")  // 78
        let sourcePackets = Array(try oggPackets(opus).prefix(packets.count))
        #expect(
            firstDifference(packets, sourcePackets) == nil,
            "packet \(firstDifference(packets, sourcePackets) ?? -1) differs")
    }

    @Test("receive --wait N: with no packet, a one-line error naming the streams' ports after N s, not before")
    func receiveWait() throws {
        let folder = TemporaryFolder()
        // Ports the kernel chose and freed: nobody sends there.
        let port = try kernelUDPPorts(count: 4)
        let sdp = folder.file("peer.sdp")
        try
            ("v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n"
            + "m=video \(port) RTP/AVP 96\r\na=rtpmap:96 VP8/90000\r\n"
            + "m=audio \(port + 2) RTP/AVP 111\r\na=rtpmap:111 opus/48000/2\r\n")
            .write(toFile: sdp, atomically: true, encoding: .utf8)
        var taken: [Double: Double] = [:]
        for wait in [0.5, 2.5] {
            let started = Date()
            let result = try pipebench(["receive", sdp, folder.file("out.webm"), "--wait", "\(wait)", "--quiet"])
            taken[wait] = Date().timeIntervalSince(started)
            #expect(result.status == 1, "\(result)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(result.stderr)")
            // "no RTP packet arrived in 2.5 s (timeout) on the SDP's ports (audio P+2, video P): ..."
            let line = String(lines.first ?? "")
            #expect(line.contains("no RTP packet arrived in "), "\(line)")
            #expect(line.contains("video \(port)") && line.contains("audio \(port + 2)"), "\(line)")
            let said = line.components(separatedBy: "arrived in ").last?.split(separator: " ").first.flatMap {
                Double($0)
            }
            #expect(said.map { $0 >= wait && $0 < wait + 1 } == true, "\(line)")
            #expect(!FileManager.default.fileExists(atPath: folder.file("out.webm")))
        }
        // Not before N s, and not much after (0.57 and 2.57 s seen, with the process's start). (The
        // time between the two is not judged: beside a second suite, the 0.5 s run's start alone
        // took 0.9 s, 1.42 s in all.)
        let (short, long) = (taken[0.5] ?? 0, taken[2.5] ?? 0)
        #expect(short >= 0.5 && long >= 2.5, "\(taken)")
        #expect(long < 6, "\(taken)")
    }
}
