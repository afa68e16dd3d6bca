/// Building blocks of EBML (RFC 8794), the binary format of Matroska and WebM: elements are an
/// ID (its bytes carry their own length marker), a size as a variable-length integer, and data.
/// Appends to a byte array; masters are built inside out (children first).
enum EBML {
    /// Appends an element ID: its 1 to 4 bytes, without leading zero bytes.
    static func appendID(_ id: UInt32, to bytes: inout [UInt8]) {
        let count = id > 0xFF_FFFF ? 4 : id > 0xFFFF ? 3 : id > 0xFF ? 2 : 1
        for index in stride(from: count - 1, through: 0, by: -1) {
            bytes.append(UInt8(truncatingIfNeeded: id >> (8 * index)))
        }
    }

    /// Appends `value` as a variable-length size in `width` bytes (1...8), or the fewest that hold it.
    static func appendSize(_ value: UInt64, width: Int? = nil, to bytes: inout [UInt8]) {
        var count = 1
        // A width of n holds values below 2^(7n) - 1 (all ones means "unknown").
        while count < 8 && value >= (UInt64(1) << (7 * UInt64(count))) - 1 { count += 1 }
        if let width { count = max(count, width) }
        let marked = value | (UInt64(1) << (7 * UInt64(count)))
        for index in stride(from: count - 1, through: 0, by: -1) {
            bytes.append(UInt8(truncatingIfNeeded: marked >> (8 * UInt64(index))))
        }
    }

    /// Appends an element holding `data`.
    static func appendElement(_ id: UInt32, _ data: [UInt8], to bytes: inout [UInt8]) {
        appendID(id, to: &bytes)
        appendSize(UInt64(data.count), to: &bytes)
        bytes.append(contentsOf: data)
    }

    /// Appends an unsigned integer element in the fewest bytes (at least one).
    static func appendUnsigned(_ id: UInt32, _ value: UInt64, to bytes: inout [UInt8]) {
        var count = 1
        while count < 8 && value >> (8 * UInt64(count)) != 0 { count += 1 }
        appendID(id, to: &bytes)
        appendSize(UInt64(count), to: &bytes)
        for index in stride(from: count - 1, through: 0, by: -1) {
            bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))))
        }
    }

    /// Appends a signed integer element in 8 bytes.
    static func appendSigned(_ id: UInt32, _ value: Int64, to bytes: inout [UInt8]) {
        appendID(id, to: &bytes)
        appendSize(8, to: &bytes)
        appendBigEndian(UInt64(bitPattern: value), to: &bytes)
    }

    /// Appends an 8-byte float element.
    static func appendFloat(_ id: UInt32, _ value: Double, to bytes: inout [UInt8]) {
        appendID(id, to: &bytes)
        appendSize(8, to: &bytes)
        appendBigEndian(value.bitPattern, to: &bytes)
    }

    /// Appends the 8 bytes of `value`, most significant first (an element's 8-byte data).
    static func appendBigEndian(_ value: UInt64, to bytes: inout [UInt8]) {
        for index in stride(from: 7, through: 0, by: -1) {
            bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))))
        }
    }

    /// Appends a string element (ASCII or UTF-8).
    static func appendString(_ id: UInt32, _ value: String, to bytes: inout [UInt8]) {
        appendElement(id, Array(value.utf8), to: &bytes)
    }

    /// Appends a master element whose children `build` appends.
    static func appendMaster(_ id: UInt32, to bytes: inout [UInt8], _ build: (inout [UInt8]) -> Void) {
        var children: [UInt8] = []
        build(&children)
        appendElement(id, children, to: &bytes)
    }

    /// Appends a Void element of exactly `total` bytes (at least 2), header included.
    static func appendVoid(totalBytes total: Int, to bytes: inout [UInt8]) {
        precondition(total >= 2, "a Void element takes at least 2 bytes")
        appendID(ID.void, to: &bytes)
        // A size of 1 byte holds up to 126; beyond that, 8 bytes.
        if total - 2 <= 126 {
            appendSize(UInt64(total - 2), width: 1, to: &bytes)
            bytes.append(contentsOf: repeatElement(0, count: total - 2))
        } else {
            appendSize(UInt64(total - 9), width: 8, to: &bytes)
            bytes.append(contentsOf: repeatElement(0, count: total - 9))
        }
    }
}
