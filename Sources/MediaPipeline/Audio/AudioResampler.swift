internal import CSoxr

/// Converts interleaved float audio from one sample rate to another with libsoxr at its
/// high-quality setting (the resampler behind sox and ffmpeg's soxr option).
public final class AudioResampler {
    /// Input and output rates in Hz.
    public let inputRate: Int, outputRate: Int
    /// Interleaved channels.
    public let channelCount: Int
    private let handle: soxr_t

    /// A resampler from `inputRate` to `outputRate` Hz for `channelCount` channels.
    public init(inputRate: Int, outputRate: Int, channelCount: Int) throws {
        guard inputRate > 0, outputRate > 0, (1...8).contains(channelCount) else {
            throw MediaError.invalidArgument(
                "resampler \(inputRate) Hz → \(outputRate) Hz × \(channelCount) channels is not valid")
        }
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channelCount = channelCount
        var error: soxr_error_t? = nil
        var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var quality = soxr_quality_spec(UInt(SOXR_HQ), 0)
        guard
            let handle = soxr_create(
                Double(inputRate), Double(outputRate), UInt32(channelCount), &error, &io, &quality, nil),
            error == nil
        else {
            throw MediaError(.codecFailure, "soxr_create failed: \(error.map { String(cString: $0) } ?? "unknown")")
        }
        self.handle = handle
    }

    deinit { soxr_delete(handle) }

    /// Resamples `input` (interleaved) and appends the output to `output`.
    public func process(_ input: UnsafeBufferPointer<Float>, appendingTo output: inout [Float]) throws {
        try run(input.baseAddress, input.count / channelCount, &output)
    }

    /// Drains the samples the filter still holds at the end of the input.
    public func flush(appendingTo output: inout [Float]) throws { try run(nil, 0, &output) }

    private func run(_ input: UnsafePointer<Float>?, _ frames: Int, _ output: inout [Float]) throws {
        var consumed = 0
        let chunk = 4096
        var buffer = [Float](repeating: 0, count: chunk * channelCount)
        repeat {
            var used = 0
            var produced = 0
            let error = buffer.withUnsafeMutableBufferPointer { out in
                soxr_process(
                    handle, input.map { UnsafeRawPointer($0 + consumed * channelCount) }, frames - consumed, &used,
                    out.baseAddress, chunk, &produced)
            }
            if let error { throw MediaError(.codecFailure, "soxr_process failed: \(String(cString: error))") }
            consumed += used
            output.append(contentsOf: buffer[0..<produced * channelCount])
            if input == nil && produced == 0 { break }
            if input != nil && consumed >= frames && produced < chunk { break }
        } while true
    }
}
