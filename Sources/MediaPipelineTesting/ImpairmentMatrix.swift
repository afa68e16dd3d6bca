import Foundation
import MediaPipeline

/// One cell of the impairment matrix: what the links between every remote user and the local
/// user do (both ways: media one way, feedback the other).
public struct ImpairmentCell: Sendable, Hashable, CustomStringConvertible {
    /// Packets lost, in percent.
    public var lossPercent: Double
    /// Mean loss burst in packets (1: uniform; above: Gilbert-Elliott bursts).
    public var meanBurstLength: Double
    /// Each packet's delay varies uniformly within ± this, in milliseconds.
    public var jitterMs: Double
    /// Packets held back 20 ms so later ones overtake them, in percent.
    public var reorderPercent: Double
    /// The round trip (half of it each way), in milliseconds.
    public var roundTripMs: Double

    /// A cell.
    public init(
        lossPercent: Double = 0, meanBurstLength: Double = 1, jitterMs: Double = 0, reorderPercent: Double = 0,
        roundTripMs: Double = 50
    ) {
        self.lossPercent = lossPercent
        self.meanBurstLength = meanBurstLength
        self.jitterMs = jitterMs
        self.reorderPercent = reorderPercent
        self.roundTripMs = roundTripMs
    }

    /// The link conditions of the cell.
    public var link: LinkConditions {
        var link = LinkConditions(
            lossPercent: lossPercent, meanBurstLength: lossPercent > 0 ? meanBurstLength : 1,
            delayMs: roundTripMs / 2, jitterMs: jitterMs, reorderPercent: reorderPercent)
        link.reorderDelayMs = 20
        return link
    }

    public var description: String {
        let loss = lossPercent == 0 ? "0" : "\(Int(lossPercent))\(meanBurstLength > 1 ? " burst" : "")"
        return
            "loss \(loss) %, jitter \(Int(jitterMs)) ms, reorder \(Int(reorderPercent)) %, RTT \(Int(roundTripMs)) ms"
    }

    /// The 95th percentile of the delay the link adds over its fastest path, in milliseconds:
    /// uniform jitter of ± ``jitterMs`` and, for ``reorderPercent`` of packets, 20 ms more
    /// (computed from the model, by a fixed-seed draw of 200,000 packets).
    public var jitterP95Ms: Double {
        var random = SplitMix64(seed: 95)
        var samples: [Double] = []
        samples.reserveCapacity(200_000)
        for _ in 0..<200_000 {
            let uniform = Double(random.next() >> 11) * 0x1.0p-53
            var delay = uniform * 2 * jitterMs
            if Double(random.next() >> 11) * 0x1.0p-53 * 100 < reorderPercent { delay += 20 }
            samples.append(delay)
        }
        samples.sort()
        return samples[samples.count * 95 / 100]
    }

    /// The whole matrix: loss 0, 5, 10, 20, 30 % (uniform, and bursty with mean burst 3),
    /// jitter 0, 20, 50 ms, reordering 0 and 5 %, round trip 50 and 200 ms.
    public static var matrix: [ImpairmentCell] {
        var cells: [ImpairmentCell] = []
        for (loss, burst) in [(0.0, 1.0)] + [5.0, 10, 20, 30].flatMap({ [($0, 1.0), ($0, 3.0)] }) {
            for jitter in [0.0, 20, 50] {
                for reorder in [0.0, 5] {
                    for roundTrip in [50.0, 200] {
                        cells.append(
                            ImpairmentCell(
                                lossPercent: loss, meanBurstLength: burst, jitterMs: jitter, reorderPercent: reorder,
                                roundTripMs: roundTrip))
                    }
                }
            }
        }
        return cells
    }

    /// The cells the issue's targets name, and a few around them.
    public static var targets: [ImpairmentCell] {
        [
            ImpairmentCell(jitterMs: 50, roundTripMs: 50),
            ImpairmentCell(lossPercent: 10, jitterMs: 20, roundTripMs: 50),
            ImpairmentCell(lossPercent: 30, roundTripMs: 50),
            ImpairmentCell(lossPercent: 30, meanBurstLength: 3, roundTripMs: 50),
            ImpairmentCell(lossPercent: 10, jitterMs: 50, reorderPercent: 5, roundTripMs: 200),
        ]
    }
}

/// What one cell measured, over every remote user of every channel.
public struct ImpairmentResult: Sendable {
    public var cell: ImpairmentCell
    /// Audio: 10 ms frames concealed or silent after the first 2 s, in percent of frames.
    public var audioConcealedPercent: Double
    /// Audio: the same, leaving out concealed frames that are silent themselves (under
    /// -50 dBFS: concealment of a pause, which nobody hears).
    public var audioAudibleConcealedPercent: Double
    /// Audio: mean playout delay over the fastest path (what the jitter buffer holds), in ms.
    public var audioMeanDelayMs: Double
    /// Audio: SNR of the played audio against the lossless run's, aligned by the sender's
    /// media time, in dB.
    public var audioSNRdB: Double
    /// Audio: lost packets rebuilt from in-band FEC.
    public var audioPacketsRecoveredByFEC: Int64
    /// Video: time frozen (Agora: gaps over 500 ms between decoded frames), in percent of the
    /// time video was shown.
    public var videoFrozenPercent: Double
    /// Video: pictures shown that differ from the lossless run's picture of the same frame
    /// (decoded across a gap). A frame the lossless run decoded but never showed (two frames
    /// due in one render: catching up at the start, or after a delay step) cannot be judged
    /// this way; those are counted in ``videoUnjudgedPictures``.
    public var videoWrongPictures: Int
    /// Video: pictures shown of frames the lossless run never showed, unless they match a
    /// picture it did show.
    public var videoUnjudgedPictures: Int
    /// Video: PSNR (luma) of the canvases against the lossless run's, at each render tick
    /// against its picture of the frame after the one shown at the tick before (repeats and
    /// skips count, a steady delay does not), in dB.
    public var videoPSNRdB: Double
    /// Video: keyframe requests sent, and the most sent for one stream.
    public var keyframeRequests: Int64, keyframeRequestsPerStreamMax: Int64
    /// Video: NACKs sent, and payload bytes the publishers retransmitted.
    public var nacksSent: Int64, bytesRetransmitted: Int64
    /// Packets the links dropped, and offered.
    public var packetsLostByLinks: Int64, packetsOffered: Int64
    /// Virtual seconds simulated, and the wall time it took.
    public var durationSeconds: Double, elapsedSeconds: Double
    /// Time from the impaired viewer's join to each remote stream's first decoded audio and
    /// picture (`firstRemoteAudioFrame` / `firstRemoteVideoFrame`), the slowest stream's, in ms
    /// (-1 when a stream never showed one).
    public var firstAudioMsMax: Int64 = -1, firstVideoMsMax: Int64 = -1
}

/// Runs the impairment matrix: per cell, a session of `channels` × `usersPerChannel` remote
/// broadcasters, each encoding its own speech and picture live (so keyframe requests, FEC and
/// bitrate adaptation act), received by two local users: one behind the cell's impaired links,
/// and a twin behind perfect links, the lossless run the first is measured against (the same
/// encoded media, since the publishers encode once for both). Deterministic for a seed.
public final class ImpairmentRunner {
    public let channels: Int
    public let usersPerChannel: Int
    public let durationSeconds: Double
    public let seed: UInt64
    private let media: SampleMedia
    /// The sample pictures at the canvas size (the remote users send them at this size).
    private let pictures: [I420Buffer]
    static let canvasWidth = 320, canvasHeight = 180

    /// Prepares the media (the sample pictures scaled to the canvas size).
    public init(
        media: SampleMedia, channels: Int = 2, usersPerChannel: Int = 4, durationSeconds: Double = 30,
        seed: UInt64 = 1
    ) throws {
        self.media = media
        self.channels = channels
        self.usersPerChannel = usersPerChannel
        self.durationSeconds = durationSeconds
        self.seed = seed
        let scaler = try CanvasBuffer(
            VideoCanvas(channelId: "scale", uid: 1, width: Self.canvasWidth, height: Self.canvasHeight))
        pictures = try media.pictures.map { picture in
            picture.withView { scaler.render($0) }
            return try scaler.snapshot()
        }
    }

    /// Runs `cell` and measures the impaired viewer against its lossless twin.
    public func run(_ cell: ImpairmentCell) throws -> ImpairmentResult {
        let start = Date()
        let (impaired, lossless) = try session(link: cell.link)
        return measure(cell, impaired, against: lossless, elapsed: Date().timeIntervalSince(start))
    }

    // MARK: - Sessions

    /// What one session left: per remote stream, its audio by media time and its canvas at
    /// every video tick; the last statistics; the publishers' counters.
    final class Capture: AudioFrameObserver, @unchecked Sendable {
        struct Stream {
            /// Mono (left) samples by media time since the stream's first RTP timestamp.
            var audio: [Int16] = []
            var audioSeen: [Bool] = []
            var firstRTP: UInt32?
            /// Per video tick: a digest of the whole canvas and its luma at half size.
            var digests: [Int] = []
            var luma: [[UInt8]] = []
            var rendered: [Int] = []
            /// The RTP timestamp of the picture shown at each video tick.
            var shown: [UInt32?] = []
        }
        var streams: [StreamKey: Stream] = [:]
        /// The clock time of each video tick, in milliseconds.
        var videoTickTimes: [Int64] = []
        var audioReports: [StreamKey: [RemoteAudioStats]] = [:]
        /// Each stream's first decoded audio and picture, in ms after the join.
        var firstAudioMs: [StreamKey: Int64] = [:], firstVideoMs: [StreamKey: Int64] = [:]
        var videoStats: [StreamKey: RemoteVideoStats] = [:]
        var bytesRetransmitted: Int64 = 0
        var keyframeRequests: Int64 = 0
        var packetsLost: Int64 = 0, packetsOffered: Int64 = 0
        private let lock = NSLock()
        let samplesCapacity: Int

        init(durationSeconds: Double) { samplesCapacity = Int(durationSeconds * 48_000) + 96_000 }

        func remoteAudioFrame(_ samples: UnsafeBufferPointer<Int16>, stream: StreamKey) {}

        func remoteAudioFrame(_ samples: UnsafeBufferPointer<Int16>, stream: StreamKey, rtpTimestamp: UInt32?) {
            guard let rtpTimestamp else { return }
            // In place: copying the entry out would copy the whole session's audio every tick.
            lock.withLock {
                update(stream) { entry in
                    if entry.audio.isEmpty {
                        entry.audio = [Int16](repeating: 0, count: samplesCapacity)
                        entry.audioSeen = [Bool](repeating: false, count: samplesCapacity)
                    }
                    let first = entry.firstRTP ?? rtpTimestamp
                    entry.firstRTP = first
                    let offset = Int(Int32(bitPattern: rtpTimestamp &- first))
                    for frame in 0..<(samples.count / 2) {
                        let index = offset + frame
                        guard index >= 0, index < samplesCapacity else { continue }
                        entry.audio[index] = samples[frame * 2]
                        entry.audioSeen[index] = true
                    }
                }
            }
        }

        /// Runs `body` on the stream's entry where it lies in ``streams`` (made when missing).
        private func update(_ key: StreamKey, _ body: (inout Stream) -> Void) {
            body(&streams[key, default: Stream()])
        }

        func mixedAudioFrame(_ samples: UnsafeBufferPointer<Int16>) {}

        /// Notes every canvas at a video tick at clock time `now`.
        func videoTick(_ canvases: [(StreamKey, CanvasBuffer)], now: Int64) {
            videoTickTimes.append(now / 1000)
            for (key, canvas) in canvases {
                update(key) { entry in
                    canvas.withLockedPicture { view in
                        var hasher = Hasher()
                        var luma = [UInt8](repeating: 0, count: (view.width / 2) * (view.height / 2))
                        for row in 0..<view.height {
                            let line = UnsafeRawBufferPointer(start: view.y + row * view.strideY, count: view.width)
                            hasher.combine(bytes: line)
                            if row % 2 == 0 && row / 2 < view.height / 2 {
                                for column in 0..<(view.width / 2) {
                                    luma[(row / 2) * (view.width / 2) + column] = line[column * 2]
                                }
                            }
                        }
                        for row in 0..<view.chromaHeight {
                            hasher.combine(
                                bytes: UnsafeRawBufferPointer(
                                    start: view.u + row * view.strideU, count: view.chromaWidth))
                            hasher.combine(
                                bytes: UnsafeRawBufferPointer(
                                    start: view.v + row * view.strideV, count: view.chromaWidth))
                        }
                        entry.digests.append(hasher.finalize())
                        entry.luma.append(luma)
                    }
                    entry.rendered.append(canvas.framesRendered)
                    entry.shown.append(canvas.renderedRTPTimestamp)
                }
            }
        }
    }

    private func uid(_ channel: Int, _ user: Int) -> UInt32 { UInt32(1000 + channel * 1000 + user) }

    /// A viewer: its engine, its channels, its canvases and what it captured.
    private struct Viewer {
        let engine: MediaEngine
        let capture: Capture
        var channels: [MediaChannel] = []
        var canvases: [(StreamKey, CanvasBuffer)] = []
    }

    /// One session: the impaired viewer (uid 1) behind `link`, its twin (uid 2) behind perfect
    /// links.
    private func session(link: LinkConditions) throws -> (impaired: Capture, lossless: Capture) {
        let clock = VirtualClock()
        let hub = LocalHub(clock: clock, seed: seed)
        var viewers: [Viewer] = []
        for viewerUid in [UInt32(1), 2] {
            var settings = EngineConfiguration()
            settings.randomSeed = seed &+ UInt64(viewerUid) << 40
            let engine = try MediaEngine(transport: hub, clock: clock, configuration: settings)
            let capture = Capture(durationSeconds: durationSeconds)
            engine.setAudioFrameObserver(capture)
            viewers.append(Viewer(engine: engine, capture: capture))
        }
        var remotes: [(engine: MediaEngine, offset: Int)] = []
        for channel in 0..<channels {
            let id = SessionSimulator.channelId(channel)
            for user in 0..<usersPerChannel {
                var remoteSettings = EngineConfiguration()
                remoteSettings.randomSeed = seed &+ UInt64(1 + channel * 1000 + user)
                remoteSettings.videoBitrateBitsPerSecond = 300_000
                let remote = try MediaEngine(transport: hub, clock: clock, configuration: remoteSettings)
                let handle = try remote.createChannel(id)
                try handle.join(
                    uid: uid(channel, user),
                    options: ChannelMediaOptions(autoSubscribeAudio: false, autoSubscribeVideo: false))
                remotes.append((remote, channel * usersPerChannel + user))
            }
            for (index, viewer) in viewers.enumerated() {
                let handle = try viewer.engine.createChannel(id)
                let capture = viewer.capture
                handle.setEventHandler { event in capture.record(event, channelId: id) }
                try handle.setClientRole(.audience)
                try handle.join(uid: UInt32(index + 1), options: .subscribeOnly)
                for user in 0..<usersPerChannel {
                    if index == 0 {
                        try hub.setLinkConditions(link, channelId: id, publisher: uid(channel, user), receiver: 1)
                    }
                    let canvas = try viewer.engine.setupRemoteVideo(
                        VideoCanvas(
                            channelId: id, uid: uid(channel, user), width: Self.canvasWidth,
                            height: Self.canvasHeight, renderMode: .hidden))
                    viewers[index].canvases.append((StreamKey(channelId: id, uid: uid(channel, user)), canvas))
                }
                viewers[index].channels.append(handle)
            }
        }
        // One tick more than the duration, so the last statistics report lands at its end.
        let ticks = Int((durationSeconds * 100).rounded()) + 1
        let tickMicroseconds: Int64 = 10_000  // 10 ms: the playout frame pulled each tick
        var mix = [Int16](repeating: 0, count: viewers[0].engine.playoutFrameSampleCount)
        // Video every whole number of the session's ticks (70 ms for the sample's 15 frames/s,
        // 14.3 frames/s). Frames are stamped with the tick they are pushed at and rendered on
        // those ticks, so a steady display delay moves every frame by the same number of ticks
        // and the PSNR measure charges it nothing, as it means to. At 66.7 ms the frames fell 70,
        // 70 and 60 ms apart, and a steady delay whose remainder modulo 200 ms was in (60, 70] or
        // (130, 140] ms made every third frame due up to 10 ms after its tick: shown a tick late
        // together with the next, a repeat and a skip each 200 ms (about 34 dB), won or lost by
        // 10 ms of render delay.
        let videoPeriod =
            (Int64(1_000_000 / media.videoFrameRate) + tickMicroseconds - 1) / tickMicroseconds
            * tickMicroseconds
        var nextVideo: Int64 = 0
        var videoIndex = 0
        for tick in 0..<ticks {
            let now = clock.nowMicroseconds
            for remote in remotes {
                // Each user speaks another part of the sample: streams differ.
                try remote.engine.pushAudio(media.audioFrames[(tick + remote.offset * 173) % media.audioFrames.count])
            }
            let videoDue = now >= nextVideo
            if videoDue {
                for remote in remotes {
                    let picture = pictures[(videoIndex + remote.offset * 7) % pictures.count]
                    try remote.engine.pushVideo(picture, timestampMicroseconds: now)
                }
                videoIndex += 1
                nextVideo += videoPeriod
            }
            for viewer in viewers {
                mix.withUnsafeMutableBufferPointer { viewer.engine.pullPlayout(into: $0) }
                if videoDue {
                    viewer.engine.renderVideo()
                    viewer.capture.videoTick(viewer.canvases, now: now)
                }
            }
            clock.advance(byMicroseconds: tickMicroseconds)
            hub.deliverDue()
        }
        let impaired = viewers[0].capture
        for remote in remotes { impaired.bytesRetransmitted += remote.engine.statistics.bytesRetransmitted }
        for viewer in viewers {
            viewer.capture.keyframeRequests = viewer.engine.statistics.keyframeRequestsSent
            for (channel, handle) in viewer.channels.enumerated() {
                for user in 0..<usersPerChannel {
                    let key = StreamKey(channelId: handle.channelId, uid: uid(channel, user))
                    viewer.capture.videoStats[key] = handle.remoteVideoStats(key.uid)
                }
            }
        }
        for (channel, handle) in viewers[0].channels.enumerated() {
            for user in 0..<usersPerChannel {
                if let one = hub.linkStatistics(channelId: handle.channelId, publisher: uid(channel, user), receiver: 1)
                {
                    impaired.packetsLost += one.packetsLost
                    impaired.packetsOffered += one.packetsOffered
                }
            }
        }
        for viewer in viewers { viewer.engine.destroy() }
        for remote in remotes { remote.engine.destroy() }
        return (impaired, viewers[1].capture)
    }

    // MARK: - Measures

    private func measure(_ cell: ImpairmentCell, _ capture: Capture, against reference: Capture, elapsed: Double)
        -> ImpairmentResult
    {
        var frames: Int64 = 0
        var concealed: Int64 = 0
        var silentConcealed: Int64 = 0
        var delaySum = 0.0
        var delayCount = 0
        var recovered: Int64 = 0
        for (_, reports) in capture.audioReports {
            guard let first = reports.first, let last = reports.last else { continue }
            frames += last.frames - first.frames
            concealed += last.framesConcealed - first.framesConcealed
            silentConcealed += last.framesConcealedSilent - first.framesConcealedSilent
            recovered += last.packetsRecoveredByFEC
            for report in reports.dropFirst() {
                delaySum += Double(report.jitterBufferDelayMs)
                delayCount += 1
            }
        }
        // Audio SNR: each played sample against the lossless run's at the same media time.
        var signal = 0.0
        var noise = 0.0
        for (key, stream) in capture.streams where !stream.audio.isEmpty {
            guard let ideal = reference.streams[key], !ideal.audio.isEmpty,
                let first = stream.firstRTP, let idealFirst = ideal.firstRTP
            else { continue }
            let shift = Int(Int32(bitPattern: first &- idealFirst))
            // After the first 2 s (both viewers settle their delay then).
            for index in 96_000..<stream.audio.count where stream.audioSeen[index] {
                let other = index + shift
                guard other >= 0, other < ideal.audio.count, ideal.audioSeen[other] else { continue }
                let r = Double(ideal.audio[other])
                let e = Double(stream.audio[index]) - r
                signal += r * r
                noise += e * e
            }
        }
        // Video: pictures the lossless run never showed, and PSNR against it along the
        // viewer's own time line: at each tick, the picture shown against the twin's picture of
        // the frame after the one shown at the tick before. A steady stream shows exactly that
        // (whatever its delay); a repeated picture (a late frame, a freeze, a step up in delay)
        // or a skipped frame (catching up) counts as the difference it makes.
        var wrong = 0
        var unjudged = 0
        var squaredError = 0.0
        var pixels = 0.0
        for (key, stream) in capture.streams where !stream.digests.isEmpty {
            guard let ideal = reference.streams[key], !ideal.digests.isEmpty,
                let base = ideal.shown.compactMap({ $0 }).first
            else { continue }
            let digests = Set(ideal.digests)
            // The lossless run's pictures by the frame they show.
            var twinPictures: [UInt32: Set<Int>] = [:]
            for (tick, rtp) in ideal.shown.enumerated() where ideal.rendered[tick] > 0 {
                if let rtp { twinPictures[rtp, default: []].insert(ideal.digests[tick]) }
            }
            var shownBefore = 0
            for (tick, digest) in stream.digests.enumerated() {
                if stream.rendered[tick] != shownBefore && stream.rendered[tick] > 0 && !digests.contains(digest) {
                    if let rtp = stream.shown[tick], twinPictures[rtp] != nil {
                        wrong += 1
                    } else {
                        unjudged += 1
                    }
                }
                shownBefore = stream.rendered[tick]
            }
            // The twin's pictures by media time (milliseconds since its first), first showing.
            func milliseconds(_ rtp: UInt32) -> Int64 { Int64(Int32(bitPattern: rtp &- base)) / 90 }
            var twin: [(time: Int64, tick: Int)] = []
            for (tick, rtp) in ideal.shown.enumerated() {
                guard let rtp, twin.last.map({ $0.time != milliseconds(rtp) }) ?? true else { continue }
                twin.append((milliseconds(rtp), tick))
            }
            twin.sort { $0.time < $1.time }
            // From 2 s on, as the audio.
            let times = capture.videoTickTimes
            var tick = max(1, times.firstIndex { $0 >= 2000 } ?? 0)
            while tick < stream.luma.count {
                defer { tick += 1 }
                guard let before = stream.shown[tick - 1].map(milliseconds) else { continue }
                // The twin's first frame after the one shown before.
                var low = 0
                var high = twin.count
                while low < high {
                    let middle = (low + high) / 2
                    if twin[middle].time <= before { low = middle + 1 } else { high = middle }
                }
                guard low < twin.count else { continue }
                let a = stream.luma[tick]
                let b = ideal.luma[twin[low].tick]
                var sum = 0
                for index in a.indices {
                    let difference = Int(a[index]) - Int(b[index])
                    sum += difference * difference
                }
                squaredError += Double(sum)
                pixels += Double(a.count)
            }
        }
        let mse = pixels > 0 ? squaredError / pixels : 0
        var frozen = 0.0
        var active = 0.0
        var nacks: Int64 = 0
        var keyframesMax: Int64 = 0
        for stats in capture.videoStats.values {
            frozen += Double(stats.totalFrozenTimeMs)
            active += Double(stats.totalActiveTimeMs)
            nacks += stats.nacksSent
            keyframesMax = max(keyframesMax, stats.keyframeRequestsSent)
        }
        return ImpairmentResult(
            cell: cell,
            audioConcealedPercent: frames > 0 ? Double(concealed) * 100 / Double(frames) : 0,
            audioAudibleConcealedPercent: frames > 0 ? Double(concealed - silentConcealed) * 100 / Double(frames) : 0,
            audioMeanDelayMs: delayCount > 0 ? delaySum / Double(delayCount) : 0,
            audioSNRdB: noise == 0 ? 99 : min(99, 10 * log10(signal / noise)),
            audioPacketsRecoveredByFEC: recovered,
            videoFrozenPercent: active > 0 ? frozen * 100 / active : 0,
            videoWrongPictures: wrong, videoUnjudgedPictures: unjudged,
            videoPSNRdB: mse == 0 ? 99 : min(99, 10 * log10(255 * 255 / mse)),
            keyframeRequests: capture.keyframeRequests, keyframeRequestsPerStreamMax: keyframesMax,
            nacksSent: nacks, bytesRetransmitted: capture.bytesRetransmitted,
            packetsLostByLinks: capture.packetsLost, packetsOffered: capture.packetsOffered,
            durationSeconds: durationSeconds, elapsedSeconds: elapsed,
            firstAudioMsMax: capture.slowestFirst(\.firstAudioMs), firstVideoMsMax: capture.slowestFirst(\.firstVideoMs)
        )
    }
}

extension ImpairmentRunner.Capture {
    /// The slowest stream's first frame (ms after the join) among every stream seen; -1 when a
    /// stream with media never had one.
    func slowestFirst(_ firsts: KeyPath<ImpairmentRunner.Capture, [StreamKey: Int64]>) -> Int64 {
        let seen = self[keyPath: firsts]
        guard !streams.isEmpty, streams.keys.allSatisfy({ seen[$0] != nil }) else { return -1 }
        return seen.values.max() ?? -1
    }

    /// Keeps each remote user's audio statistics reports, in order.
    func record(_ event: ChannelEvent, channelId: String) {
        switch event {
        case .remoteAudioStats(let stats):
            lock.withLock {
                audioReports[StreamKey(channelId: channelId, uid: stats.uid), default: []].append(stats)
            }
        case .firstRemoteAudioFrame(let uid, let elapsedMs, _):
            lock.withLock { firstAudioMs[StreamKey(channelId: channelId, uid: uid)] = elapsedMs }
        case .firstRemoteVideoFrame(let uid, _, _, let elapsedMs, _):
            lock.withLock { firstVideoMs[StreamKey(channelId: channelId, uid: uid)] = elapsedMs }
        default:
            break
        }
    }
}
