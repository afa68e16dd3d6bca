#if canImport(Glibc)
    import Glibc
#endif

/// What a composition did.
public struct CompositionSummary: Sendable, Equatable {
    /// The file written.
    public var output: String
    /// Pictures and Opus packets written.
    public var pictures: Int64, audioPackets: Int64
    /// Video frames decoded from the inputs, and the inputs with audio.
    public var framesDecoded: Int64, audioInputs: Int
    /// The composition's length in seconds.
    public var durationSeconds: Double
}

/// Lays video files into a grid and mixes their audio into one WebM file: the offline
/// counterpart of ffmpeg's `xstack` and `amix`, with the engine's grid layout, scaler and mixer.
///
/// Each input (IVF, WebM, or Ogg Opus for audio alone) keeps its own timing: at each output
/// picture time, every tile shows the input's latest frame due by then (its last one after it
/// ends), and its audio plays from the start. Inputs decode in parallel on `threads` threads,
/// each scaling its newest picture into its own cell.
public enum FileCompositor {
    /// Composes `inputs` (in grid order) into `output` (`.webm`): `width` × `height` pictures
    /// at `framesPerSecond`, as long as the longest input.
    /// - Throws: ``MediaError`` naming the file for an input that is not IVF, WebM or Ogg Opus,
    ///   that is corrupt, or that lasts more than 24 hours; ``MediaError/Code/invalidArgument``
    ///   for no input, or an output that is not `.webm`.
    @discardableResult
    public static func compose(
        inputs: [String], output: String, width: Int = 1920, height: Int = 1080, framesPerSecond: Int = 30,
        videoSettings: VPXEncoderConfiguration = VPXEncoderConfiguration(width: 1, height: 1), threads: Int = 2,
        progress: ProgressHandler? = nil
    ) throws -> CompositionSummary {
        guard !inputs.isEmpty else { throw MediaError.invalidArgument("compose needs an input file") }
        guard MediaFileKind.forOutput(path: output) == .webm else {
            throw MediaError.invalidArgument("\(output): compose writes a .webm file")
        }
        guard (16...8192).contains(width), (16...8192).contains(height), width % 2 == 0, height % 2 == 0 else {
            throw MediaError.invalidArgument("compose picture size \(width)x\(height): even, 16...8192")
        }
        let sources = try inputs.map(CompositionInput.init(path:))
        let tiles = sources.filter { $0.video != nil }
        guard !tiles.isEmpty else {
            throw MediaError.invalidArgument(
                "compose: no input has video (\(inputs.joined(separator: ", "))): the grid needs at least one; "
                    + "audio alone is re-encoded by `encode` or copied by `remux`")
        }
        let layout = GridLayout(count: tiles.count, width: width, height: height)
        for (index, tile) in tiles.enumerated() {
            let cell = layout.cell(index)
            tile.cell = PictureScaler.Rect(x: cell.x, y: cell.y, width: cell.width, height: cell.height)
        }
        let grid = try I420Buffer(width: width, height: height)
        grid.withMutableView { $0.fill(y: CanvasBlack.y, u: CanvasBlack.u, v: CanvasBlack.v) }
        let writer = try CompositeWriter(
            path: output, width: width, height: height, framesPerSecond: framesPerSecond, videoSettings: videoSettings)
        let round = CompositionRound(tiles: tiles)
        let workers = ParallelWorkers(threads: max(1, threads))
        let mixer = try AudioMixer(sampleRate: 48_000, channelCount: 2)
        let audible = sources.filter { $0.audio != nil }
        var mix = [Int16](repeating: 0, count: 960)
        var inputs: [MixerInput] = []
        let length = sources.map(\.durationSeconds).max() ?? 0
        let pictures = max(1, Int((length * Double(framesPerSecond)).rounded(.up)))
        var audioFrames = 0
        for index in 0..<pictures {
            let time = Double(index) / Double(framesPerSecond)
            try grid.withMutableView { view in
                round.time = time
                round.grid = view
                workers.run(tiles.count, on: round)
                round.grid = nil
                if let failure = round.takeFailure() { throw failure }
                try writer.addPicture(
                    view.readOnly, timestampMicroseconds: Int64(index) * 1_000_000 / Int64(framesPerSecond))
            }
            // The 10 ms mix frames up to the next picture.
            let until = Int((Double(index + 1) / Double(framesPerSecond) * 100).rounded())
            while audioFrames < until, !audible.isEmpty {
                inputs.removeAll(keepingCapacity: true)
                for (number, source) in audible.enumerated() {
                    guard let frame = try source.audio!.nextFrame() else { continue }
                    inputs.append(
                        MixerInput(
                            key: StreamKey(channelId: "compose", uid: UInt32(number)), samples: frame, gain: 1))
                }
                mix.withUnsafeMutableBufferPointer { mixer.mix(inputs, into: $0) }
                try mix.withUnsafeBufferPointer { try writer.addAudio($0) }
                audioFrames += 1
            }
            if let progress, index % 15 == 0 { progress(Double(index) / Double(pictures)) }
        }
        try writer.finish()
        progress?(1)
        return CompositionSummary(
            output: output, pictures: writer.pictures, audioPackets: writer.audioPackets,
            framesDecoded: tiles.reduce(0) { $0 + $1.framesDecoded }, audioInputs: audible.count,
            durationSeconds: Double(pictures) / Double(framesPerSecond))
    }
}

/// One composition round: every tile decodes up to the round's time, on the worker threads.
private final class CompositionRound: ParallelJobSource, @unchecked Sendable {
    let tiles: [CompositionInput]
    var time = 0.0
    var grid: I420MutableView?
    private let failures = LockedValue<MediaError?>(nil)

    init(tiles: [CompositionInput]) { self.tiles = tiles }

    func runJob(_ index: Int) {
        guard let grid else { return }
        do {
            try tiles[index].advance(to: time, into: grid)
        } catch let error as MediaError {
            failures.withLock { $0 = $0 ?? error.attributed(to: tiles[index].path) }
        } catch {
            failures.withLock { $0 = $0 ?? MediaError(.io, "\(error)", file: tiles[index].path) }
        }
    }

    func takeFailure() -> MediaError? {
        failures.withLock { value in
            defer { value = nil }
            return value
        }
    }
}

/// One input file of a composition: its video (frames decoded as their times come, the newest
/// scaled into its cell) and its audio (decoded to 48 kHz stereo, 10 ms at a time).
private final class CompositionInput {
    let path: String
    let video: VideoFileSource?
    let audio: CompositionAudio?
    let durationSeconds: Double
    /// The longest input composed: 24 hours.
    static let longestSeconds: Double = 86_400

    /// `seconds`, the probed length of the input at `path`, when it is composable: a file's
    /// times may claim any span, and the composition draws every picture of it.
    private static func composable(_ seconds: Double, _ path: String) throws -> Double {
        guard seconds.isFinite, seconds <= longestSeconds else {
            throw MediaError.unsupported(
                "lasts \(seconds) s by its frame times; compose makes at most \(Int(longestSeconds)) s", file: path)
        }
        return seconds
    }
    var cell = PictureScaler.Rect(x: 0, y: 0, width: 0, height: 0)
    private(set) var framesDecoded: Int64 = 0
    private var decoder: VPXDecoder?
    private var pending: (bytes: [UInt8], seconds: Double)?

    init(path: String) throws {
        self.path = path
        let kind = try MediaFileKind.detect(path: path)
        switch kind {
        case .ivf, .webm:
            let info = try MediaFileInfo.probe(path: path)
            durationSeconds = try Self.composable(info.durationSeconds, path)
            let hasVideo = kind == .ivf || info.tracks.contains { $0.codec?.kind == .video }
            video = hasVideo ? try VideoFileSource(path: path) : nil
            audio = kind == .webm && info.tracks.contains { $0.codec == .opus } ? try CompositionAudio(path: path) : nil
        case .oggOpus:
            durationSeconds = try Self.composable(MediaFileInfo.probe(path: path).durationSeconds, path)
            video = nil
            audio = try CompositionAudio(path: path)
        default:
            throw MediaError.unsupported("is \(kind.rawValue); compose takes IVF, WebM or Ogg Opus", file: path)
        }
        if let video {
            decoder = try VPXDecoder(codec: video.codec)
            pending = try video.nextTimed()
        }
    }

    /// Decodes the frames due by `time` and scales the newest into the cell.
    func advance(to time: Double, into grid: I420MutableView) throws {
        guard let video, let decoder else { return }
        while let frame = pending, frame.seconds <= time + 1e-6 {
            pending = try video.nextTimed()
            let isNewest = pending.map { $0.seconds > time + 1e-6 } ?? true
            _ = try frame.bytes.withUnsafeBytes { bytes in
                try decoder.decode(bytes) { picture in
                    guard isNewest else { return }
                    let fitted = PictureScaler.layout(
                        sourceWidth: picture.width, sourceHeight: picture.height, targetWidth: cell.width,
                        targetHeight: cell.height, mode: .hidden)
                    PictureScaler.scale(picture, fitted.source, into: grid, cell)
                }
            }
            framesDecoded += 1
        }
    }
}

/// An input's Opus audio decoded to 48 kHz stereo and handed out 10 ms at a time.
private final class CompositionAudio {
    private let next: () throws -> (bytes: [UInt8], discard48k: Int64, endLimit48k: Int64?)?
    private var stream: OpusStreamDecoder
    private var buffered: [Int16] = []
    private var start = 0
    private var ended = false
    private let keep: AnyObject
    /// The frame handed out, in memory that stays put until the next call.
    private let frame = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 960)

    deinit { frame.deallocate() }

    init(path: String) throws {
        var head: OpusHead
        if try MediaFileKind.detect(path: path) == .webm {
            let reader = try WebMReader(path: path)
            guard let track = reader.tracks.firstIndex(where: { $0.codec == .opus }) else {
                throw MediaError.unsupported("has no Opus track", file: path)
            }
            head = reader.tracks[track].opusHead!
            next = {
                while let frame = try reader.readFrame() {
                    guard frame.track == track else { continue }
                    return (frame.bytes, MediaTime.samples48k(nanoseconds: frame.discardPaddingNanoseconds), nil)
                }
                return nil
            }
            keep = reader
        } else {
            let reader = try OggOpusReader(path: path)
            head = reader.head
            next = {
                guard let packet = try reader.nextPacket() else { return nil }
                return (packet.bytes, 0, packet.isLast ? packet.granulePosition : nil)
            }
            keep = reader
        }
        // libopus decodes a mono stream to stereo as well; a multistream one is folded to stereo.
        if head.mappingFamily == 0 { head.channelCount = 2 }
        stream = try OpusStreamDecoder(head: head, sampleRate: 48_000)
    }

    /// The next 10 ms (960 samples), silence-padded at the end; nil once the audio is over.
    func nextFrame() throws -> UnsafeBufferPointer<Int16>? {
        while buffered.count - start < 960, !ended {
            guard let packet = try next() else {
                ended = true
                break
            }
            if start > 0 {
                buffered.removeFirst(start)
                start = 0
            }
            try packet.bytes.withUnsafeBytes { bytes in
                try stream.decode(bytes, endLimit48k: packet.endLimit48k, discardAtEnd48k: packet.discard48k) {
                    buffered.append(contentsOf: $0)
                }
            }
        }
        let left = buffered.count - start
        guard left > 0 else { return nil }
        if left < 960 { buffered.append(contentsOf: repeatElement(0, count: 960 - left)) }
        _ = frame.update(fromContentsOf: buffered[start..<start + 960])
        start += 960
        return UnsafeBufferPointer(frame)
    }
}
