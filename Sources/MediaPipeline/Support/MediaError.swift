/// The one error type of MediaPipeline.
///
/// Every failure carries a ``Code`` that programs can match on, a message for people that names
/// the file, field or value at fault, and, where a C codec reported it, the codec's status.
public struct MediaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is. Extensible: new codes may be added in later versions.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case invalidArgument, invalidFormat, truncated, unsupported, codecFailure, io, poolExhausted
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// An argument or call sequence that the API does not accept.
        public static let invalidArgument = Code(.invalidArgument)
        /// Input data that breaks its format's rules (bad magic, bad header field, bad checksum).
        public static let invalidFormat = Code(.invalidFormat)
        /// Input that ends before a structure it started is complete.
        public static let truncated = Code(.truncated)
        /// Valid input that this library does not handle (a chained Ogg file, a 4:2:2 Y4M…).
        public static let unsupported = Code(.unsupported)
        /// A codec library reported an error; ``MediaError/codecStatus`` holds its status.
        public static let codecFailure = Code(.codecFailure)
        /// The operating system refused a file operation.
        public static let io = Code(.io)
        /// A bounded pool had no free buffer.
        public static let poolExhausted = Code(.poolExhausted)

        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// A human-readable sentence naming the field or value at fault (without the file name).
    public var message: String
    /// The file the failure concerns, if any.
    public var file: String?
    /// The C library's status code, for ``Code/codecFailure``.
    public var codecStatus: Int32?

    /// Creates an error.
    public init(_ code: Code, _ message: String, file: String? = nil, codecStatus: Int32? = nil) {
        self.code = code
        self.message = message
        self.file = file
        self.codecStatus = codecStatus
    }

    /// One line: `file: message`, or the message alone.
    public var description: String {
        if let file { return "\(file): \(message)" }
        return message
    }

    /// The same error, attributed to `file` unless it already names one.
    func attributed(to file: String) -> MediaError {
        var copy = self
        if copy.file == nil { copy.file = file }
        return copy
    }
}

extension MediaError {
    static func invalidArgument(_ message: String) -> MediaError { MediaError(.invalidArgument, message) }
    static func invalidFormat(_ message: String, file: String? = nil) -> MediaError {
        MediaError(.invalidFormat, message, file: file)
    }
    static func unsupported(_ message: String, file: String? = nil) -> MediaError {
        MediaError(.unsupported, message, file: file)
    }
}

extension Double {
    /// This value, read from a file or a packet, as an integer of type `T` within `range`
    /// (rounded to the nearest): a typed error naming `what` when it is NaN, infinite or out of
    /// range, where a plain conversion would stop the process.
    func checkedInteger<T: FixedWidthInteger>(
        _ what: @autoclosure () -> String, in range: ClosedRange<T> = T.min...T.max
    ) throws -> T {
        guard isFinite, let value = T(exactly: rounded()), range.contains(value) else {
            throw MediaError.invalidFormat(
                "\(what()) \(self) is not a number in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }
}
