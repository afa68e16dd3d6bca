#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// MD5 (RFC 1321), used for the per-frame checksums that `vpxdec --md5` prints, so decoded
/// frames can be compared with the reference decoder bit for bit. Not for security.
public struct MD5: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476)
    private var block = [UInt8](repeating: 0, count: 64)
    private var blockFill = 0
    private var lengthBytes: UInt64 = 0

    private static let shifts: [UInt32] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
        5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
        6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ]
    private static let constants: [UInt32] = (0..<64).map { i in
        UInt32(truncatingIfNeeded: Int64((abs(sin(Double(i + 1))) * 4_294_967_296.0).rounded(.down)))
    }

    /// A fresh digest.
    public init() {}

    /// Adds bytes to the digest.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        lengthBytes &+= UInt64(bytes.count)
        var index = 0
        if blockFill > 0 {
            let take = min(64 - blockFill, bytes.count)
            block.withUnsafeMutableBytes {
                $0.baseAddress!.advanced(by: blockFill).copyMemory(from: base, byteCount: take)
            }
            blockFill += take
            index = take
            if blockFill == 64 {
                block.withUnsafeBytes { processBlock($0.baseAddress!) }
                blockFill = 0
            }
        }
        while bytes.count - index >= 64 {
            processBlock(base + index)
            index += 64
        }
        if index < bytes.count {
            let take = bytes.count - index
            block.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: base + index, byteCount: take) }
            blockFill = take
        }
    }

    /// Adds bytes to the digest.
    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// The digest as 32 lowercase hex digits. The value is consumed.
    public consuming func finalize() -> String {
        let bitLength = lengthBytes &* 8
        var padding: [UInt8] = [0x80]
        let fill = (blockFill + 1) % 64
        padding += [UInt8](repeating: 0, count: fill <= 56 ? 56 - fill : 120 - fill)
        for i in 0..<8 { padding.append(UInt8(truncatingIfNeeded: bitLength >> (8 * UInt64(i)))) }
        let savedLength = lengthBytes
        update(padding)
        lengthBytes = savedLength
        var hex = ""
        for word in [state.0, state.1, state.2, state.3] {
            for i in 0..<4 {
                hex += String(UInt8(truncatingIfNeeded: word >> (8 * UInt32(i))), radix: 16).leftPadded(to: 2)
            }
        }
        return hex
    }

    private mutating func processBlock(_ words: UnsafeRawPointer) {
        var (a, b, c, d) = state
        MD5.constants.withUnsafeBufferPointer { k in
            MD5.shifts.withUnsafeBufferPointer { r in
                for i in 0..<64 {
                    var f: UInt32
                    let g: Int
                    switch i >> 4 {
                    case 0:
                        f = (b & c) | (~b & d)
                        g = i
                    case 1:
                        f = (d & b) | (~d & c)
                        g = (5 &* i &+ 1) & 15
                    case 2:
                        f = b ^ c ^ d
                        g = (3 &* i &+ 5) & 15
                    default:
                        f = c ^ (b | ~d)
                        g = (7 &* i) & 15
                    }
                    let m = UInt32(littleEndian: words.loadUnaligned(fromByteOffset: g &* 4, as: UInt32.self))
                    f = f &+ a &+ k[i] &+ m
                    a = d
                    d = c
                    c = b
                    b = b &+ ((f << r[i]) | (f >> (32 &- r[i])))
                }
            }
        }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d)
    }
}
