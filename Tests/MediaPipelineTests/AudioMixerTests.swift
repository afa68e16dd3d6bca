import Foundation
import Testing

@testable import MediaPipeline

@Suite("Audio mixer")
struct AudioMixerTests {
    private let frame = 480 * 2

    private func sine(amplitude: Double, frequency: Double, phase: Double = 0, frameIndex: Int = 0) -> [Int16] {
        (0..<480).flatMap { i -> [Int16] in
            let t = Double(frameIndex * 480 + i) / 48000
            let value = Int16(amplitude * sin(2 * .pi * frequency * t + phase))
            return [value, value]
        }
    }

    private func mix(_ mixer: AudioMixer, _ sources: [(StreamKey, [Int16], Float)]) -> [Int16] {
        var output = [Int16](repeating: 0, count: frame)
        // Stable copies whose pointers stay valid for the whole mix call.
        let buffers = sources.map { source -> UnsafeMutableBufferPointer<Int16> in
            let buffer = UnsafeMutableBufferPointer<Int16>.allocate(capacity: source.1.count)
            _ = buffer.initialize(fromContentsOf: source.1)
            return buffer
        }
        defer { for buffer in buffers { buffer.deallocate() } }
        let inputs = zip(sources, buffers).map { MixerInput(key: $0.0, samples: UnsafeBufferPointer($1), gain: $0.2) }
        output.withUnsafeMutableBufferPointer { mixer.mix(inputs, into: $0) }
        return output
    }

    @Test("one source at unity gain passes through unchanged after its fade-in frame")
    func singleSourceUnchanged() throws {
        let mixer = try AudioMixer()
        let key = StreamKey(channelId: "a", uid: 1)
        let first = sine(amplitude: 32000, frequency: 440)
        let faded = mix(mixer, [(key, first, 1)])
        #expect(abs(Int(faded[0])) < 200)  // starts from silence
        #expect(faded != first)
        for index in 1..<20 {
            let input = sine(amplitude: 32000, frequency: 440, frameIndex: index)
            #expect(mix(mixer, [(key, input, 1)]) == input, "frame \(index)")
        }
    }

    @Test("32 loud sources together never clip, and the mix is not silenced")
    func limiterNeverClips() throws {
        let mixer = try AudioMixer()
        var loudest = 0
        for index in 0..<50 {
            let sources = (0..<32).map { source in
                (
                    StreamKey(channelId: "c\(source % 4)", uid: UInt32(source)),
                    sine(amplitude: 30000, frequency: 200 + Double(source % 3), frameIndex: index), Float(1)
                )
            }
            let output = mix(mixer, sources)
            let peak = output.map { abs(Int($0)) }.max() ?? 0
            #expect(peak <= Int(PeakLimiter.threshold), "frame \(index): \(peak)")
            loudest = max(loudest, peak)
        }
        #expect(loudest > 25000)
        #expect(mixer.limiterGain < 0.1)
    }

    @Test("a quiet sum is exact: no limiting below the threshold")
    func quietSumExact() throws {
        let mixer = try AudioMixer()
        let a = sine(amplitude: 5000, frequency: 300)
        let b = sine(amplitude: 5000, frequency: 500)
        _ = mix(mixer, [(StreamKey(channelId: "x", uid: 1), a, 1), (StreamKey(channelId: "x", uid: 2), b, 1)])
        let a2 = sine(amplitude: 5000, frequency: 300, frameIndex: 1)
        let b2 = sine(amplitude: 5000, frequency: 500, frameIndex: 1)
        let output = mix(
            mixer, [(StreamKey(channelId: "x", uid: 1), a2, 1), (StreamKey(channelId: "x", uid: 2), b2, 1)])
        #expect(output == zip(a2, b2).map { $0 + $1 })
    }

    @Test(
        "steady and ramping inputs in any mix of runs sum exactly as one float addition after another, in input order",
        arguments: [1, 2, 3, 4, 5, 7, 9, 13])
    func sumsInInputOrder(sourceCount: Int) throws {
        let mixer = try AudioMixer()
        var random = SplitMix64(seed: 0x6D69_7865_7200 + UInt64(sourceCount))
        let keys = (0..<sourceCount).map { StreamKey(channelId: "m", uid: UInt32($0)) }
        // Gains that make float sums inexact, so another order of additions rounds differently
        // (in a few samples of each frame, over the frames below).
        let gains: [Float] = (0..<sourceCount).map { _ in Float.random(in: 0.3...1.7, using: &random) }
        // Loud enough that the sums' last bits depend on the order of additions, never enough to
        // reach the limiter: every source at full amplitude and gain 1.7 sums to at most 28,000.
        let amplitude = Int16(min(3000, 28_000 / ((17 * sourceCount + 9) / 10)))
        // Every third source changes its gain on every frame (a ramp between runs of steady inputs).
        let changed = (0..<sourceCount).map { $0 % 3 == 2 ? gains[$0] * 0.5 : gains[$0] }
        func gain(_ source: Int, frame index: Int) -> Float { index % 2 == 1 ? changed[source] : gains[source] }
        _ = mix(mixer, (0..<sourceCount).map { (keys[$0], [Int16](repeating: 0, count: frame), gains[$0]) })
        var mismatched = 0
        for index in 1...24 {
            let samples = (0..<sourceCount).map { _ in
                (0..<frame).map { _ in Int16.random(in: -amplitude...amplitude, using: &random) }
            }
            let output = mix(mixer, (0..<sourceCount).map { (keys[$0], samples[$0], gain($0, frame: index)) })
            // The same sum written out: each input's product added in input order; a ramp's gain
            // stepped per sample frame as the mixer steps it.
            var sums = [Float](repeating: 0, count: frame)
            for source in 0..<sourceCount {
                let (start, end) = (gain(source, frame: index - 1), gain(source, frame: index))
                let step = (end - start) / 480
                var ramp = start
                for i in 0..<frame {
                    if start != end && i % 2 == 0 { ramp += step }
                    let product = Float(Int(samples[source][i])) * (start == end ? end : ramp)
                    sums[i] = source == 0 ? product : sums[i] + product
                }
            }
            #expect(sums.allSatisfy { abs($0) < PeakLimiter.threshold }, "frame \(index) stays below the limiter")
            let expected = sums.map { Int16($0.rounded(.toNearestOrEven)) }
            mismatched += zip(output, expected).filter { $0 != $1 }.count
        }
        #expect(mismatched == 0, "\(mismatched) samples differ from the sum in input order")
    }

    @Test("volume 200 % doubles a source; a gain change glides over one frame; gain 0 fades out")
    func volumeAndFades() throws {
        let mixer = try AudioMixer()
        let key = StreamKey(channelId: "v", uid: 7)
        let quiet = [Int16](repeating: 1000, count: frame)
        _ = mix(mixer, [(key, quiet, 1)])
        let gliding = mix(mixer, [(key, quiet, 2)])
        #expect(gliding.first! > 1000 && gliding.first! < 1100)
        #expect(gliding.last! == 2000)
        #expect(mix(mixer, [(key, quiet, 2)]).allSatisfy { $0 == 2000 })
        let fading = mix(mixer, [(key, quiet, 0)])
        #expect(fading.first! > 1900 && fading.last! == 0)
        #expect(zip(fading, fading.dropFirst()).allSatisfy { $0 >= $1 })
        // Left out after the fade: silence, and a return fades in again.
        #expect(mix(mixer, []).allSatisfy { $0 == 0 })
        let back = mix(mixer, [(key, quiet, 1)])
        #expect(back.first! < 100 && back.last! == 1000)
    }

    /// A frame of `value` in every sample.
    private func constant(_ value: Int16) -> [Int16] { [Int16](repeating: value, count: frame) }

    @Test("gains follow their streams, not their positions: reordered, removed from the middle, at gain 0, back again")
    func gainsFollowStreams() throws {
        let mixer = try AudioMixer()
        let (a, b, c) = (
            StreamKey(channelId: "m", uid: 1), StreamKey(channelId: "m", uid: 2), StreamKey(channelId: "n", uid: 1)
        )
        let (loud, middle, soft) = (constant(1000), constant(100), constant(10))
        _ = mix(mixer, [(a, loud, 1), (b, middle, 1), (c, soft, 1)])  // fading in
        #expect(mix(mixer, [(a, loud, 1), (b, middle, 1), (c, soft, 1)]).allSatisfy { $0 == 1110 })
        #expect(mix(mixer, [(c, soft, 1), (a, loud, 1), (b, middle, 1)]).allSatisfy { $0 == 1110 })
        #expect(mix(mixer, [(c, soft, 1), (a, loud, 1)]).allSatisfy { $0 == 1010 })
        // Back after a frame away: it fades in, the others stay where they were.
        let back = mix(mixer, [(c, soft, 1), (b, middle, 1), (a, loud, 1)])
        #expect(back.first! >= 1010 && back.first! < 1012 && back.last! == 1110, "\(back.first!) \(back.last!)")
        #expect(zip(back, back.dropFirst()).allSatisfy { $0 <= $1 })
        // Different gains keep to their streams whatever the order.
        let lowering = mix(mixer, [(a, loud, 1), (b, loud, 0.5)])  // b glides from 1 to 0.5
        #expect(lowering.first! > 1990 && lowering.last! == 1500, "\(lowering.first!) \(lowering.last!)")
        #expect(mix(mixer, [(b, loud, 0.5), (a, loud, 1)]).allSatisfy { $0 == 1500 })
        // A stream held at gain 0 between two others adds nothing, and moves nothing.
        _ = mix(mixer, [(a, loud, 1), (b, middle, 0), (c, soft, 1)])
        #expect(mix(mixer, [(a, loud, 1), (b, middle, 0), (c, soft, 1)]).allSatisfy { $0 == 1010 })
        #expect(mix(mixer, [(a, loud, 1), (b, middle, 0), (c, soft, 1)]).allSatisfy { $0 == 1010 })
    }

    @Test("a stream replaced under its key, its successor beside its fade-out in either order, carries on at its gain")
    func replacedStreamCarriesOn() throws {
        let key = StreamKey(channelId: "r", uid: 3)
        let (old, successor) = (constant(1000), constant(100))
        for successorFirst in [true, false] {
            let mixer = try AudioMixer()
            _ = mix(mixer, [(key, old, 1)])
            #expect(mix(mixer, [(key, old, 1)]) == old)
            let both: [(StreamKey, [Int16], Float)] = [(key, successor, 1), (key, old, 0)]
            let handover = mix(mixer, successorFirst ? both : both.reversed())
            #expect(
                handover.first! > 1090 && handover.last! == 100,
                "\(successorFirst): \(handover.first!) \(handover.last!)")
            #expect(mix(mixer, [(key, successor, 1)]) == successor, "successor first: \(successorFirst)")
        }
    }

    @Test("a ramp starts where the stream's gain was, after a frame in which its key came twice")
    func rampStartsAtLastGain() throws {
        let mixer = try AudioMixer()
        let key = StreamKey(channelId: "g", uid: 9)
        let samples = constant(1000)
        _ = mix(mixer, [(key, samples, 0.5)])
        _ = mix(mixer, [(key, samples, 0.8), (key, samples, 0)])
        let rising = mix(mixer, [(key, samples, 1)])
        #expect(rising.first! > 790 && rising.first! < 810 && rising.last! == 1000, "\(rising.first!) \(rising.last!)")
    }
}
