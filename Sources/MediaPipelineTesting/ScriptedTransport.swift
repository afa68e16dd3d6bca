import Foundation
import MediaPipeline

/// A transport for tests that scripts what a network does: join answers held until released,
/// or refused; RTP packets dropped, held and released in any order, or duplicated. Everything
/// else goes to the ``LocalHub`` underneath. It carries one video layer: a publisher's low
/// layer is not sent.
public final class ScriptedTransport: MediaTransport, @unchecked Sendable {
    /// What happens to a join request.
    public enum JoinScript: Sendable {
        /// The hub answers at once.
        case answerAtOnce
        /// The answer waits for ``releaseJoins()``.
        case hold
        /// The join is refused with this error.
        case refuse(EngineError)
    }

    /// What happens to one RTP packet.
    public enum PacketFate: Sendable {
        /// Forwarded at once.
        case deliver
        /// Lost.
        case drop
        /// Kept until ``releasePackets(reversed:)``.
        case hold
        /// Forwarded twice.
        case duplicate
    }

    /// The hub that carries everything the script lets through.
    public let hub: LocalHub
    // Guarded by `lock`.
    private let lock = NSLock()
    private var joinScript = JoinScript.answerAtOnce
    private var packetScript: @Sendable (RTPPacket, MediaStreamID) -> PacketFate = { _, _ in .deliver }
    private var heldJoins: [() -> Void] = []
    private var heldPackets: [(RTPPacket, MediaStreamID)] = []
    private var rtcpObserver: (@Sendable ([UInt8], String, UInt32) -> Void)?

    /// A scripted transport over `hub`.
    public init(hub: LocalHub) { self.hub = hub }

    /// Sets what happens to the joins asked from now on.
    public func scriptJoins(_ script: JoinScript) { lock.withLock { joinScript = script } }

    /// Sets the fate of each RTP packet sent from now on: called with the packet and its stream.
    public func scriptPackets(_ fate: @escaping @Sendable (RTPPacket, MediaStreamID) -> PacketFate) {
        lock.withLock { packetScript = fate }
    }

    /// Shows every RTCP message sent from now on to `observer` (its bytes, channel and sender)
    /// before it goes on to the hub.
    public func observeRTCP(_ observer: @escaping @Sendable ([UInt8], String, UInt32) -> Void) {
        lock.withLock { rtcpObserver = observer }
    }

    /// Joins held so far.
    public var heldJoinCount: Int { lock.withLock { heldJoins.count } }
    /// Packets held so far.
    public var heldPacketCount: Int { lock.withLock { heldPackets.count } }

    /// Lets the held joins through to the hub, in the order they were asked.
    public func releaseJoins() {
        let joins = lock.withLock {
            defer { heldJoins.removeAll() }
            return heldJoins
        }
        for join in joins { join() }
    }

    /// Delivers the held packets, in the order they were sent or the other way round.
    public func releasePackets(reversed: Bool = false) {
        let packets = lock.withLock {
            defer { heldPackets.removeAll() }
            return heldPackets
        }
        for (packet, stream) in reversed ? packets.reversed() : packets { hub.send(packet, stream: stream) }
    }

    // MARK: - MediaTransport

    public func join(
        channelId: String, uid: UInt32, role: ClientRole, media: PublishedMedia, receivesMedia: Bool,
        endpoint: TransportEndpoint, answer: @escaping @Sendable (Result<UInt32, EngineError>) -> Void
    ) {
        let hub = hub
        let join = {
            hub.join(
                channelId: channelId, uid: uid, role: role, media: media, receivesMedia: receivesMedia,
                endpoint: endpoint, answer: answer)
        }
        let script: JoinScript = lock.withLock {
            if case .hold = joinScript { heldJoins.append(join) }
            return joinScript
        }
        switch script {
        case .answerAtOnce: join()
        case .hold: break
        case .refuse(let error): answer(.failure(error))
        }
    }

    public func leave(channelId: String, uid: UInt32) { hub.leave(channelId: channelId, uid: uid) }

    public func setRole(channelId: String, uid: UInt32, role: ClientRole) {
        hub.setRole(channelId: channelId, uid: uid, role: role)
    }

    public func setMedia(channelId: String, uid: UInt32, media: PublishedMedia) {
        hub.setMedia(channelId: channelId, uid: uid, media: media)
    }

    public func send(_ packet: RTPPacket, stream: MediaStreamID) {
        guard stream.layer == .high else { return }
        let fate: PacketFate = lock.withLock {
            let fate = packetScript(packet, stream)
            if case .hold = fate { heldPackets.append((packet, stream)) }
            return fate
        }
        switch fate {
        case .deliver: hub.send(packet, stream: stream)
        case .drop, .hold: break
        case .duplicate:
            hub.send(packet, stream: stream)
            hub.send(packet, stream: stream)
        }
    }

    public func sendRTCP(_ bytes: [UInt8], channelId: String, from uid: UInt32, to recipient: UInt32) {
        lock.withLock { rtcpObserver }?(bytes, channelId, uid)
        hub.sendRTCP(bytes, channelId: channelId, from: uid, to: recipient)
    }

    public func resend(_ packet: RTPPacket, stream: MediaStreamID, to recipient: UInt32) {
        guard stream.layer == .high else { return }
        hub.resend(packet, stream: stream, to: recipient)
    }

    public func setSubscribed(_ subscribed: Bool, to stream: MediaStreamID, subscriber: UInt32) {
        hub.setSubscribed(subscribed, to: stream, subscriber: subscriber)
    }
}
