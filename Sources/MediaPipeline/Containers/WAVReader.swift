/// Reads PCM audio from a RIFF/WAVE file: 16-, 24- and 32-bit integer or 32-bit float samples,
/// mono or stereo, any sample rate. Streams: memory use does not grow with the file.
public final class WAVReader {
    /// The file being read.
    public let path: String
    /// The audio format found in the header.
    public let format: WAVFormat
    private let file: FileByteReader
    private var framesLeft: Int64
    private var scratch: [UInt8] = []

    /// Opens `path` and reads its header.
    /// - Throws: ``MediaError`` naming the file and the field at fault.
    public init(path: String) throws {
        self.path = path
        do {
            file = try FileByteReader(path: path)
            let riff = try file.readBytes(12, what: "RIFF header")
            guard riff.printable(0..<4) == "RIFF", riff.printable(8..<12) == "WAVE" else {
                if riff.printable(0..<4) == "RF64" {
                    throw MediaError.unsupported("RF64 (64-bit WAV) files are not supported")
                }
                throw MediaError.invalidFormat(
                    "not a WAV file: expected 'RIFF....WAVE', found '\(riff.printable(0..<4))....\(riff.printable(8..<12))'"
                )
            }
            var found: WAVFormat?
            while true {
                guard !(try file.atEnd()) else {
                    throw MediaError(
                        .truncated,
                        found == nil
                            ? "no 'fmt ' chunk before the end of the file"
                            : "no 'data' chunk before the end of the file")
                }
                let chunkStart = file.offset
                let header = try file.readBytes(8, what: "chunk header")
                let id = header.printable(0..<4)
                let size = Int64(header.le32(4))
                if id == "fmt " {
                    guard size >= 16, size <= 1024 else {
                        throw MediaError.invalidFormat(
                            "'fmt ' chunk at byte \(chunkStart) has size \(size); 16...1024 expected")
                    }
                    let body = try file.readBytes(Int(size), what: "'fmt ' chunk")
                    if size % 2 == 1 { try file.skip(1, what: "'fmt ' chunk padding") }
                    found = try WAVReader.parseFormat(body)
                } else if id == "data" {
                    guard var format = found else {
                        throw MediaError.invalidFormat(
                            "'data' chunk at byte \(chunkStart) comes before the 'fmt ' chunk")
                    }
                    let blockAlign = Int64(format.encoding.bytesPerSample * format.channelCount)
                    var dataSize = size
                    if size == 0xFFFF_FFFF || (size == 0 && file.size == 0) {
                        // Written by a streaming tool that could not go back to patch the size.
                        dataSize = file.remaining.map { $0 - $0 % blockAlign } ?? Int64.max
                    } else if let remaining = file.remaining, dataSize > remaining {
                        throw MediaError(
                            .truncated,
                            "'data' chunk declares \(dataSize) bytes but only \(remaining) remain (truncated file)")
                    }
                    guard dataSize % blockAlign == 0 || dataSize == Int64.max else {
                        throw MediaError.invalidFormat(
                            "'data' chunk size \(dataSize) is not a multiple of the \(blockAlign)-byte sample frame")
                    }
                    format.frameCount = dataSize == Int64.max ? 0 : dataSize / blockAlign
                    framesLeft = dataSize == Int64.max ? Int64.max : format.frameCount
                    self.format = format
                    return
                } else {
                    try file.skip(size + size % 2, what: "'\(id)' chunk")
                }
            }
        } catch let error as MediaError {
            throw error.attributed(to: path)
        }
    }

    private static func parseFormat(_ body: [UInt8]) throws -> WAVFormat {
        var tag = body.le16(0)
        let channels = Int(body.le16(2))
        let rate = Int(body.le32(4))
        let blockAlign = Int(body.le16(12))
        let bits = Int(body.le16(14))
        if tag == 0xFFFE {
            guard body.count >= 40 else {
                throw MediaError.invalidFormat(
                    "WAVE_FORMAT_EXTENSIBLE 'fmt ' chunk is \(body.count) bytes; 40 expected")
            }
            tag = body.le16(24)  // the sub-format GUID starts with the format tag
        }
        let encoding: WAVSampleEncoding
        switch (tag, bits) {
        case (1, 16): encoding = .pcm16
        case (1, 24): encoding = .pcm24
        case (1, 32): encoding = .pcm32
        case (3, 32): encoding = .float32
        case (1, _), (3, _):
            throw MediaError.unsupported(
                "\(bits)-bit \(tag == 1 ? "integer" : "float") samples are not supported (16, 24, 32-bit PCM or 32-bit float)"
            )
        default:
            throw MediaError.unsupported("WAV format tag \(tag) is not PCM (1) or IEEE float (3)")
        }
        guard channels == 1 || channels == 2 else {
            throw MediaError.unsupported("WAV channel count \(channels) is not supported (mono or stereo)")
        }
        guard (1000...768_000).contains(rate) else {
            throw MediaError.invalidFormat("WAV sample rate \(rate) Hz is outside 1000...768000")
        }
        guard blockAlign == channels * encoding.bytesPerSample else {
            throw MediaError.invalidFormat(
                "WAV block align \(blockAlign) does not match \(channels) channels × \(encoding.bytesPerSample) bytes")
        }
        return WAVFormat(sampleRate: rate, channelCount: channels, encoding: encoding, frameCount: 0)
    }

    /// Reads up to `maxFrames` sample frames as interleaved floats in -1...1, replacing the
    /// contents of `samples` (its capacity is reused). Returns the frames read; 0 at the end.
    public func read(into samples: inout [Float], maxFrames: Int) throws -> Int {
        let frames = Int(min(Int64(maxFrames), framesLeft))
        guard frames > 0 else {
            samples.removeAll(keepingCapacity: true)
            return 0
        }
        let channels = format.channelCount
        let bytesPerSample = format.encoding.bytesPerSample
        let wanted = frames * channels * bytesPerSample
        if scratch.count < wanted { scratch = [UInt8](repeating: 0, count: wanted) }
        let got = try scratch.withUnsafeMutableBytes { raw in
            try file.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<wanted]))
        }
        let framesGot = got / (channels * bytesPerSample)
        if framesLeft == Int64.max {
            if framesGot < frames { framesLeft = 0 }
        } else {
            guard framesGot == frames else {
                throw MediaError(
                    .truncated, "audio data ends at byte \(file.offset), before the size the 'data' chunk declares",
                    file: path)
            }
            framesLeft -= Int64(frames)
        }
        let count = framesGot * channels
        samples.removeAll(keepingCapacity: true)
        samples.reserveCapacity(count)
        scratch.withUnsafeBytes { raw in
            switch format.encoding {
            case .pcm16:
                for i in 0..<count {
                    samples.append(Float(Int16(bitPattern: UInt16(raw[2 * i]) | UInt16(raw[2 * i + 1]) << 8)) / 32768)
                }
            case .pcm24:
                for i in 0..<count {
                    let value = Int32(
                        bitPattern: UInt32(raw[3 * i]) << 8 | UInt32(raw[3 * i + 1]) << 16 | UInt32(raw[3 * i + 2])
                            << 24)
                    samples.append(Float(value >> 8) / 8_388_608)
                }
            case .pcm32:
                for i in 0..<count {
                    samples.append(
                        Float(Int32(bitPattern: raw.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self).littleEndian))
                            / 2_147_483_648)
                }
            case .float32:
                for i in 0..<count {
                    samples.append(
                        Float(bitPattern: raw.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self).littleEndian))
                }
            }
        }
        return framesGot
    }
}

extension Float {
    /// This sample (nominally -1...1) as a rounded, clamped Int16.
    @inline(__always) public var int16Sample: Int16 {
        let scaled = (self * 32768).rounded()
        return Int16(Swift.max(-32768, Swift.min(32767, scaled)))
    }
}
