internal import CZlib

/// Writes I420 pictures as 8-bit RGB PNG files (BT.601 limited range to full-range RGB),
/// whole or not at all.
public enum PNGWriter {
    /// Converts `picture` to RGB and writes it to `path` as a PNG (zlib level 6, no filters).
    public static func write(_ picture: I420View, to path: String) throws {
        let width = picture.width
        let height = picture.height
        let rowBytes = width * 3
        // Each PNG scanline is a filter-type byte (0: none) and the RGB pixels.
        var raw = [UInt8](repeating: 0, count: (rowBytes + 1) * height)
        var rgb = [UInt8](repeating: 0, count: rowBytes * height)
        rgb.withUnsafeMutableBufferPointer { PictureScaler.toRGB(picture, into: $0.baseAddress!, stride: rowBytes) }
        for row in 0..<height {
            raw[row * (rowBytes + 1)] = 0
            raw.replaceSubrange(
                (row * (rowBytes + 1) + 1)..<((row + 1) * (rowBytes + 1)),
                with: rgb[(row * rowBytes)..<((row + 1) * rowBytes)])
        }
        var compressedLength = compressBound(uLong(raw.count))
        var compressed = [UInt8](repeating: 0, count: Int(compressedLength))
        let status = compress2(&compressed, &compressedLength, raw, uLong(raw.count), 6)
        guard status == Z_OK else { throw MediaError(.codecFailure, "zlib compress2 failed (\(status))", file: path) }
        compressed.removeLast(compressed.count - Int(compressedLength))

        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var header: [UInt8] = []
        header.appendBE32(UInt32(width))
        header.appendBE32(UInt32(height))
        header += [8, 2, 0, 0, 0]  // 8 bits per channel, truecolour RGB, deflate, no filter set, no interlace
        appendChunk("IHDR", header, to: &png)
        appendChunk("IDAT", compressed, to: &png)
        appendChunk("IEND", [], to: &png)
        let output = try AtomicFileWriter(path: path)
        try output.write(png)
        try output.commit()
    }

    private static func appendChunk(_ type: String, _ data: [UInt8], to png: inout [UInt8]) {
        png.appendBE32(UInt32(data.count))
        let typeBytes = Array(type.utf8)
        png += typeBytes
        png += data
        var crc = crc32(0, typeBytes, UInt32(typeBytes.count))
        crc = data.withUnsafeBufferPointer { crc32(crc, $0.baseAddress, UInt32($0.count)) }
        png.appendBE32(UInt32(crc))
    }
}

extension Array where Element == UInt8 {
    mutating func appendBE32(_ v: UInt32) {
        append(UInt8(v >> 24))
        append(UInt8((v >> 16) & 0xFF))
        append(UInt8((v >> 8) & 0xFF))
        append(UInt8(v & 0xFF))
    }
}
