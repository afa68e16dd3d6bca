/// Network byte order reads and writes on raw buffers, for the RTP and RTCP wire formats.
/// Callers check lengths first; these trap on an out-of-range offset like any buffer access.
extension UnsafeRawBufferPointer {
    @inline(__always) func uint16(at offset: Int) -> UInt16 { UInt16(self[offset]) << 8 | UInt16(self[offset + 1]) }
    @inline(__always) func uint24(at offset: Int) -> UInt32 {
        UInt32(self[offset]) << 16 | UInt32(self[offset + 1]) << 8 | UInt32(self[offset + 2])
    }
    @inline(__always) func uint32(at offset: Int) -> UInt32 {
        UInt32(uint16(at: offset)) << 16 | UInt32(uint16(at: offset + 2))
    }
}

extension UnsafeMutableRawBufferPointer {
    @inline(__always) func put(_ value: UInt16, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 1] = UInt8(truncatingIfNeeded: value)
    }
    @inline(__always) func put24(_ value: UInt32, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 16)
        self[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 2] = UInt8(truncatingIfNeeded: value)
    }
    @inline(__always) func put(_ value: UInt32, at offset: Int) {
        put(UInt16(truncatingIfNeeded: value >> 16), at: offset)
        put(UInt16(truncatingIfNeeded: value), at: offset + 2)
    }
}
