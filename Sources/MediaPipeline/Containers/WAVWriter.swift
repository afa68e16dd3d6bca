/// Writes 16-bit PCM WAV files, whole or not at all: the file appears under its name only when
/// ``finish()`` succeeds.
public final class WAVWriter {
    /// The destination.
    public let path: String
    /// Samples per second per channel.
    public let sampleRate: Int
    /// 1 or 2.
    public let channelCount: Int
    private let output: AtomicFileWriter
    private var dataBytes: Int64 = 0
    private var scratch: [UInt8] = []

    /// Starts a WAV file at `path`.
    public init(path: String, sampleRate: Int, channelCount: Int) throws {
        guard (1...768_000).contains(sampleRate) else {
            throw MediaError.invalidArgument("WAV sample rate \(sampleRate) Hz is outside 1...768000")
        }
        guard (1...8).contains(channelCount) else {
            throw MediaError.invalidArgument("WAV channel count \(channelCount) is outside 1...8")
        }
        self.path = path
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        output = try AtomicFileWriter(path: path)
        try output.write(header(dataBytes: 0))
    }

    private func header(dataBytes: Int64) -> [UInt8] {
        var h: [UInt8] = []
        h.appendASCII("RIFF")
        h.appendLE32(UInt32(36 + dataBytes))
        h.appendASCII("WAVEfmt ")
        h.appendLE32(16)
        h.appendLE16(1)
        h.appendLE16(UInt16(channelCount))
        h.appendLE32(UInt32(sampleRate))
        h.appendLE32(UInt32(sampleRate * channelCount * 2))
        h.appendLE16(UInt16(channelCount * 2))
        h.appendLE16(16)
        h.appendASCII("data")
        h.appendLE32(UInt32(dataBytes))
        return h
    }

    /// Appends interleaved samples.
    public func write(_ samples: UnsafeBufferPointer<Int16>) throws {
        guard samples.count % channelCount == 0 else {
            throw MediaError.invalidArgument("\(samples.count) samples are not whole \(channelCount)-channel frames")
        }
        guard dataBytes + Int64(samples.count * 2) <= 0xFFFF_FFFF - 36 else {
            throw MediaError(.io, "WAV files cannot hold more than 4 GiB of audio", file: path)
        }
        if scratch.count < samples.count * 2 { scratch = [UInt8](repeating: 0, count: samples.count * 2) }
        scratch.withUnsafeMutableBytes { raw in
            for (i, sample) in samples.enumerated() {
                raw.storeBytes(of: sample.littleEndian, toByteOffset: 2 * i, as: Int16.self)
            }
        }
        try scratch.withUnsafeBytes { try output.write(UnsafeRawBufferPointer(rebasing: $0[0..<samples.count * 2])) }
        dataBytes += Int64(samples.count * 2)
    }

    /// Appends interleaved samples.
    public func write(_ samples: [Int16]) throws { try samples.withUnsafeBufferPointer { try write($0) } }

    /// Samples per channel written so far.
    public var framesWritten: Int64 { dataBytes / Int64(2 * channelCount) }

    /// Writes the final sizes and moves the file into place.
    public func finish() throws {
        try output.seek(to: 0)
        try output.write(header(dataBytes: dataBytes))
        try output.commit()
    }
}
