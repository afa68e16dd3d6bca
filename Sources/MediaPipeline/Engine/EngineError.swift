/// A refused engine call, with the Agora RTC SDK's error code (as the SDK returns it: negative).
public struct EngineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Agora's error codes for the refusals the engine makes.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// `ERR_INVALID_ARGUMENT` (-2): an argument is out of range.
        public static let invalidArgument = Code(rawValue: -2)
        /// `ERR_NOT_READY` (-3): the object is not in a state for this call (destroyed, not joined).
        public static let notReady = Code(rawValue: -3)
        /// `ERR_REFUSED` (-5): the call is refused: publishing in a second channel, an audience
        /// member publishing.
        public static let refused = Code(rawValue: -5)
        /// `ERR_JOIN_CHANNEL_REJECTED` (-17): already joined (or joining) this channel.
        public static let joinChannelRejected = Code(rawValue: -17)
        /// `ERR_LEAVE_CHANNEL_REJECTED` (-18): not in the channel.
        public static let leaveChannelRejected = Code(rawValue: -18)
        /// `ERR_INVALID_CHANNEL_NAME` (-102): the channel id breaks the naming rules.
        public static let invalidChannelName = Code(rawValue: -102)
        /// `ERR_INVALID_TOKEN` (-110): the server refused the join's token (a Janus room's pin
        /// or the server's API token).
        public static let invalidToken = Code(rawValue: -110)

        public var description: String {
            switch self {
            case .invalidArgument: "ERR_INVALID_ARGUMENT (-2)"
            case .notReady: "ERR_NOT_READY (-3)"
            case .refused: "ERR_REFUSED (-5)"
            case .joinChannelRejected: "ERR_JOIN_CHANNEL_REJECTED (-17)"
            case .leaveChannelRejected: "ERR_LEAVE_CHANNEL_REJECTED (-18)"
            case .invalidChannelName: "ERR_INVALID_CHANNEL_NAME (-102)"
            case .invalidToken: "ERR_INVALID_TOKEN (-110)"
            default: "error \(rawValue)"
            }
        }
    }

    /// The Agora code.
    public var code: Code
    /// What was refused and why, naming the channel and value.
    public var message: String

    /// An error with `code` and `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) [\(code)]" }
}

/// Channel id rules (Agora's): 1 to 64 bytes of ASCII letters, digits, space and
/// `!#$%&()+-:;<=.>?@[]^_{}|~,`.
public enum ChannelID {
    /// The longest id, in bytes.
    public static let maximumLength = 64
    private static let punctuation = Set("!#$%&()+-:;<=.>?@[]^_{}|~, ".utf8)

    /// Throws ``EngineError/Code/invalidChannelName`` naming the rule `id` breaks.
    public static func validate(_ id: String) throws {
        let bytes = Array(id.utf8)
        guard !bytes.isEmpty else { throw EngineError(.invalidChannelName, "channel id is empty") }
        guard bytes.count <= maximumLength else {
            throw EngineError(.invalidChannelName, "channel id '\(id.prefix(16))…' is \(bytes.count) bytes; at most 64")
        }
        for byte in bytes {
            let allowed =
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || punctuation.contains(byte)
            guard allowed else {
                throw EngineError(
                    .invalidChannelName,
                    "channel id '\(id)' contains '\(String(decoding: [byte], as: UTF8.self))', outside letters, digits, space and !#$%&()+-:;<=.>?@[]^_{}|~,"
                )
            }
        }
    }
}
