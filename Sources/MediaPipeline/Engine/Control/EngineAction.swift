/// What the control plane decided and someone must now do outside the engine's lock: tell the
/// transport, or tell the app. The control plane (``ControlPlane``) queues actions in the order
/// it decided them; the engine carries them out in that order, one thread at a time
/// (``MediaEngine/flushActions()``), so two threads' calls can never reach the transport, or the
/// app, the other way round.
enum EngineAction: Sendable, Equatable {
    /// A transport signalling call.
    case transport(TransportCommand)
    /// An event for a channel's handler.
    case event(ChannelRef, ChannelEvent)
    /// A warning for the log that no event carries (the cause of a failure).
    case warning(String, channelId: String)
}

/// A signalling call to the transport.
enum TransportCommand: Sendable, Equatable {
    case leave(channelId: String, uid: UInt32)
    case setRole(channelId: String, uid: UInt32, role: ClientRole)
    case setMedia(channelId: String, uid: UInt32, media: PublishedMedia)
    case setSubscribed(Bool, to: MediaStreamID, subscriber: UInt32)
    case setRemoteVideoStreamType(VideoStreamType, channelId: String, subscriber: UInt32, publisher: UInt32?)

    func run(on transport: MediaTransport) {
        switch self {
        case .leave(let channelId, let uid): transport.leave(channelId: channelId, uid: uid)
        case .setRole(let channelId, let uid, let role): transport.setRole(channelId: channelId, uid: uid, role: role)
        case .setMedia(let channelId, let uid, let media):
            transport.setMedia(channelId: channelId, uid: uid, media: media)
        case .setSubscribed(let subscribed, let stream, let subscriber):
            transport.setSubscribed(subscribed, to: stream, subscriber: subscriber)
        case .setRemoteVideoStreamType(let type, let channelId, let subscriber, let publisher):
            transport.setRemoteVideoStreamType(
                type, channelId: channelId, subscriber: subscriber, publisher: publisher)
        }
    }
}
