/// A frame rebuilt from RTP packets, and whether packets went missing before it.
struct AssembledFrame {
    /// The frame: for video its bytes in the assembler's recycled storage, for audio the packet's payload.
    var frame: EncodedFrame
    /// True when packets of this stream were lost (or given up on) between the previous frame
    /// handed out and this one: a delta frame after a gap must not be decoded.
    var followsGap: Bool
    /// The unwrapped sequence numbers of the frame's first and last packets.
    var sequenceNumbers: ClosedRange<Int64>
    /// When the frame's last packet to come arrived (clock microseconds): when it was complete,
    /// whether or not an earlier frame still held it back.
    var completedMicroseconds: Int64
}

/// Rebuilds one stream's encoded frames from its RTP packets and makes loss visible before
/// anything is decoded.
///
/// Packets are kept in a ring indexed by unwrapped sequence number (the shape of libwebrtc's
/// packet buffer). The ring spans at most ``window`` numbers; its storage starts at a few
/// dozen slots and doubles when the packets waiting span more (as libwebrtc's buffer grows on
/// a collision), so a stream keeps what its rate and delay need, not the widest ring.
///
/// Video frames are handed out in sequence order once every packet from the frame's first (S
/// or B bit) to its last (marker bit) is there. A missing packet holds later frames back for
/// at most ``gapWaitMicroseconds`` (a reordered packet fills the hole in that time); then the
/// assembler gives up on it, drops the incomplete frames and marks the next frame as following
/// a gap. Opus packets are frames on their own and are handed out as they
/// arrive, sharing the packet's bytes, with a duration of 0 (the decoder tells it); the audio
/// receiver orders them by timestamp; gaps are only counted.
///
/// The first packet to arrive need not be the stream's first: until the first frame is handed
/// out (or anything given up), a packet older than every one kept moves the start back to it,
/// as long as the ring holds it together with the newest (libwebrtc's packet buffer keeps the
/// packets before its first frame the same way). So a keyframe whose first packet is overtaken
/// by its second, or by a later frame's packets, is kept whole. A packet that does not start a
/// frame at the head of a stream not yet started waits ``startWaitMicroseconds`` for its
/// frame's start; after that it is dropped as before.
struct RTPFrameAssembler {
    let codec: MediaCodec
    /// How long a missing packet may hold later frames back, in microseconds.
    var gapWaitMicroseconds: Int64
    /// How long the first packets, when they do not start a frame, wait for the start that may
    /// have been overtaken, in microseconds: nobody asks for packets before the first one seen,
    /// so only reordering brings them (the reorder wait, shorter than a retransmission's).
    let startWaitMicroseconds: Int64

    /// The most numbers the ring spans: a packet further ahead than that starts the stream
    /// again, one further behind is late. A power of two.
    static let window = 512
    /// Slots the ring's storage starts with (a power of two): about a second of a 100 kbit/s
    /// stream's packets, more than a 500 kbit/s stream holds back while a frame is incomplete.
    static let initialSlotCount = 32
    private var slots: [RTPPacket?] = []
    private var slotSequence: [Int64] = []
    /// Where each packet's frame data starts (after the payload descriptor).
    private var slotDataOffset: [Int] = []
    private var slotStartsFrame: [Bool] = []
    /// Whether each packet starts a keyframe (read once, as it is stored).
    private var slotStartsKeyframe: [Bool] = []
    /// Each packet's unwrapped RTP timestamp.
    private var slotTimestamp: [Int64] = []
    /// When each packet arrived (clock microseconds).
    private var slotArrival: [Int64] = []
    private var sequences = SequenceUnwrapper()
    private var timestamps = TimestampUnwrapper()
    private var firstTimestamp: Int64?
    /// The first sequence number not yet handed out or given up.
    private var next: Int64?
    private var highest: Int64 = .min
    /// When a missing packet first held a later one back (clock microseconds).
    private var blockedSince: Int64?
    /// The first packet of the newest keyframe seen (video): once that keyframe is whole, a
    /// missing packet before it need not hold it back past its time.
    private var newestKeyframeStart: Int64?
    private var gapPending = false
    /// True until a frame is handed out or anything is given up: packets older than ``next``
    /// still move the start back.
    private var startIsOpen = true
    private var recycler: ByteRecycler

    /// Packets accepted.
    private(set) var packetsReceived: Int64 = 0
    /// Packets that came after their place was handed out or given up, or twice.
    private(set) var packetsLate: Int64 = 0
    /// Packets whose payload could not be parsed.
    private(set) var packetsMalformed: Int64 = 0
    /// Sequence numbers never received (counted when given up; for audio, holes in the sequence).
    private(set) var packetsLost: Int64 = 0
    /// Frames dropped because packets of theirs never came, or because a keyframe behind a
    /// missing packet went on without them.
    private(set) var framesIncomplete: Int64 = 0

    /// Where the stream starts as far as is known, while that may still move back (video): the
    /// earliest packet kept, until a frame is handed out or anything is given up; nil after
    /// that, and before any packet.
    var openStart: Int64? { startIsOpen ? next : nil }

    /// An assembler for `codec` whose missing packets hold later frames back for
    /// `gapWaitMicroseconds`, and whose first packets wait `startWaitMicroseconds` (by default
    /// the same) for a start they may have overtaken.
    init(codec: MediaCodec, gapWaitMicroseconds: Int64, startWaitMicroseconds: Int64? = nil) {
        self.codec = codec
        self.gapWaitMicroseconds = gapWaitMicroseconds
        self.startWaitMicroseconds = startWaitMicroseconds ?? gapWaitMicroseconds
        // More frames than a video receiver queues (48) plus the one being decoded; slots start
        // small and grow together with the largest frame. Audio frames are their packets'
        // payloads: no storage of their own.
        if codec == .opus { redundantAudio.reserveCapacity(Self.redundantBlocksKept) }
        recycler = ByteRecycler(slotCount: codec == .opus ? 0 : 68, capacity: codec == .opus ? 0 : 4096)
        if codec != .opus { makeEmptySlots(Self.initialSlotCount) }
    }

    /// Replaces the ring's storage with `count` empty slots.
    private mutating func makeEmptySlots(_ count: Int) {
        slots = Array(repeating: nil, count: count)
        slotSequence = Array(repeating: -1, count: count)
        slotDataOffset = Array(repeating: 0, count: count)
        slotStartsFrame = Array(repeating: false, count: count)
        slotStartsKeyframe = Array(repeating: false, count: count)
        slotTimestamp = Array(repeating: 0, count: count)
        slotArrival = Array(repeating: 0, count: count)
    }

    /// Takes `packet` (arrived at clock time `now`) and hands out every frame it completes.
    mutating func insert(_ packet: RTPPacket, now: Int64, _ emit: (AssembledFrame) -> Void) {
        insert(packet, now: now)
        while let frame = next(now: now) { emit(frame) }
    }

    /// Gives up on missing packets whose wait is over, handing out the frames behind them.
    mutating func poll(now: Int64, _ emit: (AssembledFrame) -> Void) {
        while let frame = next(now: now) { emit(frame) }
    }

    /// Takes `packet`, arrived at clock time `now`; the frames it completes come from
    /// ``next(now:)``. Returns the packet's unwrapped sequence number.
    @discardableResult
    mutating func insert(_ packet: RTPPacket, now: Int64) -> Int64 {
        let sequence = sequences.unwrap(packet.header.sequenceNumber)
        let timestamp = timestamps.unwrap(packet.header.timestamp)
        if firstTimestamp == nil { firstTimestamp = timestamp }
        if codec == .opus {
            insertAudio(packet, sequence: sequence, timestamp: timestamp, now: now)
            return sequence
        }
        insertVideo(packet, sequence: sequence, timestamp: timestamp, now: now)
        return sequence
    }

    /// The sender's RTP timestamp of media time `microseconds` as frames carry it (counted from
    /// the first packet), to the nearest clock tick; nil before any packet.
    func rtpTimestamp(microseconds: Int64) -> UInt32? {
        let rate = Int64(codec.rtpClockRate)
        return firstTimestamp.map {
            // Rounded to the nearest tick: counted in half ticks, one half added, then halved.
            let ticks = MediaTime.scaledSaturating(microseconds, by: rate * 2, over: 1_000_000)
            return UInt32(truncatingIfNeeded: $0 &+ (ticks &+ 1) / 2)
        }
    }

    /// The media time (as frames carry it) of the sender's RTP timestamp `rtpTimestamp`, taken
    /// as the nearest to the timestamps seen; nil before any packet.
    func mediaMicroseconds(rtpTimestamp: UInt32) -> Int64? {
        guard firstTimestamp != nil else { return nil }
        var unwrapper = timestamps  // a copy: a report's timestamp does not move the stream's
        return microseconds(unwrapper.unwrap(rtpTimestamp))
    }

    /// Slots in the ring's storage now (video): ``initialSlotCount``, doubled each time the
    /// packets held back spanned more.
    var storageSlotCount: Int { slots.count }

    /// The first sequence number not yet handed out or given up (video), if any packet came.
    var firstPending: Int64? { next }

    private mutating func insertVideo(_ packet: RTPPacket, sequence: Int64, timestamp: Int64, now: Int64) {
        if let next, sequence < next {
            if next - sequence > Int64(Self.window) {
                // Far behind anything recent: the sender started its sequence again. Follow it.
                giveUp(before: sequence)
                highest = sequence - 1
            } else if startIsOpen && max(highest, next) - sequence < Int64(Self.window) {
                // Overtaken before the first frame: the stream starts here once the packet is
                // kept (the ring still holds it with the newest packet).
            } else {
                packetsLate += 1
                return
            }
        }
        let base = next ?? sequence
        if sequence - base >= Int64(Self.window) {
            // Too far ahead to wait for what is missing: start again from this packet.
            giveUp(before: sequence)
        }
        let first = next ?? sequence
        next = first
        makeRoom(from: min(first, sequence), to: max(highest, sequence))
        let index = Int(sequence & Int64(slots.count - 1))
        if slotSequence[index] == sequence {
            packetsLate += 1
            return
        }
        guard let start = describe(packet) else {
            packetsMalformed += 1
            return
        }
        if start.startsKeyframe { newestKeyframeStart = max(newestKeyframeStart ?? sequence, sequence) }
        if let next, sequence < next { self.next = sequence }  // the start moves back (checked above)
        slots[index] = packet
        slotSequence[index] = sequence
        slotDataOffset[index] = start.dataOffset
        slotStartsFrame[index] = start.startsFrame
        slotStartsKeyframe[index] = start.startsKeyframe
        slotTimestamp[index] = timestamp
        slotArrival[index] = now
        packetsReceived += 1
        highest = max(highest, sequence)
    }

    /// The next frame ready at clock time `now`, if any: a complete frame at the head, or the
    /// first one after missing packets whose wait is over, or a whole keyframe behind missing
    /// packets whose media time is at or before `keyframesDueBy` (microseconds, as the frames'
    /// ``EncodedFrame/timestampMicroseconds``; nil: keyframes wait like any frame).
    ///
    /// A keyframe needs no frame before it: once it is due to be shown, waiting on for an
    /// earlier frame's packets would only make it late. libwebrtc's frame buffer likewise
    /// decodes the next decodable frame when its render time comes, dropping the incomplete
    /// ones before it.
    mutating func next(now: Int64, keyframesDueBy: Int64? = nil) -> AssembledFrame? {
        if codec == .opus {
            defer { readyAudio = nil }
            return readyAudio
        }
        return advance(now: now, keyframesDueBy: keyframesDueBy)
    }

    // MARK: - Audio

    private var nextAudioSequence: Int64?
    /// The audio frame the last packet made, until ``next(now:)`` takes it.
    private var readyAudio: AssembledFrame?
    /// Which of the 64 sequence numbers up to the highest were received (bit 0: the highest),
    /// to tell a duplicate from a packet that was overtaken.
    private var audioSeen: UInt64 = 0

    private mutating func insertAudio(_ packet: RTPPacket, sequence: Int64, timestamp: Int64, now: Int64) {
        guard packet.payloadByteCount > 0 else {
            packetsMalformed += 1
            return
        }
        if let expected = nextAudioSequence {
            if sequence >= expected {
                packetsLost += sequence - expected
                // Slide the window of the last 64 sequence numbers seen.
                let shift = sequence - expected + 1
                audioSeen = shift >= 64 ? 1 : (audioSeen << UInt64(shift)) | 1
            } else {
                let age = expected - 1 - sequence
                if age < 64 && audioSeen & (1 << UInt64(age)) != 0 {
                    packetsLate += 1  // a copy of a packet already taken
                    return
                }
                if age < 64 { audioSeen |= 1 << UInt64(age) }
                packetsLate += 1  // overtaken: the audio receiver decides whether it is still useful
                if packetsLost > 0 { packetsLost -= 1 }  // it was counted lost when the hole appeared
            }
        } else {
            audioSeen = 1
        }
        nextAudioSequence = max(nextAudioSequence ?? .min, sequence + 1)
        packetsReceived += 1
        // The frame is the packet's payload, shared with every other receiver of the packet.
        var primary = packet.payloadRange
        redundantAudio.removeAll(keepingCapacity: true)
        if packet.header.payloadType == RTPPayloadType.red {
            // Redundant audio (RFC 2198): the primary block is the frame; earlier frames' copies
            // wait in `redundantAudio` for the jitter buffer, which takes those it misses.
            let base = packet.payloadRange.lowerBound
            var primaryFound = false
            let parsed: Void? = try? packet.withUnsafePayload { payload in
                try AudioRedundancy.forEachBlock(in: payload) { block in
                    let range = (base + block.range.lowerBound)..<(base + block.range.upperBound)
                    guard block.payloadType == RTPPayloadType.opus, !range.isEmpty else { return }
                    if block.isPrimary {
                        primary = range
                        primaryFound = true
                    } else if redundantAudio.count < Self.redundantBlocksKept {
                        redundantAudio.append(
                            EncodedFrame(
                                storage: packet.bytes, range: range, codec: .opus, isKeyframe: true,
                                timestampMicroseconds: microseconds(timestamp - Int64(block.timestampOffset)),
                                durationMicroseconds: 0))
                    }
                }
            }
            guard parsed != nil, primaryFound else {
                // Unreadable, or its new frame is not Opus: nothing of it is played.
                packetsMalformed += 1
                redundantAudio.removeAll(keepingCapacity: true)
                return
            }
        }
        let frame = EncodedFrame(
            storage: packet.bytes, range: primary, codec: .opus, isKeyframe: true,
            timestampMicroseconds: microseconds(timestamp), durationMicroseconds: 0)
        readyAudio = AssembledFrame(
            frame: frame, followsGap: false, sequenceNumbers: sequence...sequence, completedMicroseconds: now)
    }

    /// The most redundant blocks of one packet kept (browsers send one or two).
    static let redundantBlocksKept = 4
    /// The copies of earlier frames the last redundant audio packet carried (RFC 2198), oldest
    /// first; replaced by each packet.
    private(set) var redundantAudio: [EncodedFrame] = []

    // MARK: - Video

    private func microseconds(_ timestamp: Int64) -> Int64 {
        // The unwrapped timestamp may run far from the first (a sender that jumps by 2^31 again
        // and again): scaled in 128 bits and held within MediaTime's limit, so the receivers'
        // sums of a media time and a delay (or an arrival less a media time) fit in 64 bits.
        let scaled = MediaTime.scaledSaturating(
            timestamp - (firstTimestamp ?? timestamp), by: 1_000_000, over: Int64(codec.rtpClockRate))
        return min(max(scaled, -MediaTime.limitMicroseconds), MediaTime.limitMicroseconds)
    }

    /// Where frame data starts in `packet`, whether it starts a frame and whether that frame is
    /// a keyframe (told as ``assemble(_:)`` tells it); nil for a payload whose descriptor
    /// cannot be read.
    private func describe(_ packet: RTPPacket) -> VideoPayloadStart? {
        guard let format = codec.videoPayloadFormat else {
            return VideoPayloadStart(dataOffset: 0, startsFrame: true, startsKeyframe: true)
        }
        return packet.withUnsafePayload { format.describe($0) }
    }

    private func slot(_ sequence: Int64) -> Int? {
        let index = Int(sequence & Int64(slots.count - 1))
        return slotSequence[index] == sequence && slots[index] != nil ? index : nil
    }

    private mutating func clear(_ sequence: Int64) {
        let index = Int(sequence & Int64(slots.count - 1))
        if slotSequence[index] == sequence {
            slots[index] = nil
            slotSequence[index] = -1
        }
    }

    /// Grows the ring's storage (doubling) until it holds every number from `low` to `high` at
    /// once, a span of at most ``window``; the packets kept, all within the span, move to their
    /// places in the larger ring. Allocates only when it grows.
    private mutating func makeRoom(from low: Int64, to high: Int64) {
        let needed = Int(high - low + 1)
        guard needed > slots.count else { return }
        var count = max(slots.count, 1)
        while count < needed { count *= 2 }
        let old = (
            slots: slots, sequence: slotSequence, dataOffset: slotDataOffset, startsFrame: slotStartsFrame,
            startsKeyframe: slotStartsKeyframe, timestamp: slotTimestamp, arrival: slotArrival
        )
        let oldMask = Int64(slots.count - 1)
        makeEmptySlots(count)
        guard !old.slots.isEmpty else { return }
        for sequence in low...high {
            let from = Int(sequence & oldMask)
            guard old.sequence[from] == sequence, let packet = old.slots[from] else { continue }
            let to = Int(sequence & Int64(count - 1))
            slots[to] = packet
            slotSequence[to] = sequence
            slotDataOffset[to] = old.dataOffset[from]
            slotStartsFrame[to] = old.startsFrame[from]
            slotStartsKeyframe[to] = old.startsKeyframe[from]
            slotTimestamp[to] = old.timestamp[from]
            slotArrival[to] = old.arrival[from]
        }
    }

    /// The complete frame at the head, if any; gives up on a hole whose wait is over, or skips
    /// to a whole keyframe due by `keyframesDueBy`.
    private mutating func advance(now: Int64, keyframesDueBy: Int64?) -> AssembledFrame? {
        while let start = next, start <= highest {
            guard let first = slot(start) else {
                // A hole at the head, with later packets waiting behind it.
                if let keyframesDueBy, skipToWholeKeyframe(from: start, dueBy: keyframesDueBy) { continue }
                guard waitIsOver(from: start, now: now) else { return nil }
                skipHole(from: start)
                continue
            }
            guard slotStartsFrame[first] else {
                if startIsOpen {
                    // The stream's first packet, not a frame's first: the start may have been
                    // overtaken by it. Wait for it; then the stream starts at the next frame.
                    guard waitIsOver(from: start, now: now, wait: startWaitMicroseconds) else { return nil }
                    startIsOpen = false
                    blockedSince = nil
                }
                // The rest of a frame whose start was given up on (or never seen).
                clear(start)
                next = start + 1
                gapPending = true
                continue
            }
            let (end, complete) = frameEnd(from: start)
            if !complete {
                if slot(end) != nil {
                    // A frame cut short by the next one: drop it.
                    for sequence in start..<end { clear(sequence) }
                    next = end
                    startIsOpen = false
                    framesIncomplete += 1
                    gapPending = true
                    continue
                }
                // Waiting for a packet of this frame.
                if let keyframesDueBy, skipToWholeKeyframe(from: start, dueBy: keyframesDueBy) { continue }
                guard end <= highest, waitIsOver(from: start, now: now) else { return nil }
                skipHole(from: start)
                continue
            }
            blockedSince = nil
            let frame = assemble(start...end)
            for sequence in start...end { clear(sequence) }
            next = end + 1
            startIsOpen = false
            return frame
        }
        return nil
    }

    /// Walks the frame whose first packet is at `start` (kept) to its last: the marker's
    /// sequence number and true when every packet to it is here; otherwise where the walk
    /// stopped (a missing packet, or the next frame's start when this one ended without its
    /// marker) and false.
    private func frameEnd(from start: Int64) -> (end: Int64, complete: Bool) {
        let timestamp = slots[slot(start)!]!.header.timestamp
        var end = start
        while let index = slot(end) {
            let packet = slots[index]!
            if end > start && (slotStartsFrame[index] || packet.header.timestamp != timestamp) {
                return (end, false)  // the frame ended without its marker: a new one starts here
            }
            if packet.header.marker { return (end, true) }
            end += 1
        }
        return (end, false)
    }

    /// Whether `start` begins a whole frame: every packet from it to its marker is here.
    private func frameIsWhole(from start: Int64) -> Bool {
        guard let first = slot(start), slotStartsFrame[first] else { return false }
        return frameEnd(from: start).complete
    }

    /// When the newest keyframe, after the missing packet the head waits for, is whole and its
    /// media time is at or before `dueBy`: gives up on everything from `start` up to it at
    /// once, as when a wait is over, so that it is handed out next, following a gap. Not while
    /// the stream's start is still open. Returns whether it skipped.
    private mutating func skipToWholeKeyframe(from start: Int64, dueBy: Int64) -> Bool {
        guard !startIsOpen, let keyframe = newestKeyframeStart, keyframe > start, keyframe <= highest,
            let index = slot(keyframe), microseconds(slotTimestamp[index]) <= dueBy, frameIsWhole(from: keyframe)
        else { return false }
        // The frames dropped: each frame start skipped, and the frame the head belongs to when
        // its start is missing.
        var frames = slot(start).map { slotStartsFrame[$0] } == true ? 0 : 1
        for sequence in start..<keyframe {
            if let index = slot(sequence) {
                if slotStartsFrame[index] { frames += 1 }
                clear(sequence)
            } else {
                packetsLost += 1
            }
        }
        framesIncomplete += Int64(frames)
        next = keyframe
        gapPending = true
        blockedSince = nil
        return true
    }

    /// Whether a missing packet at or after `start` has held later ones back for `wait`
    /// microseconds (by default ``gapWaitMicroseconds``), or half the ring fills behind it: the
    /// clock of the wait starts at the first call.
    private mutating func waitIsOver(from start: Int64, now: Int64, wait: Int64? = nil) -> Bool {
        let since = blockedSince ?? now
        blockedSince = since
        return now - since >= (wait ?? gapWaitMicroseconds) || highest - start >= Int64(Self.window / 2)
    }

    /// Drops everything from `start` up to the next frame start after the first missing packet,
    /// counting the lost packets and the incomplete frame.
    private mutating func skipHole(from start: Int64) {
        var sequence = start
        var sawHole = false
        while sequence <= highest {
            if let index = slot(sequence) {
                if sawHole && slotStartsFrame[index] { break }
                clear(sequence)
            } else {
                sawHole = true
                packetsLost += 1
            }
            sequence += 1
        }
        framesIncomplete += 1
        next = sequence
        gapPending = true
        blockedSince = nil
        startIsOpen = false
    }

    /// Forgets everything buffered and restarts at `sequence`.
    private mutating func giveUp(before sequence: Int64) {
        if let next {
            // Whatever is buffered (nothing, when every frame was handed out) goes.
            var buffered = next
            while buffered <= highest && buffered < next + Int64(Self.window) {
                clear(buffered)
                buffered += 1
            }
            let missing = sequence - max(next, highest + 1)
            packetsLost += max(0, missing)
            if highest >= next || missing > 0 { framesIncomplete += 1 }
        }
        next = sequence
        // A sender that started its sequence again may number a new frame as an old keyframe was.
        newestKeyframeStart = nil
        gapPending = true
        blockedSince = nil
        startIsOpen = false
    }

    private mutating func assemble(_ sequences: ClosedRange<Int64>) -> AssembledFrame {
        var total = 0
        var completed = Int64.min
        for sequence in sequences {
            let index = slot(sequence)!
            total += slots[index]!.payloadByteCount - slotDataOffset[index]
            completed = max(completed, slotArrival[index])
        }
        let firstIndex = slot(sequences.lowerBound)!
        let firstPacket = slots[firstIndex]!
        // A frame's first packet starts it (``advance`` assembles no other), so what was read
        // of that packet as it was stored says whether the frame is a keyframe.
        let isKeyframe = slotStartsKeyframe[firstIndex]
        var width = 0
        var height = 0
        if let format = codec.videoPayloadFormat {
            let start = VideoPayloadStart(
                dataOffset: slotDataOffset[firstIndex], startsFrame: true, startsKeyframe: isKeyframe)
            if let size = firstPacket.withUnsafePayload({ format.pictureSize($0, start) }) { (width, height) = size }
        }
        // Moved out while the fill reads `self`.
        var recycler = ByteRecycler.vacant
        swap(&recycler, &self.recycler)
        defer { swap(&recycler, &self.recycler) }
        let bytes = recycler.bytes(
            count: total,
            concatenating: { append in
                for sequence in sequences {
                    let index = slot(sequence)!
                    slots[index]!.withUnsafePayload {
                        append(UnsafeRawBufferPointer(rebasing: $0[slotDataOffset[index]...]))
                    }
                }
            })
        let frame = EncodedFrame(
            bytes: bytes, codec: codec, isKeyframe: isKeyframe,
            timestampMicroseconds: microseconds(slotTimestamp[firstIndex]), durationMicroseconds: 0,
            width: width, height: height)
        defer { gapPending = false }
        return AssembledFrame(
            frame: frame, followsGap: gapPending, sequenceNumbers: sequences, completedMicroseconds: completed)
    }
}
