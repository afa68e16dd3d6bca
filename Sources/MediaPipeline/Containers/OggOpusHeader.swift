/// The Ogg Opus identification header, `OpusHead` (RFC 7845 §5.1).
public struct OpusHead: Sendable, Equatable {
    /// Encapsulation version; only major version 0 is defined.
    public var version: UInt8 = 1
    /// Output channels.
    public var channelCount: Int
    /// 48 kHz samples to discard from the start of the decoded stream.
    public var preSkip: Int
    /// The sample rate of the original input in Hz (informational; 0 if unknown).
    public var inputSampleRate: Int
    /// Gain to apply to the decoded output, in 1/256 dB.
    public var outputGainQ8dB: Int = 0
    /// Channel mapping family: 0 for mono/stereo in one stream, 1 for up to 8 channels in
    /// Vorbis order over several streams (RFC 7845 §5.1.1).
    public var mappingFamily: UInt8 = 0
    /// Family 1: the Opus streams in each packet, how many of them are stereo (coupled), and
    /// for each output channel the decoded channel it takes (255: silence).
    public var streamCount = 1, coupledStreamCount = 0
    public var channelMapping: [UInt8] = []

    /// The channels MediaPipeline decodes the stream to: its own, or stereo (folded down) for
    /// more than two.
    public var decodedChannelCount: Int { min(2, channelCount) }

    /// A header for a single-stream mono or stereo file.
    public init(channelCount: Int, preSkip: Int, inputSampleRate: Int, outputGainQ8dB: Int = 0) {
        self.channelCount = channelCount
        self.preSkip = preSkip
        self.inputSampleRate = inputSampleRate
        self.outputGainQ8dB = outputGainQ8dB
    }

    func serialized() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendASCII("OpusHead")
        bytes.append(version)
        bytes.append(UInt8(channelCount))
        bytes.appendLE16(UInt16(preSkip))
        bytes.appendLE32(UInt32(inputSampleRate))
        bytes.appendLE16(UInt16(bitPattern: Int16(outputGainQ8dB)))
        bytes.append(mappingFamily)
        if mappingFamily != 0 {
            bytes.append(UInt8(streamCount))
            bytes.append(UInt8(coupledStreamCount))
            bytes.append(contentsOf: channelMapping)
        }
        return bytes
    }

    static func parse(_ packet: [UInt8]) throws -> OpusHead {
        guard packet.count >= 8, packet.printable(0..<8) == "OpusHead" else {
            throw MediaError.invalidFormat(
                "first Ogg packet is not an Opus identification header ('OpusHead'), found '\(packet.printable(0..<min(8, packet.count)))'"
            )
        }
        guard packet.count >= 19 else {
            throw MediaError.invalidFormat("OpusHead is \(packet.count) bytes; at least 19 expected")
        }
        guard packet[8] >> 4 == 0 else {
            throw MediaError.unsupported("Ogg Opus version \(packet[8]) is not supported (major version 0 only)")
        }
        let channels = Int(packet[9])
        guard channels > 0 else { throw MediaError.invalidFormat("OpusHead channel count is 0") }
        var head = OpusHead(
            channelCount: channels, preSkip: Int(packet.le16(10)), inputSampleRate: Int(packet.le32(12)),
            outputGainQ8dB: Int(Int16(bitPattern: packet.le16(16))))
        head.version = packet[8]
        head.mappingFamily = packet[18]
        if head.mappingFamily == 1 {
            // Vorbis channel order, 1 to 8 channels, each from one of the streams' channels.
            guard channels <= 8 else {
                throw MediaError.invalidFormat("OpusHead mapping family 1 with \(channels) channels; 1...8 allowed")
            }
            guard packet.count >= 21 + channels else {
                throw MediaError.invalidFormat(
                    "OpusHead of family 1 is \(packet.count) bytes; \(21 + channels) needed for its channel mapping")
            }
            head.streamCount = Int(packet[19])
            head.coupledStreamCount = Int(packet[20])
            head.channelMapping = Array(packet[21..<(21 + channels)])
            let decoded = head.streamCount + head.coupledStreamCount
            guard head.streamCount > 0, head.coupledStreamCount <= head.streamCount, decoded <= 255 else {
                throw MediaError.invalidFormat(
                    "OpusHead: \(head.streamCount) streams of which \(head.coupledStreamCount) coupled")
            }
            if let bad = head.channelMapping.first(where: { $0 != 255 && Int($0) >= decoded }) {
                throw MediaError.invalidFormat(
                    "OpusHead channel mapping names decoded channel \(bad) of \(decoded)")
            }
            return head
        }
        guard head.mappingFamily == 0 else {
            throw MediaError.unsupported(
                "Ogg Opus channel mapping family \(head.mappingFamily) (\(channels) channels) is not supported; families 0 and 1 only"
            )
        }
        guard channels <= 2 else {
            throw MediaError.invalidFormat(
                "OpusHead mapping family 0 with \(channels) channels; family 0 allows 1 or 2")
        }
        return head
    }
}

/// The Ogg Opus comment header, `OpusTags` (RFC 7845 §5.2).
public struct OpusTags: Sendable, Equatable {
    /// The encoder's name.
    public var vendor: String
    /// `NAME=value` comments.
    public var comments: [String]

    /// Tags with `vendor` and `comments`.
    public init(vendor: String, comments: [String] = []) {
        self.vendor = vendor
        self.comments = comments
    }

    func serialized() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendASCII("OpusTags")
        let vendorBytes = Array(vendor.utf8)
        bytes.appendLE32(UInt32(vendorBytes.count))
        bytes.append(contentsOf: vendorBytes)
        bytes.appendLE32(UInt32(comments.count))
        for comment in comments {
            let utf8 = Array(comment.utf8)
            bytes.appendLE32(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
        return bytes
    }

    static func parse(_ packet: [UInt8]) throws -> OpusTags {
        guard packet.count >= 8, packet.printable(0..<8) == "OpusTags" else {
            throw MediaError.invalidFormat("second Ogg packet is not an Opus comment header ('OpusTags')")
        }
        var offset = 8
        func field(_ what: String) throws -> [UInt8] {
            guard offset + 4 <= packet.count else {
                throw MediaError.invalidFormat("OpusTags ends before the length of the \(what)")
            }
            let length = Int(packet.le32(offset))
            offset += 4
            guard length <= packet.count - offset else {
                throw MediaError.invalidFormat(
                    "OpusTags \(what) claims \(length) bytes; only \(packet.count - offset) remain")
            }
            defer { offset += length }
            return Array(packet[offset..<offset + length])
        }
        let vendor = String(decoding: try field("vendor string"), as: UTF8.self)
        guard offset + 4 <= packet.count else {
            throw MediaError.invalidFormat("OpusTags ends before the comment count")
        }
        let count = Int(packet.le32(offset))
        offset += 4
        guard count <= (packet.count - offset) / 4 else {
            throw MediaError.invalidFormat(
                "OpusTags claims \(count) comments; the header can hold at most \((packet.count - offset) / 4)")
        }
        var comments: [String] = []
        for index in 0..<count { comments.append(String(decoding: try field("comment \(index)"), as: UTF8.self)) }
        return OpusTags(vendor: vendor, comments: comments)
    }
}
