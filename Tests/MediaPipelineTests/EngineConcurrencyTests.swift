import Foundation
import Synchronization
import Testing

@testable import MediaPipeline

/// Checks that a channel's events arrive complete and in order: every state change starts
/// from the state the previous change of the same thing ended in.
private final class EventChain: @unchecked Sendable {
    private let lock = NSLock()
    private var publish: [MediaKind: PublishState] = [:]
    private var subscribe: [String: SubscribeState] = [:]
    private var role: ClientRole?
    private(set) var remote: [String: RemoteStreamState] = [:]
    private(set) var breaks: [String] = []
    private(set) var count = 0

    func record(_ event: ChannelEvent) {
        lock.withLock {
            count += 1
            switch event {
            case .localPublishStateChanged(let kind, let old, let new, _):
                if let last = publish[kind], last != old {
                    breaks.append("publish \(kind): \(last) then \(old)->\(new)")
                }
                publish[kind] = new
            case .remoteSubscribeStateChanged(let uid, let kind, let old, let new, _):
                let key = "\(uid)/\(kind)"
                if let last = subscribe[key], last != old {
                    breaks.append("subscribe \(key): \(last) then \(old)->\(new)")
                }
                subscribe[key] = new
            case .clientRoleChanged(let old, let new):
                if let last = role, last != old { breaks.append("role: \(last) then \(old)->\(new)") }
                role = new
            case .remoteAudioStateChanged(let uid, let state, _, _):
                remote["\(uid)/audio"] = state
            case .remoteVideoStateChanged(let uid, let state, _, _):
                remote["\(uid)/video"] = state
            default:
                break
            }
        }
    }

    var snapshot: (breaks: [String], remote: [String: RemoteStreamState], count: Int) {
        lock.withLock { (breaks, remote, count) }
    }
}

/// Runs `body(0)` … `body(count - 1)` on `count` threads of their own, started together, and
/// waits for all of them (unlike `concurrentPerform`, which runs no more bodies at once than
/// there are cores).
private func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let start = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for index in 0..<count {
        done.enter()
        let thread = Thread {
            start.wait()
            body(index)
            done.leave()
        }
        thread.start()
    }
    for _ in 0..<count { start.signal() }
    done.wait()
}

/// What `viewer` believes `publisher` sends in `channelId`, and what it does send there.
private func beliefs(viewer: MediaEngine, publisher: MediaEngine, channelId: String, uid: UInt32) -> (
    believed: PublishedMedia, sent: PublishedMedia
) {
    let believed = viewer.control.withLock { plane in
        plane.joinedIndex(channelId).flatMap { c in plane.channels[c].users.first { $0.uid == uid }?.media } ?? []
    }
    let sent = publisher.control.withLock { plane in
        plane.joinedIndex(channelId).map { plane.channels[$0].publishedMedia } ?? []
    }
    return (believed, sent)
}

/// A subscribing engine (uid 1, channel "a") and the remote publisher it subscribes to (uid 10),
/// on `session`'s hub and clock.
private func subscriberOfOneUser(_ session: TestSession) throws -> (
    local: MediaEngine, sender: MediaEngine, channel: MediaChannel
) {
    let engine = try session.user()
    let remote = try session.user()
    try remote.join("a", uid: 10)
    let channel = try engine.channel("a")
    try channel.join(uid: 1, options: .subscribeOnly)
    return (engine.engine, remote.engine, channel)
}

/// Pre-encoded media for remote publishers: 20 ms Opus packets and 160x90 VP8 frames.
private func remoteMedia() throws -> (opus: [EncodedFrame], vp8: [EncodedFrame]) {
    let encoder = try OpusEncoder(configuration: OpusEncoderConfiguration())
    let tone = testTone(samplesPerChannel: 960 * 25)
    let opus = try (0..<25).map { index in
        try encoder.encode(
            AudioFrame(
                samples: Array(tone[(index * 1920)..<((index + 1) * 1920)]), sampleRate: 48000, channelCount: 2))
    }
    var settings = VPXEncoderConfiguration(codec: .vp8, width: 160, height: 90)
    settings.bitrateBitsPerSecond = 200_000
    let video = try VPXEncoder(configuration: settings)
    let vp8 = try (0..<15).map { index in
        try video.encode(
            try syntheticPicture(width: 160, height: 90, frame: index), timestampMicroseconds: Int64(index) * 66_666,
            forceKeyframe: index == 0)
    }
    return (opus, vp8)
}

@Suite("Engine driven from many threads")
struct EngineConcurrencyTests {
    @Test("two threads muting audio and video at once: viewers always learn what is sent (1,000 rounds)")
    func concurrentMutes() throws {
        let session = TestSession()
        let (host, viewer) = try session.hostAndViewer()
        let channel = try host.channel("a")
        var generator = SplitMix64(seed: 11)
        for round in 0..<1000 {
            let (muteAudio, muteVideo) = (generator.next() & 1 == 0, generator.next() & 1 == 0)
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                if index == 0 {
                    try? channel.muteLocalAudioStream(muteAudio)
                } else {
                    try? channel.muteLocalVideoStream(muteVideo)
                }
            }
            let (believed, sent) = beliefs(viewer: viewer.engine, publisher: host.engine, channelId: "a", uid: 1)
            var expected: PublishedMedia = []
            if !muteAudio { expected.insert(.audio) }
            if !muteVideo { expected.insert(.video) }
            #expect(sent == expected, "round \(round)")
            #expect(believed == sent, "round \(round): the viewer believes \(believed), the host sends \(sent)")
            if believed != sent { break }
        }
    }

    @Test("a user's stream totals read on one thread while another pulls playout: every read whole and never behind")
    func totalsWhilePlaying() throws {
        let session = TestSession()
        let (local, sender, channel) = try subscriberOfOneUser(session)
        let media = try remoteMedia()
        let clock = session.clock
        let ticks = 1_000
        let reads = LockedValue<[RemoteStreamTotals]>([])
        let playing = Atomic<Bool>(true)
        runOnThreads(2) { role in
            if role == 0 {  // packets and playout
                var playout = [Int16](repeating: 0, count: local.playoutFrameSampleCount)
                for index in 0..<ticks {
                    if index % 2 == 0 {
                        #expect(throws: Never.self) {
                            try sender.pushEncodedFrame(
                                media.opus[(index / 2) % media.opus.count].restamped(Int64(index) * 10_000))
                        }
                    }
                    playout.withUnsafeMutableBufferPointer { local.pullPlayout(into: $0) }
                    clock.advance(byMicroseconds: 10_000)
                }
                playing.store(false, ordering: .releasing)
            } else {  // totals, as an app's statistics timer reads them, for as long as playout runs
                while playing.load(ordering: .acquiring) {
                    if let totals = channel.remoteStreamTotals(10) { reads.withLock { $0.append(totals) } }
                    usleep(100)  // an app's timer reads far less often; this keeps the list small
                }
            }
        }
        let seen = reads.withLock { $0 }
        // The reads overlapped the playout: they saw many different tick counts.
        #expect(Set(seen.map(\.audioFrames)).count > 10, "\(seen.count) reads")
        // Counters only grow, and each read is one tick's whole set: decoded never above ticks.
        for (earlier, later) in zip(seen, seen.dropFirst()) {
            #expect(
                later.audioFrames >= earlier.audioFrames && later.audioPacketsDecoded >= earlier.audioPacketsDecoded)
        }
        #expect(seen.allSatisfy { $0.audioFramesConcealed <= $0.audioFrames })
        let last = try #require(channel.remoteStreamTotals(10))
        #expect(last.audioFrames >= Int64(ticks) - 20 && last.audioPacketsDecoded >= Int64(ticks / 2) - 20, "\(last)")
    }

    @Test("control calls, local media, playout, packet arrival, rendering and events on 6 threads at once")
    func manyThreads() throws {
        let session = TestSession()
        let engine = try session.user()
        let viewer = try session.user()
        let remotes = try (0..<3).map { _ in try session.user() }
        try remotes[0].join("a", uid: 10)
        try remotes[1].join("b", uid: 20)
        try remotes[2].join("b", uid: 21)
        let channelA = try engine.channel("a")
        let channelB = try engine.channel("b")
        let chains = ["a": EventChain(), "b": EventChain()]
        channelA.setEventHandler { chains["a"]!.record($0) }
        channelB.setEventHandler { chains["b"]!.record($0) }
        try channelA.join(uid: 1)
        try channelB.setClientRole(.audience)
        try channelB.join(uid: 1, options: .subscribeOnly)
        try viewer.join("a", uid: 2, options: .subscribeOnly, role: .audience)
        let canvas = try engine.engine.setupRemoteVideo(VideoCanvas(channelId: "b", uid: 20, width: 80, height: 45))
        let media = try remoteMedia()
        let iterations = 2000
        let clock = session.clock
        let local = engine.engine
        let remoteEngines = remotes.map(\.engine)
        let tone = testTone(samplesPerChannel: 480 * 20)
        let audio = (0..<20).map {
            AudioFrame(samples: Array(tone[($0 * 960)..<(($0 + 1) * 960)]), sampleRate: 48000, channelCount: 2)
        }
        let pictures = try (0..<4).map { try syntheticPicture(width: 160, height: 90, frame: $0 * 5) }

        runOnThreads(6) { role in
            var random = SplitMix64(seed: UInt64(role) + 100)
            var playout = [Int16](repeating: 0, count: local.playoutFrameSampleCount)
            for index in 0..<iterations {
                switch role {
                case 0:  // control: local audio, remote mutes, volume
                    try? channelA.muteLocalAudioStream(random.next() % 3 == 0)
                    if index % 10 == 0 { try? channelB.muteRemoteVideoStream(21, mute: random.next() & 1 == 0) }
                    if index % 15 == 0 {
                        try? channelB.adjustUserPlaybackSignalVolume(20, volume: Int(random.next() % 200))
                    }
                    if index % 40 == 0 { try? channelB.enableChannelMix(random.next() & 1 == 0) }
                case 1:  // control: local video, role changes, statistics
                    try? channelA.muteLocalVideoStream(random.next() % 3 == 0)
                    _ = local.statistics
                    _ = channelB.statistics
                    if index % 100 == 50 {
                        try? channelA.setClientRole(.audience)
                        try? channelA.setClientRole(.broadcaster)
                    }
                case 2:  // local media
                    try? local.pushAudio(audio[index % audio.count])
                    if index % 7 == 0 {
                        try? local.pushVideo(
                            pictures[index / 7 % pictures.count], timestampMicroseconds: clock.nowMicroseconds)
                    }
                case 3:  // playout, and the clock
                    playout.withUnsafeMutableBufferPointer { local.pullPlayout(into: $0) }
                    clock.advance(byMicroseconds: 10_000)
                case 4:  // packets arriving from remote users
                    for (offset, remote) in remoteEngines.enumerated() {
                        #expect(throws: Never.self) {
                            try remote.pushEncodedFrame(
                                media.opus[(index + offset) % media.opus.count].restamped(Int64(index) * 20_000))
                        }
                        if index % 5 == 0 {
                            #expect(throws: Never.self) {
                                try remote.pushEncodedFrame(
                                    media.vp8[(index / 5) % media.vp8.count].restamped(Int64(index) * 20_000))
                            }
                        }
                    }
                default:  // rendering, and reading a canvas
                    local.renderVideo()
                    _ = canvas.framesRendered
                }
            }
        }
        local.flushActions()

        let (believed, sent) = beliefs(viewer: viewer.engine, publisher: local, channelId: "a", uid: 1)
        #expect(believed == sent, "the viewer believes \(believed); the engine sends \(sent)")
        // Every remote user's audio and video in each channel moved through the state machine
        // (and the chain of its events never broke).
        let streams = ["a": ["10/audio", "10/video"], "b": ["20/audio", "20/video", "21/audio", "21/video"]]
        for (id, channel) in [("a", channelA), ("b", channelB)] {
            let (breaks, remote, _) = chains[id]!.snapshot
            #expect(Set(remote.keys) == Set(streams[id]!), "channel \(id): streams with events \(remote.keys.sorted())")
            #expect(breaks.isEmpty, "channel \(id): \(breaks.prefix(5))")
            for (key, last) in remote {
                let parts = key.split(separator: "/")
                let uid = UInt32(parts[0])!
                let kind: MediaKind = parts[1] == "audio" ? .audio : .video
                #expect(channel.remoteState(uid, kind) == last, "channel \(id) \(key): last event \(last)")
            }
        }
        // How much media got through the storm depends on scheduling; that the engine is still
        // whole does not: a second of media afterwards, on one thread, decodes.
        let before = channelB.statistics
        var playout = [Int16](repeating: 0, count: local.playoutFrameSampleCount)
        for index in 0..<50 {
            let time = Int64(50_000_000 + index * 20_000)
            for remote in remoteEngines {
                try remote.pushEncodedFrame(media.opus[index % media.opus.count].restamped(time))
                if index % 3 == 0 {
                    try remote.pushEncodedFrame(media.vp8[index / 3 % media.vp8.count].restamped(time))
                }
            }
            for _ in 0..<2 {
                playout.withUnsafeMutableBufferPointer { local.pullPlayout(into: $0) }
                clock.advance(byMicroseconds: 10_000)
            }
            local.renderVideo()
        }
        let stats = channelB.statistics
        #expect(stats.audioFramesDecoded > before.audioFramesDecoded)
        #expect(stats.videoFramesDecoded > before.videoFramesDecoded)
        // Likewise local audio: the storm may have ended muted (the control thread can finish
        // first), so unmute and push 40 ms.
        let encodedBefore = local.statistics.audioFramesEncoded
        try channelA.setClientRole(.broadcaster)
        try channelA.muteLocalAudioStream(false)
        for index in 0..<4 { try local.pushAudio(audio[index]) }
        #expect(local.statistics.audioFramesEncoded >= encodedBefore + 2)
    }
}

@Suite("Receive router")
struct ReceiveRouterTests {
    @Test(
        "packets of a subscribed stream reach its receiver while another thread holds the control lock; the statistics count them all afterwards"
    )
    func packetsPassTheControlLock() throws {
        let session = TestSession()
        let (local, sender, channel) = try subscriberOfOneUser(session)
        let media = try remoteMedia()
        // The first packets settle the stream (STARTING, SUBSCRIBED: decisions of the control plane).
        for index in 0..<5 { try sender.pushEncodedFrame(media.opus[index].restamped(Int64(index) * 20_000)) }
        let before = channel.statistics.rxPackets
        #expect(before == 5)
        let held = DispatchSemaphore(value: 0)
        let delivered = DispatchSemaphore(value: 0)
        let passed = Atomic<Bool>(false)
        let holder = Thread {
            local.control.withLock { _ in
                held.signal()
                // Bounded: were the packet path to need this lock, the pushes below would wait
                // for it, and the wait would end here after 5 s with nothing delivered.
                passed.store(delivered.wait(timeout: .now() + 5) == .success, ordering: .releasing)
            }
        }
        holder.start()
        held.wait()
        for index in 5..<25 { try sender.pushEncodedFrame(media.opus[index].restamped(Int64(index) * 20_000)) }
        delivered.signal()
        // The holder lets go once it saw the pushes through (or timed out); then the lock is free.
        let stats = channel.statistics
        let passedWhileHeld = passed.load(ordering: .acquiring)
        #expect(passedWhileHeld)
        #expect(stats.rxPackets == before + 20)
        #expect(stats.rxAudioBytes == media.opus.prefix(25).reduce(0) { $0 + Int64($1.byteCount) })
    }
}
