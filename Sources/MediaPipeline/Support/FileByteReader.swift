#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Sequential, buffered reading of a file, with truncation reported as a typed error that names
/// the file, the structure being read and the byte offset.
final class FileByteReader {
    let path: String
    /// The file's size in bytes when it was opened (0 for pipes and devices).
    let size: Int64
    /// Bytes consumed so far.
    private(set) var offset: Int64 = 0
    private let file: UnsafeMutablePointer<FILE>

    init(path: String) throws {
        self.path = path
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw MediaError(.io, "cannot open: \(String(cString: strerror(errno)))", file: path)
        }
        guard (info.st_mode & S_IFMT) != S_IFDIR else {
            throw MediaError(.io, "is a directory, not a media file", file: path)
        }
        guard let file = fopen(path, "rb") else {
            throw MediaError(.io, "cannot open: \(String(cString: strerror(errno)))", file: path)
        }
        self.file = file
        self.size = (info.st_mode & S_IFMT) == S_IFREG ? Int64(info.st_size) : 0
    }

    deinit { fclose(file) }

    /// Bytes left before the end of a regular file (nil when the size is unknown).
    var remaining: Int64? { size > 0 ? size - offset : nil }

    /// Reads up to `buffer.count` bytes; returns fewer only at the end of the file.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        let got = fread(base, 1, buffer.count, file)
        if got < buffer.count && ferror(file) != 0 {
            throw MediaError(
                .io, "read failed at byte \(offset + Int64(got)): \(String(cString: strerror(errno)))", file: path)
        }
        offset += Int64(got)
        return got
    }

    /// Reads exactly `buffer.count` bytes or throws ``MediaError/Code/truncated`` naming `what`.
    func readExactly(into buffer: UnsafeMutableRawBufferPointer, what: @autoclosure () -> String) throws {
        let start = offset
        let got = try read(into: buffer)
        if got < buffer.count {
            throw MediaError(
                .truncated,
                "truncated in \(what()) at byte \(start): needed \(buffer.count) bytes, found \(got)",
                file: path)
        }
    }

    /// Reads exactly `count` bytes into a new array.
    func readBytes(_ count: Int, what: @autoclosure () -> String) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        try bytes.withUnsafeMutableBytes { (raw) in try readExactly(into: raw, what: what()) }
        return bytes
    }

    /// Reads one byte, or nil at the end of the file.
    func readByte() throws -> UInt8? {
        var byte: UInt8 = 0
        let got = try withUnsafeMutableBytes(of: &byte) { (raw) in try read(into: raw) }
        return got == 1 ? byte : nil
    }

    /// True when no byte is left.
    func atEnd() throws -> Bool {
        let c = getc(file)
        if c == EOF {
            if ferror(file) != 0 {
                throw MediaError(.io, "read failed at byte \(offset): \(String(cString: strerror(errno)))", file: path)
            }
            return true
        }
        ungetc(c, file)
        return false
    }

    /// Skips `count` bytes, which must exist.
    func skip(_ count: Int64, what: @autoclosure () -> String) throws {
        if let remaining, count > remaining {
            throw MediaError(
                .truncated, "truncated in \(what()) at byte \(offset): needed \(count) bytes, found \(remaining)",
                file: path)
        }
        if size > 0 {
            guard fseeko(file, off_t(count), SEEK_CUR) == 0 else {
                throw MediaError(.io, "seek failed at byte \(offset)", file: path)
            }
            offset += count
        } else {
            var scratch = [UInt8](repeating: 0, count: 4096)
            var left = count
            while left > 0 {
                let n = Int(min(left, 4096))
                try scratch.withUnsafeMutableBytes { (raw) in
                    try readExactly(into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<n]), what: what())
                }
                left -= Int64(n)
            }
        }
    }
}

// MARK: - Little-endian fields

extension Array where Element == UInt8 {
    @inline(__always) func le16(_ at: Int) -> UInt16 { UInt16(self[at]) | UInt16(self[at + 1]) << 8 }
    @inline(__always) func le32(_ at: Int) -> UInt32 {
        UInt32(self[at]) | UInt32(self[at + 1]) << 8 | UInt32(self[at + 2]) << 16 | UInt32(self[at + 3]) << 24
    }
    @inline(__always) func le64(_ at: Int) -> UInt64 { UInt64(le32(at)) | UInt64(le32(at + 4)) << 32 }
    /// The bytes at `range` as ASCII text, with non-printable bytes escaped, for error messages.
    func printable(_ range: Range<Int>) -> String {
        var text = ""
        for byte in self[range] {
            if byte >= 0x20 && byte < 0x7F {
                text.append(Character(Unicode.Scalar(byte)))
            } else {
                text += "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return text
    }

    mutating func appendLE16(_ v: UInt16) {
        append(UInt8(v & 0xFF))
        append(UInt8(v >> 8))
    }
    mutating func appendLE32(_ v: UInt32) {
        append(UInt8(v & 0xFF))
        append(UInt8((v >> 8) & 0xFF))
        append(UInt8((v >> 16) & 0xFF))
        append(UInt8(v >> 24))
    }
    mutating func appendLE64(_ v: UInt64) {
        appendLE32(UInt32(v & 0xFFFF_FFFF))
        appendLE32(UInt32(v >> 32))
    }
    mutating func appendASCII(_ s: String) { append(contentsOf: Array(s.utf8)) }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
