import CNetShim
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One stream's sockets and the fixed facts of its routing: how the peer's payload types map to
/// the engine's and back, and where this side's packets go. Immutable once bound.
struct RTPPeerRoute {
    let kind: MediaKind
    let rtp: UDPSocket
    /// The RTCP socket, nil with rtcp-mux.
    let rtcp: UDPSocket?
    let rtcpMux: Bool
    /// The engine's payload type for each of the peer's (``none``: not this stream's).
    let wireToEngine: [UInt8]
    /// The peer's payload type for each of the engine's.
    let engineToWire: [UInt8]
    /// For each of the peer's retransmission payload types (RFC 4588), the payload type it
    /// resends (``none``: not one).
    let retransmitted: [UInt8]
    /// Where this side's RTP and RTCP go, when the stream says.
    let remoteRTP: UDPPeer?, remoteRTCP: UDPPeer?
    /// The peer's SSRC, when its description names it.
    let configuredSSRC: UInt32?
    let receives: Bool

    static let none: UInt8 = 0xFF

    init(_ stream: RTPPeerStream) throws {
        kind = stream.kind
        rtp = try UDPSocket(address: stream.localAddress, port: stream.localPort)
        rtcpMux = stream.rtcpMux
        rtcp = stream.rtcpMux ? nil : try UDPSocket(address: stream.localAddress, port: stream.localRTCPPort ?? 0)
        var incoming = [UInt8](repeating: Self.none, count: 128)
        for format in stream.receiveFormats where (0..<128).contains(format.payloadType) {
            if let codec = format.codec {
                incoming[format.payloadType] = RTPPayloadType.of(codec)
            } else if stream.kind == .audio && format.isRedundantAudio {
                incoming[format.payloadType] = RTPPayloadType.red
            }
        }
        wireToEngine = incoming
        var resent = [UInt8](repeating: Self.none, count: 128)
        for format in stream.receiveFormats where (0..<128).contains(format.payloadType) {
            if let original = format.retransmittedPayloadType, incoming[original] != Self.none {
                resent[format.payloadType] = UInt8(original)
            }
        }
        retransmitted = resent
        var outgoing = (0..<128).map { UInt8($0) }
        for format in stream.sendFormats {
            guard let codec = format.codec, (0..<128).contains(format.payloadType) else { continue }
            outgoing[Int(RTPPayloadType.of(codec))] = UInt8(format.payloadType)
        }
        engineToWire = outgoing
        remoteRTP = try stream.remoteHost.flatMap { host in
            try stream.remotePort.map { try UDPPeer(host: host, port: $0) }
        }
        let rtcpPort =
            stream.remotePort.map { stream.rtcpMux ? $0 : stream.remoteRTCPPort ?? $0 + 1 } ?? stream.remoteRTCPPort
        remoteRTCP = try stream.remoteHost.flatMap { host in try rtcpPort.map { try UDPPeer(host: host, port: $0) } }
        configuredSSRC = stream.remoteSSRC
        receives = stream.receives
    }
}

/// The state the receive thread and the senders share, under one lock.
struct RTPPeerShared {
    var endpoint: TransportEndpoint?
    var channelId: String?
    var localUid: UInt32 = 0
    /// Audio, video: whether the engine unsubscribed the peer's stream of that kind.
    var unsubscribed = [false, false]
    /// Per route: what crossed it, where the peer's RTP and RTCP come from, and the SSRC of
    /// this side's packets (for the goodbye).
    var statistics: [RTPPeerStreamStatistics]
    var learnedRTP: [UDPPeer?]
    var learnedRTCP: [UDPPeer?]
    var sentSSRC: [UInt32?]
    /// The last RTP packet sent on each route (shared, not copied), for a tail-loss probe.
    var lastSent: [RTPPacket?]
    /// The peer's RTP packets received, and this side's sent, over every route.
    var packetsReceived: Int64 = 0, packetsSent: Int64 = 0
    /// This side's video packets waiting for their turn to go (nil: not paced).
    var pacer: RTPPacer?
    /// Whether the peer's leaving (a goodbye on every stream) was told to the engine.
    var offlineAnnounced = false
}

/// The receive thread of an ``RTPPeerTransport`` and its sending. The thread owns the sockets'
/// receive side (their slabs) and ``ReceiveState``; senders touch only the descriptors and
/// ``shared``.
final class RTPPeerWorker: @unchecked Sendable {
    let routes: [RTPPeerRoute]
    let shared: LockedValue<RTPPeerShared>
    private let stopping = Atomic<Bool>(false)
    /// The thread, while it runs (guarded by ``threadLock``).
    private var thread: pthread_t?
    private let threadLock = Lock()
    private let clock = WallClock()
    /// Wakes the thread when the pacer queues a packet (an eventfd; -1 without pacing).
    private let wakeup: Int32

    init(routes: [RTPPeerRoute], pacingBitsPerSecond: Int?) {
        self.routes = routes
        wakeup = pacingBitsPerSecond == nil ? -1 : cnet_event_open()
        var statistics: [RTPPeerStreamStatistics] = []
        for route in routes {
            var s = RTPPeerStreamStatistics(kind: route.kind)
            s.localPort = route.rtp.port
            s.localRTCPPort = route.rtcp?.port ?? route.rtp.port
            s.remoteSSRC = route.configuredSSRC
            statistics.append(s)
        }
        shared = LockedValue(
            RTPPeerShared(
                statistics: statistics, learnedRTP: routes.map { _ in nil }, learnedRTCP: routes.map { _ in nil },
                sentSSRC: routes.map { _ in nil }, lastSent: routes.map { _ in nil },
                pacer: wakeup >= 0 ? pacingBitsPerSecond.map(RTPPacer.init(bitsPerSecond:)) : nil))
    }

    deinit { if wakeup >= 0 { cnet_close(wakeup) } }

    var statistics: [RTPPeerStreamStatistics] { shared.withLock { $0.statistics } }

    /// Starts the receive thread, once (later calls do nothing).
    func start() {
        threadLock.withLock {
            guard thread == nil, !stopped else { return }
            var handle = pthread_t()
            let context = Unmanaged.passRetained(self).toOpaque()
            let status = pthread_create(
                &handle, nil,
                { context in
                    let worker = Unmanaged<RTPPeerWorker>.fromOpaque(context!).takeRetainedValue()
                    worker.receiveLoop()
                    return nil
                }, context)
            if status == 0 {
                thread = handle
            } else {
                Unmanaged<RTPPeerWorker>.fromOpaque(context).release()
            }
        }
    }

    /// Stops the receive thread and waits for it.
    func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        let running: pthread_t? = threadLock.withLock {
            defer { thread = nil }
            return thread
        }
        if let running, pthread_equal(running, pthread_self()) == 0 { pthread_join(running, nil) }
    }

    private var stopped: Bool { stopping.load(ordering: .relaxed) }

    // MARK: Sending

    /// Sends an engine's RTP packet to the peer on the stream of its kind, with the peer's
    /// payload type. Video goes through the pacer, when there is one, unless `paced` is false
    /// (a retransmission, which is late already).
    func send(_ packet: RTPPacket, channelId: String, paced: Bool = true) {
        guard !stopped, let kind = RTPPayloadType.codec(packet.header.payloadType)?.kind,
            let index = routes.firstIndex(where: { $0.kind == kind && $0.remoteRTP != nil })
        else { return }
        let now = clock.nowMicroseconds
        let verdict = shared.withLock { shared -> (send: Bool, wake: Bool) in
            guard shared.channelId == channelId else { return (false, false) }
            shared.sentSSRC[index] = packet.header.ssrc
            // The latest in sequence order (the first one sent when none is kept yet, whatever
            // its number: against 0, a stream starting at 0x8000 or above kept none).
            if shared.lastSent[index].map({ packet.header.sequenceNumber &- $0.header.sequenceNumber < 0x8000 }) ?? true
            {
                shared.lastSent[index] = packet
            }
            shared.statistics[index].packetsSent += 1
            shared.packetsSent += 1
            shared.statistics[index].bytesSent += Int64(packet.bytes.count)
            guard kind == .video, paced, shared.pacer != nil else { return (true, false) }
            let wasEmpty = shared.pacer!.count == 0
            let goesNow = shared.pacer!.admit(packet, route: index, now: now)
            return (goesNow, !goesNow && wasEmpty)
        }
        if verdict.wake { cnet_event_signal(wakeup) }
        if verdict.send { transmit(packet, route: index) }
    }

    /// Puts `packet` on the wire to the peer, with the peer's payload type.
    private func transmit(_ packet: RTPPacket, route index: Int) {
        let route = routes[index]
        guard let destination = route.remoteRTP else { return }
        let enginePayloadType = packet.header.payloadType
        let wire = route.engineToWire[Int(enginePayloadType & 0x7F)]
        let sent = packet.bytes.withUnsafeBytes { bytes in
            if wire == enginePayloadType { return route.rtp.send(bytes, to: destination) }
            return withUnsafeTemporaryAllocation(byteCount: bytes.count, alignment: 1) { copy in
                copy.copyMemory(from: bytes)
                copy[1] = copy[1] & 0x80 | wire
                return route.rtp.send(UnsafeRawBufferPointer(copy), to: destination)
            }
        }
        if !sent { shared.withLock { $0.statistics[index].sendFailures += 1 } }
    }

    /// Sends an engine's RTCP to the peer: feedback (NACK, PLI, FIR) on the stream whose SSRC
    /// it names, a sender report on the stream it reports, anything else on every stream. A
    /// message that does not start with a report gets an empty receiver report in front, so
    /// that it is a compound packet (RFC 3550 §6.1) for peers that insist.
    func sendRTCP(_ bytes: [UInt8], channelId: String) {
        guard !stopped, bytes.count >= 8 else { return }
        let type = bytes[1]
        let named = UInt32(bigEndian: bytes, at: type == 205 || type == 206 ? 8 : 4)
        // The streams it goes out on and their destinations, on the stack (nothing allocated).
        withUnsafeTemporaryAllocation(of: (route: Int, destination: UDPPeer).self, capacity: routes.count) {
            targets in
            let count = shared.withLock { shared -> Int in
                guard shared.channelId == channelId else { return 0 }
                func names(_ index: Int) -> Bool {
                    switch type {
                    case 205, 206: shared.statistics[index].remoteSSRC == named
                    case 200: shared.sentSSRC[index] == named
                    default: true
                    }
                }
                let anyNamed = routes.indices.contains(where: names)
                var count = 0
                for index in routes.indices where !anyNamed || names(index) {
                    guard let destination = rtcpDestination(index, shared) else { continue }
                    shared.statistics[index].rtcpSent += 1
                    targets.initializeElement(at: count, to: (index, destination))
                    count += 1
                }
                return count
            }
            defer { _ = targets.baseAddress!.deinitialize(count: count) }
            send(bytes, type: type, to: UnsafeBufferPointer(rebasing: targets[0..<count]))
        }
    }

    /// Sends the RTCP message `bytes` (of packet type `type`) on each target's stream, with an
    /// empty receiver report in front when it does not start with a report.
    private func send(
        _ bytes: [UInt8], type: UInt8, to targets: UnsafeBufferPointer<(route: Int, destination: UDPPeer)>
    ) {
        guard !targets.isEmpty else { return }
        bytes.withUnsafeBytes { message in
            let isCompound = type == 200 || type == 201
            withUnsafeTemporaryAllocation(byteCount: message.count + 8, alignment: 4) { buffer in
                var length = message.count
                if isCompound {
                    UnsafeMutableRawBufferPointer(rebasing: buffer[0..<length]).copyMemory(from: message)
                } else {
                    // An empty receiver report from the message's sender.
                    buffer[0] = 0x80
                    buffer[1] = 201
                    buffer[2] = 0
                    buffer[3] = 1
                    UnsafeMutableRawBufferPointer(rebasing: buffer[4..<8]).copyMemory(
                        from: UnsafeRawBufferPointer(rebasing: message[4..<8]))
                    UnsafeMutableRawBufferPointer(rebasing: buffer[8..<8 + length]).copyMemory(from: message)
                    length += 8
                }
                for (index, destination) in targets {
                    let socket = routes[index].rtcp ?? routes[index].rtp
                    if !socket.send(UnsafeRawBufferPointer(rebasing: buffer[0..<length]), to: destination) {
                        shared.withLock { $0.statistics[index].sendFailures += 1 }
                    }
                }
            }
        }
    }

    /// Where RTCP for route `index` goes: the stream's RTCP port at the peer, else where the
    /// peer's RTCP comes from, else beside where its RTP comes from.
    private func rtcpDestination(_ index: Int, _ shared: RTPPeerShared) -> UDPPeer? {
        if let configured = routes[index].remoteRTCP { return configured }
        if let learned = shared.learnedRTCP[index] { return learned }
        guard let rtp = shared.learnedRTP[index] else { return nil }
        return routes[index].rtcpMux ? rtp : rtp.with(port: rtp.port + 1)
    }

    /// Sends the last RTP packet of each video stream again: a receiver that lost the end of
    /// the stream has no later packet to find the gap by, and now has one to ask for the rest
    /// (NACK). Audio is not asked for again, and some receivers keep a repeated audio packet
    /// (ffmpeg records it twice), so it is not repeated.
    func sendTailProbe(channelId: String) {
        let last = shared.withLock { $0.channelId == channelId ? $0.lastSent : [] }
        for (index, packet) in last.enumerated() where routes[index].kind == .video {
            if let packet { send(packet, channelId: channelId) }
        }
    }

    /// Says goodbye (RTCP BYE, after an empty receiver report) for every stream this side sent,
    /// after the packets the pacer still holds.
    func sendGoodbye() {
        var held: [(route: Int, packet: RTPPacket)] = []
        shared.withLock { $0.pacer?.takeAll(into: &held) }
        transmit(held, UDPSendBatch())
        let goodbyes: [(Int, UDPPeer, [UInt8])] = shared.withLock { shared in
            routes.indices.compactMap { index in
                guard let ssrc = shared.sentSSRC[index], let destination = rtcpDestination(index, shared) else {
                    return nil
                }
                shared.statistics[index].rtcpSent += 1
                let message = RTCPCompound.serialize([.receiverReport(ssrc: ssrc, reports: []), .bye(ssrcs: [ssrc])])
                return (index, destination, message)
            }
        }
        for (index, destination, message) in goodbyes {
            message.withUnsafeBytes { _ = (routes[index].rtcp ?? routes[index].rtp).send($0, to: destination) }
        }
    }

    // MARK: Receiving

    /// What only the receive thread touches.
    private struct ReceiveState {
        /// Recycled storage for the packets handed to the engine: 2,048 slots, so a packet the
        /// engine still holds (a frame waiting for a retransmission) is left alone.
        var packets = ByteRecycler(slotCount: 2048, capacity: 1300)
        var feedback = ByteRecycler(slotCount: 64, capacity: 1500)
        var ssrc: [UInt32?]
        var lastPacketAt: [Int64]
        /// Changes since they were last published to ``shared``.
        var delta: [RTPPeerStreamStatistics]
        var learnedRTP: [UDPPeer?]
        var learnedRTCP: [UDPPeer?]
        var bye: [Bool]
        /// When the last goodbye came (the peer is announced gone a grace period after it).
        var lastByeAt: Int64 = 0
        var changed = false
    }

    /// How long after the peer's last goodbye it is announced gone.
    static let goodbyeGraceMicroseconds: Int64 = 1_000_000

    private func receiveLoop() {
        var state = ReceiveState(
            ssrc: routes.map(\.configuredSSRC), lastPacketAt: routes.map { _ in 0 },
            delta: routes.map { RTPPeerStreamStatistics(kind: $0.kind) }, learnedRTP: routes.map { _ in nil },
            learnedRTCP: routes.map { _ in nil }, bye: routes.map { _ in false })
        var sockets: [(route: Int, socket: UDPSocket, isRTCP: Bool)] = []
        for (index, route) in routes.enumerated() {
            sockets.append((index, route.rtp, false))
            if let rtcp = route.rtcp { sockets.append((index, rtcp, true)) }
        }
        var descriptors = sockets.map(\.socket.fileDescriptor)
        if wakeup >= 0 { descriptors.append(wakeup) }
        var readable = [Int32](repeating: 0, count: descriptors.count)
        var due: [(route: Int, packet: RTPPacket)] = []
        due.reserveCapacity(RTPPacer.capacity)
        let batch = UDPSendBatch()
        while !stopped {
            // Up to 20 ms, or until the pacer lets its next packet go.
            let pacingWait = shared.withLock { $0.pacer?.wait(now: clock.nowMicroseconds) }
            let timeout = pacingWait.map { Int32(min(20, ($0 + 999) / 1000)) } ?? 20
            let ready = cnet_wait(&descriptors, Int32(descriptors.count), timeout, &readable)
            if ready < 0 { usleep(20_000) }
            if wakeup >= 0 {
                if readable[sockets.count] != 0 { cnet_event_clear(wakeup) }
                sendPaced(&due, batch)
            }
            guard ready > 0 || state.bye.contains(true) else { continue }
            let (endpoint, channelId, unsubscribed) = shared.withLock { ($0.endpoint, $0.channelId, $0.unsubscribed) }
            for (k, entry) in sockets.enumerated() where ready > 0 && readable[k] != 0 {
                let oversizedBefore = entry.socket.oversized
                _ = try? entry.socket.receiveWaiting { datagram, sender in
                    handle(
                        datagram, from: sender, route: entry.route, onRTCPSocket: entry.isRTCP, &state,
                        endpoint: unsubscribed[routes[entry.route].kind == .audio ? 0 : 1] ? nil : endpoint,
                        rtcpEndpoint: endpoint, channelId: channelId)
                }
                if entry.socket.oversized != oversizedBefore {
                    state.delta[entry.route].oversized += Int64(entry.socket.oversized - oversizedBefore)
                    state.changed = true
                }
            }
            if state.changed || state.bye.contains(true) { publish(&state, endpoint: endpoint, channelId: channelId) }
        }
    }

    /// Sends the packets the pacer lets go now (`due` and `batch` are scratch storage, kept
    /// between calls).
    private func sendPaced(_ due: inout [(route: Int, packet: RTPPacket)], _ batch: UDPSendBatch) {
        let now = clock.nowMicroseconds
        shared.withLock { $0.pacer?.takeDue(now: now, into: &due) }
        transmit(due, batch)
        due.removeAll(keepingCapacity: true)
    }

    /// Puts `packets` on the wire, each run of one stream's packets in one `sendmmsg` (up to
    /// ``UDPSendBatch/capacity`` a call).
    private func transmit(_ packets: [(route: Int, packet: RTPPacket)], _ batch: UDPSendBatch) {
        var start = 0
        while start < packets.count {
            let route = packets[start].route
            guard packets[start].packet.bytes.count <= UDPSendBatch.slotBytes else {
                transmit(packets[start].packet, route: route)  // larger than a slot: alone
                start += 1
                continue
            }
            var end = start + 1
            while end < packets.count, packets[end].route == route, end - start < UDPSendBatch.capacity,
                packets[end].packet.bytes.count <= UDPSendBatch.slotBytes
            {
                end += 1
            }
            let sent =
                routes[route].remoteRTP.map { destination in
                    pin(packets, start, start..<end, routes[route], destination, batch)
                } ?? 0
            if sent < end - start {
                shared.withLock { $0.statistics[route].sendFailures += Int64(end - start - sent) }
            }
            start = end
        }
    }

    /// Fills `batch` from `packets[next]` on (pinning each packet's bytes in a nested call, or
    /// copying it into its slot when the peer's payload type differs; none is larger than a
    /// slot), then sends
    /// `packets[range]` to `destination` at once. Returns how many the system took.
    private func pin(
        _ packets: [(route: Int, packet: RTPPacket)], _ next: Int, _ range: Range<Int>, _ route: RTPPeerRoute,
        _ destination: UDPPeer, _ batch: UDPSendBatch
    ) -> Int {
        guard next < range.upperBound else {
            return route.rtp.send(
                batch: batch.pointers.baseAddress!, lengths: batch.lengths.baseAddress!, count: range.count,
                to: destination)
        }
        let packet = packets[next].packet
        let index = next - range.lowerBound
        let enginePayloadType = packet.header.payloadType
        let wire = route.engineToWire[Int(enginePayloadType & 0x7F)]
        return packet.bytes.withUnsafeBytes { bytes in
            batch.lengths[index] = Int32(bytes.count)
            if wire == enginePayloadType {
                batch.pointers[index] = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            } else {
                let copy = batch.slot(index, byteCount: bytes.count)
                copy.copyMemory(from: bytes)
                copy[1] = copy[1] & 0x80 | wire
                batch.pointers[index] = UnsafePointer(copy.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            return pin(packets, next + 1, range, route, destination, batch)
        }
    }

    private func handle(
        _ datagram: UnsafeRawBufferPointer, from sender: UDPPeer, route index: Int, onRTCPSocket: Bool,
        _ state: inout ReceiveState, endpoint: TransportEndpoint?, rtcpEndpoint: TransportEndpoint?,
        channelId: String?
    ) {
        state.changed = true
        guard datagram.count >= 8 else {
            state.delta[index].ignored += 1
            return
        }
        // RTCP on its own port, or told apart by its packet type (RFC 5761 §4).
        if onRTCPSocket || (192...223).contains(datagram[1]) {
            handleRTCP(datagram, from: sender, route: index, &state, endpoint: rtcpEndpoint, channelId: channelId)
            return
        }
        let route = routes[index]
        guard route.receives, let header = try? RTPHeader(parsing: datagram) else {
            state.delta[index].ignored += 1
            return
        }
        let original = route.retransmitted[Int(header.payloadType)]
        if original != RTPPeerRoute.none {
            handleRetransmission(
                datagram, header, original: original, from: sender, route: index, &state, endpoint: endpoint,
                channelId: channelId)
            return
        }
        let enginePayloadType = route.wireToEngine[Int(header.payloadType)]
        guard enginePayloadType != RTPPeerRoute.none else {
            state.delta[index].ignored += 1
            return
        }
        let now = clock.nowMicroseconds
        if let current = state.ssrc[index], current != header.ssrc {
            // Another sender: taken only once the current one has been silent for a second.
            guard route.configuredSSRC == nil, now - state.lastPacketAt[index] > 1_000_000 else {
                state.delta[index].ignored += 1
                return
            }
            state.bye[index] = false
        }
        state.ssrc[index] = header.ssrc
        state.lastPacketAt[index] = now
        if state.learnedRTP[index] != sender { state.learnedRTP[index] = sender }
        state.delta[index].packetsReceived += 1
        state.delta[index].bytesReceived += Int64(datagram.count)
        guard let endpoint, let channelId else { return }
        let packet = ReceivedPacketCopy.mapped(
            datagram, header: header, enginePayloadType: enginePayloadType, map: route.wireToEngine,
            into: &state.packets)
        endpoint.transportReceive(
            packet, stream: MediaStreamID(channelId: channelId, uid: RTPPeerTransport.peerUid, kind: route.kind))
    }

    /// A retransmission in its own payload type and SSRC (RFC 4588 §4): its payload starts with
    /// the original sequence number. It becomes the original packet again — the media SSRC the
    /// stream receives, the original sequence number and payload type, the payload after those
    /// two bytes — in the copy made for the engine. Ignored before the media stream's SSRC is
    /// known, and when it carries no payload (a padding-only probe).
    private func handleRetransmission(
        _ datagram: UnsafeRawBufferPointer, _ header: RTPHeader, original: UInt8, from sender: UDPPeer,
        route index: Int, _ state: inout ReceiveState, endpoint: TransportEndpoint?, channelId: String?
    ) {
        guard let ssrc = state.ssrc[index], header.byteCount + 2 < datagram.count - header.paddingByteCount else {
            state.delta[index].ignored += 1
            return
        }
        state.delta[index].packetsReceived += 1
        state.delta[index].retransmissionsReceived += 1
        state.delta[index].bytesReceived += Int64(datagram.count)
        guard let endpoint, let channelId,
            let packet = ReceivedPacketCopy.restored(
                datagram, header: header, enginePayloadType: routes[index].wireToEngine[Int(original)], ssrc: ssrc,
                into: &state.packets)
        else { return }
        endpoint.transportReceive(
            packet,
            stream: MediaStreamID(channelId: channelId, uid: RTPPeerTransport.peerUid, kind: routes[index].kind))
    }

    private func handleRTCP(
        _ datagram: UnsafeRawBufferPointer, from sender: UDPPeer, route index: Int, _ state: inout ReceiveState,
        endpoint: TransportEndpoint?, channelId: String?
    ) {
        // A compound packet whose lengths hold (RFC 3550 §6.4.1); a BYE naming the stream's SSRC.
        var offset = 0
        var bye = false
        while offset + 4 <= datagram.count {
            let first = datagram[offset]
            let words = Int(datagram[offset + 2]) << 8 | Int(datagram[offset + 3])
            let end = offset + (words + 1) * 4
            guard first >> 6 == 2, end <= datagram.count else {
                state.delta[index].ignored += 1
                return
            }
            if datagram[offset + 1] == RTCPPacket.PacketType.bye, let ssrc = state.ssrc[index] {
                let count = Int(first & 0x1F)
                for k in 0..<min(count, words) where UInt32(bigEndian: datagram, at: offset + 4 + 4 * k) == ssrc {
                    bye = true
                }
            }
            offset = end
        }
        guard offset == datagram.count else {
            state.delta[index].ignored += 1
            return
        }
        state.delta[index].rtcpReceived += 1
        if state.learnedRTCP[index] != sender { state.learnedRTCP[index] = sender }
        if bye && !state.bye[index] {
            state.bye[index] = true
            state.lastByeAt = clock.nowMicroseconds
        }
        guard let endpoint, let channelId else { return }
        let bytes = state.feedback.bytes(copying: datagram)
        endpoint.transportReceiveRTCP(bytes, channelId: channelId, from: RTPPeerTransport.peerUid)
    }

    /// Adds what the thread counted to ``shared``, and tells the engine when the peer has said
    /// goodbye on every stream it sends (and when it sends again, from new SSRCs, after that).
    private func publish(_ state: inout ReceiveState, endpoint: TransportEndpoint?, channelId: String?) {
        let change = shared.withLock { shared -> Bool? in
            for index in routes.indices {
                let d = state.delta[index]
                shared.statistics[index].packetsReceived += d.packetsReceived
                shared.packetsReceived += d.packetsReceived
                shared.statistics[index].bytesReceived += d.bytesReceived
                shared.statistics[index].rtcpReceived += d.rtcpReceived
                shared.statistics[index].retransmissionsReceived += d.retransmissionsReceived
                shared.statistics[index].ignored += d.ignored
                shared.statistics[index].oversized += d.oversized
                shared.statistics[index].remoteSSRC = state.ssrc[index]
                shared.statistics[index].byeReceived = state.bye[index]
                shared.learnedRTP[index] = state.learnedRTP[index]
                shared.learnedRTCP[index] = state.learnedRTCP[index]
                state.delta[index] = RTPPeerStreamStatistics(kind: routes[index].kind)
            }
            // Gone once every stream said goodbye and the grace period passed: the packets still
            // in the engine's jitter buffers are played out first.
            let receiving = routes.lazy.filter(\.receives)
            let gone =
                !receiving.isEmpty && routes.indices.allSatisfy { !routes[$0].receives || state.bye[$0] }
                && clock.nowMicroseconds - state.lastByeAt >= Self.goodbyeGraceMicroseconds
            defer { shared.offlineAnnounced = gone }
            return gone == shared.offlineAnnounced ? nil : gone
        }
        state.changed = false
        guard let change, let endpoint, let channelId else { return }
        if change {
            endpoint.transportUserOffline(channelId: channelId, uid: RTPPeerTransport.peerUid, reason: .quit)
        } else {
            var media: PublishedMedia = []
            for route in routes where route.receives { media.insert(route.kind == .audio ? .audio : .video) }
            endpoint.transportUserJoined(channelId: channelId, uid: RTPPeerTransport.peerUid, media: media)
        }
    }
}

extension UInt32 {
    /// The big-endian value at `offset` of `bytes` (0 when it runs past the end).
    fileprivate init<Bytes: RandomAccessCollection<UInt8>>(bigEndian bytes: Bytes, at offset: Int)
    where Bytes.Index == Int {
        guard offset >= 0, offset + 4 <= bytes.count else {
            self = 0
            return
        }
        let base = bytes.startIndex + offset
        self =
            UInt32(bytes[base]) << 24 | UInt32(bytes[base + 1]) << 16 | UInt32(bytes[base + 2]) << 8
            | UInt32(bytes[base + 3])
    }
}
