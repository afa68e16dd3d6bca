/// Turns one stream's encoded frames into RTP packets: Opus one frame per packet (RFC 7587),
/// VP8 (RFC 7741) and VP9 (RFC 9628) split into packets of at most ``maximumPayloadByteCount``
/// payload bytes of balanced sizes, each with its payload descriptor and a 15-bit PictureID
/// that counts frames; the marker bit ends a video frame.
///
/// Packets are built in recycled storage: in steady state packetizing allocates nothing, and the
/// packets are shared by reference wherever they go.
public struct RTPPacketizer {
    /// The largest payload (descriptor included) of a video packet, leaving room for IP, UDP,
    /// RTP and SRTP overheads inside a 1,280-byte IPv6 minimum MTU.
    public static let defaultMaximumPayloadByteCount = 1200

    /// The codec of the frames.
    public let codec: MediaCodec
    /// The stream's synchronization source.
    public let ssrc: UInt32
    /// The payload type written in every packet.
    public let payloadType: UInt8
    /// The largest video payload, descriptor included. Opus packets are never split (RFC 7587),
    /// so an Opus frame larger than this goes out whole.
    public let maximumPayloadByteCount: Int
    /// The RTP clock: 48,000 Hz for Opus (whatever the sampling rate), 90,000 Hz for video.
    public var clockRate: Int { codec.rtpClockRate }

    private let timestampOffset: UInt32
    /// The next packet's sequence number.
    public private(set) var nextSequenceNumber: UInt16
    /// The next video frame's PictureID (15 bits).
    public private(set) var nextPictureId: UInt16
    private var recycler: ByteRecycler

    /// A packetizer for `codec` sending as `ssrc` with `payloadType`. The first sequence number,
    /// timestamp offset and PictureID should be random (RFC 3550 5.1), or derived from a seed
    /// for a reproducible session.
    /// - Throws: ``MediaError/Code/invalidArgument`` for a payload type above 127 or a maximum
    ///   payload below 64 bytes.
    public init(
        codec: MediaCodec, ssrc: UInt32, payloadType: UInt8, firstSequenceNumber: UInt16 = 0,
        timestampOffset: UInt32 = 0, firstPictureId: UInt16 = 0,
        maximumPayloadByteCount: Int = defaultMaximumPayloadByteCount
    ) throws {
        guard payloadType < 128 else {
            throw MediaError.invalidArgument("RTP payload type \(payloadType) is above 127")
        }
        guard maximumPayloadByteCount >= 64 else {
            throw MediaError.invalidArgument("maximum RTP payload \(maximumPayloadByteCount) bytes is below 64")
        }
        self.codec = codec
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.maximumPayloadByteCount = maximumPayloadByteCount
        self.timestampOffset = timestampOffset
        nextSequenceNumber = firstSequenceNumber
        nextPictureId = firstPictureId & 0x7FFF
        // More packets than any receiver or history holds at once, so storage comes round free:
        // an audio receiver holds up to 100 queued and 32 not yet taken in (`PendingArrivals`).
        recycler = ByteRecycler(
            slotCount: codec == .opus ? 256 : 1024,
            capacity: RTPHeader.fixedByteCount + max(maximumPayloadByteCount, codec == .opus ? 1275 : 0))
    }

    /// The RTP timestamp of media time `microseconds`.
    public func rtpTimestamp(microseconds: Int64) -> UInt32 {
        // Scaled in 128 bits: any media time gives a timestamp (the clock wraps at 2^32 anyway).
        timestampOffset
            &+ UInt32(
                truncatingIfNeeded: MediaTime.scaledSaturating(microseconds, by: Int64(clockRate), over: 1_000_000))
    }

    /// Packetizes `frame`, calling `emit` with each packet in order.
    /// - Throws: ``MediaError/Code/invalidArgument`` for a frame of another codec or an empty frame.
    /// - Complexity: allocates nothing in steady state.
    public mutating func packetize(_ frame: EncodedFrame, _ emit: (RTPPacket) throws -> Void) throws {
        guard frame.codec == codec else {
            throw MediaError.invalidArgument("a \(frame.codec) frame given to the \(codec) packetizer")
        }
        guard !frame.bytes.isEmpty else { throw MediaError.invalidArgument("an empty \(codec) frame cannot be sent") }
        let timestamp = rtpTimestamp(microseconds: frame.timestampMicroseconds)
        guard let format = codec.videoPayloadFormat else {
            try frame.bytes.withUnsafeBytes { data in
                try emit(
                    makePacket(marker: false, timestamp: timestamp, descriptor: nil as VP8PayloadDescriptor?, data))
            }
            return
        }
        try packetize(frame, timestamp: timestamp, as: format, emit)
        nextPictureId = (nextPictureId + 1) & 0x7FFF
    }

    /// Packetizes the video `frame` in `format`: balanced pieces, each after its descriptor, the
    /// marker bit on the last.
    private mutating func packetize<Format: VideoPayloadFormat>(
        _ frame: EncodedFrame, timestamp: UInt32, as format: Format.Type, _ emit: (RTPPacket) throws -> Void
    ) throws {
        var descriptor = Format.descriptor(of: frame, pictureId: nextPictureId)
        try Self.split(frame, room: maximumPayloadByteCount - descriptor.byteCount) { data, first, last in
            Format.mark(&descriptor, first: first, last: last)
            return try emit(makePacket(marker: last, timestamp: timestamp, descriptor: descriptor, data))
        }
    }

    /// Packetizes the Opus `frame` as redundant audio (RFC 2198) under `redundantPayloadType`:
    /// copies of the `earlier` frames (oldest first) that the format can carry (at most 1,023
    /// bytes, at most 341 ms back) go before the frame itself, so a receiver rebuilds a lost
    /// packet exactly from a later one. With no earlier frame that fits, the packet still has the
    /// redundant format (a 1-byte header), as the stream's payload type promises.
    /// - Throws: ``MediaError/Code/invalidArgument`` for a frame that is not Opus, or empty.
    /// - Complexity: allocates nothing in steady state.
    public mutating func packetize(
        _ frame: EncodedFrame, redundantPayloadType: UInt8, earlier: ArraySlice<EncodedFrame>,
        _ emit: (RTPPacket) throws -> Void
    ) throws {
        guard codec == .opus, frame.codec == .opus else {
            throw MediaError.invalidArgument("a \(frame.codec) frame given as redundant audio; only Opus is carried so")
        }
        guard frame.byteCount > 0 else { throw MediaError.invalidArgument("an empty opus frame cannot be sent") }
        guard redundantPayloadType < 128 else {
            throw MediaError.invalidArgument("RTP payload type \(redundantPayloadType) is above 127")
        }
        let timestamp = rtpTimestamp(microseconds: frame.timestampMicroseconds)
        func offset(_ earlierFrame: EncodedFrame) -> Int64 {
            Int64(timestamp &- rtpTimestamp(microseconds: earlierFrame.timestampMicroseconds))
        }
        func carried(_ earlierFrame: EncodedFrame) -> Bool {
            earlierFrame.codec == .opus
                && AudioRedundancy.fits(byteCount: earlierFrame.byteCount, timestampOffset: offset(earlierFrame))
        }
        var payloadBytes = 1 + frame.byteCount
        var blocks = 0
        for earlierFrame in earlier where carried(earlierFrame) {
            payloadBytes += 4 + earlierFrame.byteCount
            blocks += 1
        }
        let header = RTPHeader(
            marker: false, payloadType: redundantPayloadType, sequenceNumber: nextSequenceNumber, timestamp: timestamp,
            ssrc: ssrc)
        nextSequenceNumber &+= 1
        // Moved out while the fill reads `self`.
        var recycler = ByteRecycler.vacant
        swap(&recycler, &self.recycler)
        defer { swap(&recycler, &self.recycler) }
        let bytes = recycler.bytes(count: RTPHeader.fixedByteCount + payloadBytes) { out in
            header.write(into: out)
            // Every block's header first (4 bytes each, 1 for the primary), then their data.
            var headerAt = RTPHeader.fixedByteCount
            var dataAt = headerAt + 4 * blocks + 1
            for earlierFrame in earlier where carried(earlierFrame) {
                AudioRedundancy.writeRedundantHeader(
                    payloadType: payloadType, timestampOffset: UInt32(offset(earlierFrame)),
                    byteCount: earlierFrame.byteCount, into: UnsafeMutableRawBufferPointer(rebasing: out[headerAt...]))
                headerAt += 4
                earlierFrame.withUnsafeBytes { data in
                    UnsafeMutableRawBufferPointer(rebasing: out[dataAt...]).copyMemory(from: data)
                    dataAt += data.count
                }
            }
            out[headerAt] = payloadType
            frame.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[dataAt...]).copyMemory(from: $0) }
        }
        try emit(RTPPacket(trusted: bytes, header: header))
    }

    /// Splits a video frame into balanced pieces of at most `room` bytes (what a packet holds
    /// beside its descriptor).
    /// Static, so the packetizer is not borrowed while `each` makes packets with it: a borrow of
    /// `self` there is a copy, which shares the recycler's slots and makes every packet allocate.
    private static func split(
        _ frame: EncodedFrame, room: Int,
        _ each: (UnsafeRawBufferPointer, _ first: Bool, _ last: Bool) throws -> Void
    ) rethrows {
        let total = frame.bytes.count
        let count = (total + room - 1) / room
        let base = total / count
        let larger = total % count  // the first `larger` pieces take one byte more
        try frame.bytes.withUnsafeBytes { bytes in
            var start = 0
            for index in 0..<count {
                let size = base + (index < larger ? 1 : 0)
                try each(
                    UnsafeRawBufferPointer(rebasing: bytes[start..<(start + size)]), index == 0, index == count - 1)
                start += size
            }
        }
    }

    private mutating func makePacket<Descriptor: PayloadDescriptorWriting>(
        marker: Bool, timestamp: UInt32, descriptor: Descriptor?, _ data: UnsafeRawBufferPointer
    ) -> RTPPacket {
        let header = RTPHeader(
            marker: marker, payloadType: payloadType, sequenceNumber: nextSequenceNumber, timestamp: timestamp,
            ssrc: ssrc)
        nextSequenceNumber &+= 1
        let descriptorBytes = descriptor?.byteCount ?? 0
        let bytes = recycler.bytes(
            headCount: RTPHeader.fixedByteCount + descriptorBytes,
            writeHead: { head in
                header.write(into: head)
                if let descriptor {
                    let written = descriptor.write(
                        into: UnsafeMutableRawBufferPointer(rebasing: head[RTPHeader.fixedByteCount...]))
                    precondition(written == descriptorBytes, "descriptor wrote \(written) of \(descriptorBytes) bytes")
                }
            }, body: data)
        return RTPPacket(trusted: bytes, header: header)
    }
}

/// What the packetizer needs of a payload descriptor.
protocol PayloadDescriptorWriting {
    var byteCount: Int { get }
    /// Writes every one of the descriptor's ``byteCount`` bytes at the start of `bytes` (the
    /// packetizer's buffer is not zeroed first); returns ``byteCount``.
    func write(into bytes: UnsafeMutableRawBufferPointer) -> Int
}

extension VP8PayloadDescriptor: PayloadDescriptorWriting {}
extension VP9PayloadDescriptor: PayloadDescriptorWriting {}
