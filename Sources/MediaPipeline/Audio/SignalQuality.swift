#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Objective audio quality measures.
public enum SignalQuality {
    /// Signal-to-noise ratio in dB of `test` against `reference`, over their common length:
    /// `10·log10(Σ ref² / Σ (ref − test)²)`. Infinity when they are identical.
    public static func snr(reference: [Int16], test: [Int16]) -> Double {
        let count = min(reference.count, test.count)
        var signal = 0.0
        var noise = 0.0
        for i in 0..<count {
            let r = Double(reference[i])
            let e = r - Double(test[i])
            signal += r * r
            noise += e * e
        }
        if noise == 0 { return .infinity }
        return 10 * log10(signal / noise)
    }

    /// Reads a whole WAV file as interleaved Int16 (for tests and reports on short files).
    public static func loadWAV(_ path: String) throws -> (samples: [Int16], format: WAVFormat) {
        let reader = try WAVReader(path: path)
        var all: [Int16] = []
        var block: [Float] = []
        while try reader.read(into: &block, maxFrames: 65536) > 0 { all.append(contentsOf: block.map(\.int16Sample)) }
        return (all, reader.format)
    }
}
