#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Objective picture quality measures.
public enum PictureQuality {
    /// PSNR in dB of `test` against `reference` over all three planes (8-bit peak 255), as
    /// ffmpeg's psnr filter reports "average": from the summed squared error of Y, U and V.
    /// Infinity when the pictures are identical.
    /// - Precondition: both pictures have the same size.
    public static func psnr(reference: I420View, test: I420View) -> Double {
        let mse = meanSquaredError(reference: reference, test: test)
        return mse > 0 ? 10 * log10(255 * 255 / mse) : .infinity
    }

    /// Mean squared error per sample over all three planes.
    /// - Precondition: both pictures have the same size.
    public static func meanSquaredError(reference: I420View, test: I420View) -> Double {
        precondition(
            reference.width == test.width && reference.height == test.height, "PSNR needs pictures of one size")
        var squared: UInt64 = 0
        func plane(_ a: UnsafePointer<UInt8>, _ sa: Int, _ b: UnsafePointer<UInt8>, _ sb: Int, _ w: Int, _ h: Int) {
            for row in 0..<h {
                var rowSum: UInt64 = 0
                let pa = a + row * sa
                let pb = b + row * sb
                for x in 0..<w {
                    let d = Int(pa[x]) - Int(pb[x])
                    rowSum += UInt64(d * d)
                }
                squared += rowSum
            }
        }
        plane(reference.y, reference.strideY, test.y, test.strideY, reference.width, reference.height)
        plane(reference.u, reference.strideU, test.u, test.strideU, reference.chromaWidth, reference.chromaHeight)
        plane(reference.v, reference.strideV, test.v, test.strideV, reference.chromaWidth, reference.chromaHeight)
        let samples = Double(reference.width * reference.height + 2 * reference.chromaWidth * reference.chromaHeight)
        return Double(squared) / samples
    }
}

extension PictureQuality {
    /// The PSNR in dB of the mean per-frame MSE between two Y4M files of the same size and frame
    /// count: the "average" that ffmpeg's psnr filter reports.
    public static func averagePSNR(referenceY4M: String, testY4M: String) throws -> Double {
        let reference = try Y4MReader(path: referenceY4M, bufferCount: 2)
        let test = try Y4MReader(path: testY4M, bufferCount: 2)
        guard reference.header.width == test.header.width, reference.header.height == test.header.height else {
            throw MediaError.invalidArgument(
                "\(testY4M) is \(test.header.width)x\(test.header.height); \(referenceY4M) is "
                    + "\(reference.header.width)x\(reference.header.height)")
        }
        var total = 0.0
        var frames = 0
        while true {
            let a = try reference.readFrame()
            let b = try test.readFrame()
            guard let a, let b else {
                guard a == nil && b == nil else {
                    throw MediaError.invalidArgument("\(referenceY4M) and \(testY4M) hold different numbers of frames")
                }
                break
            }
            total += a.withView { ra in b.withView { meanSquaredError(reference: ra, test: $0) } }
            frames += 1
        }
        guard frames > 0 else { return 0 }
        let mse = total / Double(frames)
        return mse > 0 ? 10 * log10(255 * 255 / mse) : .infinity
    }
}
