/// Shortens or lengthens decoded audio by one pitch period without a click, so a jitter
/// buffer can move its delay toward its target while audio plays (NetEq's accelerate and
/// preemptive expand, in the manner of WSOLA).
///
/// The period is the lag of 2.5...15 ms whose two neighbouring segments correlate best, found
/// on a mono copy decimated to about 12 kHz. Shortening crossfades the first period into the
/// second and drops one; lengthening repeats one period, crossfading from the natural
/// continuation back to the repeat, so both joins stay continuous. A segment that is neither
/// periodic enough nor quiet is left alone (the next tick tries again).
enum TimeStretcher {
    /// Audio needed to look for a period: two of the longest, 15 ms each.
    static func framesNeeded(sampleRate: Int) -> Int { sampleRate * 30 / 1000 }

    /// The best period of the audio at `start` (interleaved frames of `channels`), in frames,
    /// and how well it repeats (normalized correlation, -1...1), or nil for silence-level audio
    /// (any period will do: a quiet stretch hides the change).
    private static func period(
        _ buffer: UnsafeMutableBufferPointer<Int16>, start: Int, channels: Int, sampleRate: Int
    ) -> (lag: Int, correlation: Double) {
        let step = max(1, sampleRate / 12_000)
        let minimum = sampleRate / 400 / step
        let maximum = sampleRate * 15 / 1000 / step
        @inline(__always) func sample(_ index: Int) -> Double {
            // Mono at the decimated rate: the first channel is enough to find a pitch.
            Double(buffer[(start + index * step) * channels])
        }
        var best = (lag: maximum, correlation: -1.0)
        var energy = 0.0
        for lag in minimum...maximum {
            var cross = 0.0
            var first = 0.0
            var second = 0.0
            for index in 0..<lag {
                let a = sample(index)
                let b = sample(index + lag)
                cross += a * b
                first += a * a
                second += b * b
            }
            energy = max(energy, first / Double(lag))
            let correlation = first > 0 && second > 0 ? cross / (first * second).squareRoot() : 0
            if correlation > best.correlation { best = (lag, correlation) }
        }
        // Below about -45 dBFS RMS the audio is quiet enough to stretch anywhere.
        if energy < 180 * 180 { return (maximum * step, 1) }
        return (best.lag * step, best.correlation)
    }

    /// Removes one period from the `frames` frames at `start`, if the audio allows (correlation
    /// of at least `minimumCorrelation`). Returns the frames removed (0: left alone).
    static func shorten(
        _ buffer: UnsafeMutableBufferPointer<Int16>, start: Int, frames: Int, channels: Int, sampleRate: Int,
        minimumCorrelation: Double
    ) -> Int {
        guard frames >= framesNeeded(sampleRate: sampleRate) else { return 0 }
        let (lag, correlation) = period(buffer, start: start, channels: channels, sampleRate: sampleRate)
        guard correlation >= minimumCorrelation else { return 0 }
        // The first period fades into the second, which replaces it.
        crossfade(buffer, from: start, into: start + lag, at: start, frames: lag, channels: channels)
        // What followed the second period moves back by one period.
        let from = (start + 2 * lag) * channels
        let to = (start + lag) * channels
        let moved = (frames - 2 * lag) * channels
        if moved > 0 { (buffer.baseAddress! + to).update(from: buffer.baseAddress! + from, count: moved) }
        return lag
    }

    /// Inserts one period into the `frames` frames at `start`, if the audio allows and the
    /// buffer has room after them. Returns the frames added (0: left alone).
    static func lengthen(
        _ buffer: UnsafeMutableBufferPointer<Int16>, start: Int, frames: Int, channels: Int, sampleRate: Int,
        minimumCorrelation: Double
    ) -> Int {
        guard frames >= framesNeeded(sampleRate: sampleRate) else { return 0 }
        let (lag, correlation) = period(buffer, start: start, channels: channels, sampleRate: sampleRate)
        guard correlation >= minimumCorrelation, (start + frames + lag) * channels <= buffer.count else { return 0 }
        // Everything after the first period moves on by one period (one memmove) ...
        let moved = (frames - lag) * channels
        if moved > 0 {
            (buffer.baseAddress! + (start + 2 * lag) * channels)
                .update(from: buffer.baseAddress! + (start + lag) * channels, count: moved)
        }
        // ... and the gap gets the second period fading into a repeat of the first.
        crossfade(buffer, from: start + 2 * lag, into: start, at: start + lag, frames: lag, channels: channels)
        return lag
    }

    /// Writes at frame `target` a linear crossfade of `frames` frames from the audio at frame
    /// `source` into the audio at frame `destination` (each read before it is written over).
    private static func crossfade(
        _ buffer: UnsafeMutableBufferPointer<Int16>, from source: Int, into destination: Int, at target: Int,
        frames: Int, channels: Int
    ) {
        for frame in 0..<frames {
            let weight = Double(frame + 1) / Double(frames + 1)
            for channel in 0..<channels {
                let a = Double(buffer[(source + frame) * channels + channel])
                let b = Double(buffer[(destination + frame) * channels + channel])
                buffer[(target + frame) * channels + channel] = Int16(clamping: Int((a + (b - a) * weight).rounded()))
            }
        }
    }
}
