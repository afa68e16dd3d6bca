/// Which of a publisher's video streams a subscriber receives (Agora's `REMOTE_VIDEO_STREAM_TYPE`):
/// the high stream as captured, or the low one a publisher with dual stream mode also sends
/// (``MediaEngine/enableDualStreamMode(_:low:)``).
public enum VideoStreamType: Int, Sendable, CaseIterable, CustomStringConvertible {
    /// The publisher's stream as configured (Agora's `REMOTE_VIDEO_STREAM_HIGH`, 0).
    case high = 0
    /// The publisher's smaller, slower stream (Agora's `REMOTE_VIDEO_STREAM_LOW`, 1).
    case low = 1

    public var description: String { self == .high ? "high" : "low" }
}

/// One stream of published media: `uid`'s audio, or one layer of its video, in `channelId`.
///
/// The name a transport carries each packet under (``MediaTransport/send(_:stream:)``,
/// ``TransportEndpoint/transportReceive(_:stream:)``), a subscription names
/// (``MediaTransport/setSubscribed(_:to:subscriber:)``) and statistics are kept for
/// (``RemoteAudioStats/stream``, ``RemoteVideoStats/stream``). The same uid in two channels
/// publishes two sets of streams. A publisher sends each stream as one SSRC (RFC 3550); the two
/// layers of its video share one RTP time base. A forwarder that gives a subscriber one layer at
/// a time rewrites them into one SSRC, and names each packet with the layer it came from.
/// Immutable: audio's layer is always ``VideoStreamType/high``.
public struct MediaStreamID: Hashable, Sendable, CustomStringConvertible {
    /// The channel the stream is published in.
    public let channelId: String
    /// The publisher.
    public let uid: UInt32
    /// Audio or video.
    public let kind: MediaKind
    /// For video, the layer (``VideoStreamType/high`` for a publisher without dual stream);
    /// always ``VideoStreamType/high`` for audio.
    public let layer: VideoStreamType

    /// The stream of `uid`'s `kind` in `channelId`, of `layer` (video only; audio has one).
    public init(channelId: String, uid: UInt32, kind: MediaKind, layer: VideoStreamType = .high) {
        self.channelId = channelId
        self.uid = uid
        self.kind = kind
        self.layer = kind == .audio ? .high : layer
    }

    /// `uid`'s audio in `channelId`.
    public static func audio(channelId: String, uid: UInt32) -> MediaStreamID {
        MediaStreamID(channelId: channelId, uid: uid, kind: .audio)
    }

    /// `layer` of `uid`'s video in `channelId`.
    public static func video(channelId: String, uid: UInt32, layer: VideoStreamType = .high) -> MediaStreamID {
        MediaStreamID(channelId: channelId, uid: uid, kind: .video, layer: layer)
    }

    /// The publisher in its channel, whatever the stream.
    public var user: StreamKey { StreamKey(channelId: channelId, uid: uid) }

    /// The same publisher's stream of another layer.
    public func withLayer(_ layer: VideoStreamType) -> MediaStreamID {
        MediaStreamID(channelId: channelId, uid: uid, kind: kind, layer: layer)
    }

    /// `channel/uid/audio`, `channel/uid/video` or `channel/uid/video-low`.
    public var description: String {
        let name = kind == .audio ? "audio" : layer == .high ? "video" : "video-low"
        return "\(channelId)/\(uid)/\(name)"
    }
}
