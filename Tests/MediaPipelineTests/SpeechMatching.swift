import Foundation

// Telling speech apart in decoded audio: where a recording sits in the speech a sender played
// (looped), by 10 ms envelopes and then waveforms. For checks against audio a real peer (a
// browser, another engine) decoded and mixed.

/// Root mean square of `samples`.
func rms(_ samples: ArraySlice<Int16>) -> Double {
    guard !samples.isEmpty else { return 0 }
    return (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
}

/// The RMS of each `block` samples.
func envelope(_ samples: [Double], block: Int) -> [Double] {
    stride(from: 0, to: samples.count - block + 1, by: block).map { start in
        (samples[start..<start + block].reduce(0.0) { $0 + $1 * $1 } / Double(block)).squareRoot()
    }
}

/// Pearson correlation of two sequences of one length.
func correlation(_ a: ArraySlice<Double>, _ b: ArraySlice<Double>) -> Double {
    let n = Double(a.count)
    let meanA = a.reduce(0, +) / n
    let meanB = b.reduce(0, +) / n
    var ab = 0.0
    var aa = 0.0
    var bb = 0.0
    for (x, y) in zip(a, b) {
        ab += (x - meanA) * (y - meanB)
        aa += (x - meanA) * (x - meanA)
        bb += (y - meanB) * (y - meanB)
    }
    return aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
}

/// Where `received` (mono) sits in `reference` (mono, played looped): the 10 ms envelopes'
/// best correlation over every lag, then the waveforms' best normalised correlation within one
/// envelope block of it. Lags are in samples into the reference.
func locate(_ received: [Double], in reference: [Double]) -> (
    envelopeCorrelation: Double, waveformCorrelation: Double, lag: Int
) {
    let block = 480
    let looped = reference + reference
    let receivedEnvelope = envelope(received, block: block)
    let referenceEnvelope = envelope(looped, block: block)
    let blocks = reference.count / block
    var best = (correlation: -2.0, lag: 0)
    for lag in 0..<blocks {
        let value = correlation(
            receivedEnvelope[...], referenceEnvelope[lag..<lag + receivedEnvelope.count])
        if value > best.correlation { best = (value, lag) }
    }
    // The waveform, over one second of the received audio, around the envelope's lag.
    let length = min(48_000, received.count)
    let energyA = received.prefix(length).reduce(0.0) { $0 + $1 * $1 }
    var fine = (correlation: -2.0, lag: 0)
    looped.withUnsafeBufferPointer { ref in
        received.withUnsafeBufferPointer { rec in
            for shift in -block...block {
                let lag = (best.lag * block + shift + reference.count) % reference.count
                guard lag + length <= ref.count else { continue }
                var ab = 0.0
                var bb = 0.0
                for i in 0..<length {
                    ab += rec[i] * ref[lag + i]
                    bb += ref[lag + i] * ref[lag + i]
                }
                let value = energyA > 0 && bb > 0 ? ab / (energyA * bb).squareRoot() : 0
                if value > fine.correlation { fine = (value, lag) }
            }
        }
    }
    return (best.correlation, fine.correlation, fine.lag)
}

/// How well `received` (mono) follows `reference` (mono, played looped) when the receiver may
/// have stretched or squeezed time, as a jitter buffer does when it adapts its delay: the
/// received audio is cut into pieces of `pieceBlocks` 10 ms envelopes; the first piece is
/// located anywhere in the reference, each later one within `slackBlocks` of where the one
/// before it ended. Returns the correlation of the whole received envelope with the reference
/// envelope assembled from those pieces. Another voice, free in its first piece only, cannot
/// follow on: its later pieces land wherever the slack allows.
func envelopeCorrelationAllowingDrift(
    _ received: [Double], in reference: [Double], pieceBlocks: Int = 100, slackBlocks: Int = 6
) -> Double {
    let block = 480
    let receivedEnvelope = envelope(received, block: block)
    let blocks = reference.count / block
    guard blocks > 0, !receivedEnvelope.isEmpty else { return 0 }
    // Looped so that any lag below `blocks`, plus a piece and its slack, stays inside.
    let loops = 2 + (receivedEnvelope.count + 2 * slackBlocks) / max(blocks, 1)
    let referenceEnvelope = envelope(Array([[Double]](repeating: reference, count: loops).joined()), block: block)
    var assembled: [Double] = []
    var expectedLag: Int? = nil
    for start in stride(from: 0, to: receivedEnvelope.count, by: pieceBlocks) {
        let piece = receivedEnvelope[start..<min(start + pieceBlocks, receivedEnvelope.count)]
        let candidates: [Int]
        if let expected = expectedLag {
            candidates = (expected - slackBlocks...expected + slackBlocks).map { ($0 % blocks + blocks) % blocks }
        } else {
            candidates = Array(0..<blocks)
        }
        var best = (correlation: -2.0, lag: 0)
        for lag in candidates {
            let value = correlation(piece, referenceEnvelope[lag..<lag + piece.count])
            if value > best.correlation { best = (value, lag) }
        }
        assembled += referenceEnvelope[best.lag..<best.lag + piece.count]
        expectedLag = best.lag + piece.count
    }
    return correlation(receivedEnvelope[...], assembled[...])
}
