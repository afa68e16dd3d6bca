/// The Ogg page checksum: CRC-32 with polynomial 0x04C11DB7, no reflection, initial value 0
/// (RFC 3533 §6), computed over the page with its checksum field set to zero.
enum OggCRC {
    static let table: [UInt32] = (0..<256).map { index in
        var r = UInt32(index) << 24
        for _ in 0..<8 { r = (r & 0x8000_0000) != 0 ? (r << 1) ^ 0x04C1_1DB7 : r << 1 }
        return r
    }

    static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc = crc
        table.withUnsafeBufferPointer { t in
            for byte in bytes { crc = (crc << 8) ^ t[Int(((crc >> 24) ^ UInt32(byte)) & 0xFF)] }
        }
        return crc
    }
}
