/// Reading EBML (RFC 8794): element headers from a file as it streams, and the children and
/// values of a master element held in memory. Every failure is a ``MediaError`` naming the
/// element and its byte offset in the file.

/// The header of one element: where it starts, its ID, and where and how long its data is.
struct EBMLElementHeader {
    /// The element's ID (with its length marker, as the IDs in ``EBML/ID`` are written).
    var id: UInt32
    /// The file offset of the ID's first byte.
    var offset: Int64
    /// The file offset of the element's data.
    var dataOffset: Int64
    /// The data's length in bytes; nil for "unknown" (all value bits set: the element runs
    /// until an element that cannot be its child).
    var size: Int64?

    /// The file offset just past the data (nil for an unknown size).
    var end: Int64? { size.map { dataOffset + $0 } }
    /// "SimpleBlock at byte 1234", for messages.
    var label: String { "\(EBML.name(id)) at byte \(offset)" }
}

extension EBML {
    /// The largest data size accepted for any element (what a 7-byte size can hold is far
    /// beyond any file; this bounds arithmetic).
    static let maximumElementBytes: Int64 = 1 << 48

    /// How many bytes a variable-length integer takes, from its first byte (1...8; 0 when the
    /// first byte is 0, which no valid integer starts with).
    @inline(__always) static func vintLength(_ first: UInt8) -> Int {
        first == 0 ? 0 : first.leadingZeroBitCount + 1
    }

    /// Decodes a variable-length size from `bytes` (its whole length): nil when all value bits
    /// are set (unknown).
    static func decodeSize(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        let length = bytes.count
        var value = UInt64(bytes[0]) & ((UInt64(1) << (8 - UInt64(length))) - 1)
        for index in 1..<max(length, 1) { value = value << 8 | UInt64(bytes[index]) }
        let allOnes = (UInt64(1) << (7 * UInt64(length))) - 1
        return value == allOnes ? nil : value
    }

    /// Reads the next element header from `file`: nil when the file ends cleanly before it.
    /// - Throws: ``MediaError/Code/truncated`` when it ends inside the header;
    ///   ``MediaError/Code/invalidFormat`` for an ID or size that no valid file holds.
    static func readHeader(from file: FileByteReader) throws -> EBMLElementHeader? {
        let offset = file.offset
        guard let first = try file.readByte() else { return nil }
        let idLength = vintLength(first)
        guard (1...4).contains(idLength) else {
            throw MediaError.invalidFormat(
                "invalid element ID at byte \(offset): first byte 0x\(String(first, radix: 16, uppercase: true)) "
                    + "marks no ID of 1 to 4 bytes")
        }
        var id = UInt32(first)
        for _ in 1..<idLength {
            guard let byte = try file.readByte() else {
                throw MediaError(.truncated, "truncated in the element ID at byte \(offset)")
            }
            id = id << 8 | UInt32(byte)
        }
        let sizeOffset = file.offset
        guard let sizeFirst = try file.readByte() else {
            throw MediaError(.truncated, "truncated in the size of \(name(id)) at byte \(offset)")
        }
        let sizeLength = vintLength(sizeFirst)
        guard sizeLength > 0 else {
            throw MediaError.invalidFormat(
                "\(name(id)) at byte \(offset): size at byte \(sizeOffset) starts with 0x00 (no valid length)")
        }
        var raw: (UInt64) = 0
        let size = try withUnsafeMutableBytes(of: &raw) { scratch -> UInt64? in
            scratch[0] = sizeFirst
            if sizeLength > 1 {
                let rest = UnsafeMutableRawBufferPointer(rebasing: scratch[1..<sizeLength])
                guard try file.read(into: rest) == sizeLength - 1 else {
                    throw MediaError(.truncated, "truncated in the size of \(name(id)) at byte \(offset)")
                }
            }
            return decodeSize(UnsafeRawBufferPointer(rebasing: scratch[0..<sizeLength]))
        }
        if let size, size > UInt64(maximumElementBytes) {
            throw MediaError.invalidFormat("\(name(id)) at byte \(offset) declares \(size) bytes, beyond any file")
        }
        return EBMLElementHeader(id: id, offset: offset, dataOffset: file.offset, size: size.map { Int64($0) })
    }
}

/// The children and values of a master element held in memory, with the file offset of its
/// first byte, so messages name offsets in the file.
struct EBMLBytes {
    let bytes: [UInt8]
    /// The file offset of `bytes[0]`.
    let fileOffset: Int64

    /// Calls `body` for each child element in `range` of `parent`, with its header and the
    /// range of its data.
    /// - Throws: ``MediaError/Code/invalidFormat`` for a child that runs past the parent's end
    ///   or has an unknown size (only Segments and Clusters may, and they are never read whole).
    func forEachChild(
        in range: Range<Int>, of parent: EBMLElementHeader,
        _ body: (EBMLElementHeader, Range<Int>) throws -> Void
    ) throws {
        var position = range.lowerBound
        while position < range.upperBound {
            let offset = fileOffset + Int64(position)
            let idLength = EBML.vintLength(bytes[position])
            guard (1...4).contains(idLength), position + idLength < range.upperBound else {
                throw MediaError.invalidFormat(
                    "\(parent.label): invalid or cut child element ID at byte \(offset)")
            }
            var id: UInt32 = 0
            for index in position..<position + idLength { id = id << 8 | UInt32(bytes[index]) }
            let sizeAt = position + idLength
            let sizeLength = EBML.vintLength(bytes[sizeAt])
            guard sizeLength > 0, sizeAt + sizeLength <= range.upperBound else {
                throw MediaError.invalidFormat(
                    "\(parent.label): \(EBML.name(id)) at byte \(offset) has an invalid or cut size")
            }
            let size = bytes.withUnsafeBytes {
                EBML.decodeSize(UnsafeRawBufferPointer(rebasing: $0[sizeAt..<sizeAt + sizeLength]))
            }
            let dataStart = sizeAt + sizeLength
            guard let size else {
                throw MediaError.invalidFormat(
                    "\(parent.label): \(EBML.name(id)) at byte \(offset) has an unknown size, which only a Segment "
                        + "or a Cluster may have")
            }
            guard size <= UInt64(range.upperBound - dataStart) else {
                throw MediaError.invalidFormat(
                    "\(parent.label): \(EBML.name(id)) at byte \(offset) declares \(size) bytes, past its parent's "
                        + "end at byte \(fileOffset + Int64(range.upperBound))")
            }
            let header = EBMLElementHeader(
                id: id, offset: offset, dataOffset: fileOffset + Int64(dataStart), size: Int64(size))
            try body(header, dataStart..<dataStart + Int(size))
            position = dataStart + Int(size)
        }
    }

    /// An unsigned integer element's value (0 to 8 bytes, big-endian).
    func unsigned(_ range: Range<Int>, _ header: EBMLElementHeader) throws -> UInt64 {
        guard range.count <= 8 else {
            throw MediaError.invalidFormat("\(header.label): an unsigned integer of \(range.count) bytes (8 at most)")
        }
        return bytes[range].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A signed integer element's value (0 to 8 bytes, big-endian two's complement).
    func signed(_ range: Range<Int>, _ header: EBMLElementHeader) throws -> Int64 {
        guard !range.isEmpty else { return 0 }
        let value = try unsigned(range, header)
        let shift = UInt64(64 - 8 * range.count)
        return Int64(bitPattern: value << shift) >> shift
    }

    /// A float element's value (0, 4 or 8 bytes).
    func float(_ range: Range<Int>, _ header: EBMLElementHeader) throws -> Double {
        switch range.count {
        case 0: return 0
        case 4: return Double(Float(bitPattern: UInt32(try unsigned(range, header))))
        case 8: return Double(bitPattern: try unsigned(range, header))
        default:
            throw MediaError.invalidFormat("\(header.label): a float of \(range.count) bytes (0, 4 or 8 expected)")
        }
    }

    /// A string element's value, without the zero bytes that may pad it.
    func string(_ range: Range<Int>) -> String {
        let text = bytes[range].prefix { $0 != 0 }
        return String(decoding: text, as: UTF8.self)
    }
}
