import Foundation

/// A JSON value, as Janus sends and receives them (the plugin data of events, request bodies).
enum JSONValue: Sendable, Hashable, Codable, CustomStringConvertible {
    case null
    case bool(Bool)
    /// An integer (Janus's session, handle and numeric room ids fit in 53 bits).
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// Parses JSON text.
    static func parse(_ data: Data) throws -> JSONValue { try JSONDecoder().decode(JSONValue.self, from: data) }

    /// The JSON text (keys sorted, so equal values encode alike).
    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// The member `key` of an object; nil for other values or a missing key.
    subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The text of a string.
    var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// An integer (a double with no fraction counts).
    var intValue: Int64? {
        switch self {
        case .int(let value): value
        case .double(let value) where value == value.rounded() && abs(value) < 9.0e15: Int64(value)
        default: nil
        }
    }

    /// A Boolean.
    var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The elements of an array.
    var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    var description: String { (try? encoded()).map { String(decoding: $0, as: UTF8.self) } ?? "?" }
}

/// A VideoRoom room or participant id: a number, or a string when the plugin runs with
/// `string_ids = true` (then every room and participant id is a string). Which one a server
/// expects is its configuration's choice: pass the matching case.
enum JanusID: Sendable, Hashable, CustomStringConvertible {
    case number(UInt64)
    case string(String)

    /// The id as Janus encodes it.
    var json: JSONValue {
        switch self {
        case .number(let value): .int(Int64(value))
        case .string(let value): .string(value)
        }
    }

    /// The id in `value`: a JSON number or string; nil for anything else.
    init?(_ value: JSONValue?) {
        if let text = value?.stringValue {
            self = .string(text)
        } else if let number = value?.intValue, number >= 0 {
            self = .number(UInt64(number))
        } else {
            return nil
        }
    }

    var description: String {
        switch self {
        case .number(let value): "\(value)"
        case .string(let value): value
        }
    }
}

/// A session description exchanged with Janus (`jsep`).
struct JanusJSEP: Sendable, Hashable {
    /// `offer` or `answer`.
    var type: String
    /// The SDP text.
    var sdp: String

    /// A description of `type` (`offer`, `answer`) with `sdp`.
    init(type: String, sdp: String) {
        self.type = type
        self.sdp = sdp
    }

    init?(_ value: JSONValue?) {
        guard let type = value?["type"]?.stringValue, let sdp = value?["sdp"]?.stringValue else { return nil }
        self.init(type: type, sdp: sdp)
    }

    var json: JSONValue { .object(["type": .string(type), "sdp": .string(sdp)]) }
}

/// What Janus tells about one plugin handle.
enum JanusEvent: Sendable, Equatable {
    /// A plugin event not answering a request of ours (another participant published, left, a
    /// subscription was updated...): `plugindata.data`, and a `jsep` when one came with it.
    case plugin(data: JSONValue, jsep: JanusJSEP?)
    /// The PeerConnection is up (ICE and DTLS done).
    case webrtcUp
    /// Janus started or stopped receiving media of `type` (`audio`, `video`) on `mid`.
    case media(type: String, mid: String?, receiving: Bool)
    /// The PeerConnection went down, with Janus's reason.
    case hangup(reason: String)
    /// Janus saw losses: `uplink` is true when they are on what it receives from us.
    case slowLink(uplink: Bool, mid: String?, lost: Int)
    /// The handle is gone (detached by us or by the plugin).
    case detached
}

/// What happens to the session itself. After ``timedOut`` or ``lost`` the session is gone: make
/// a new one (and join again) to go on.
enum JanusSessionEvent: Sendable, Equatable {
    /// Janus cannot be reached for now (the event loop's requests fail); the session may still
    /// live on the server.
    case interrupted
    /// Janus answers again after an interruption: the session lives.
    case restored
    /// Janus dropped the session: no request came within its `session_timeout`.
    case timedOut
    /// The session was lost (Janus does not know it any more, or could not be reached for
    /// longer than its session timeout).
    case lost(JanusError)
}

/// A failed Janus request. Janus's own codes are kept: the core's in ``api(code:reason:)`` (458 no
/// such session, 459 no such handle, 403 unauthorized...), the plugin's in
/// ``plugin(code:message:)`` (VideoRoom: 426 no such room, 433 unauthorized or wrong pin, 436 id
/// exists...).
enum JanusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Janus could not be reached (connection refused, no route, a failed exchange).
    case unreachable(String)
    /// No answer to `request` within the configured time.
    case timedOut(request: String)
    /// The Janus core refused the request.
    case api(code: Int, reason: String)
    /// The plugin refused the request (`error_code`, `error` in its data).
    case plugin(code: Int, message: String)
    /// The session is gone (timed out, destroyed, or unknown to Janus): make a new one.
    case sessionGone(String)
    /// An answer we cannot read.
    case badResponse(String)
    /// The client was closed.
    case closed

    /// The VideoRoom plugin's error codes (janus_videoroom.c).
    enum VideoRoomCode {
        static let noSuchRoom = 426
        static let unauthorized = 433
        static let alreadyPublished = 434
        static let notPublished = 435
        static let idExists = 436
        static let invalidSDP = 437
        static let noSuchFeed = 428
        static let missingElement = 429
        static let alreadyJoined = 425
        static let joinFirst = 424
        static let publishersFull = 432
    }

    /// The Janus core's codes for a session or handle it does not know.
    enum CoreCode {
        static let sessionNotFound = 458
        static let handleNotFound = 459
        static let unauthorized = 403
    }

    /// The plugin's code, when it refused.
    var pluginCode: Int? {
        if case .plugin(let code, _) = self { return code }
        return nil
    }

    var description: String {
        switch self {
        case .unreachable(let detail): "Janus unreachable: \(detail)"
        case .timedOut(let request): "Janus did not answer '\(request)' in time"
        case .api(let code, let reason): "Janus error \(code): \(reason)"
        case .plugin(let code, let message): "Janus plugin error \(code): \(message)"
        case .sessionGone(let detail): "Janus session gone: \(detail)"
        case .badResponse(let detail): "unreadable Janus answer: \(detail)"
        case .closed: "the Janus client is closed"
        }
    }
}

/// One Janus message as we route it: the parts of the JSON we read.
struct JanusMessage: Sendable, Equatable {
    /// `janus`: success, error, ack, event, webrtcup, media, hangup, slowlink, detached, timeout,
    /// keepalive...
    var kind: String
    var transaction: String?
    /// `sender` (the handle) of events.
    var sender: UInt64?
    /// `data` of success answers (`data.id` of create and attach).
    var data: JSONValue?
    /// `plugindata.data`.
    var pluginData: JSONValue?
    var jsep: JanusJSEP?
    /// `error.code` and `error.reason` of core errors.
    var error: (code: Int, reason: String)?
    var raw: JSONValue

    static func == (lhs: JanusMessage, rhs: JanusMessage) -> Bool { lhs.raw == rhs.raw }

    init(_ raw: JSONValue) throws {
        guard let kind = raw["janus"]?.stringValue else { throw JanusError.badResponse("no 'janus' in \(raw)") }
        self.kind = kind
        self.raw = raw
        transaction = raw["transaction"]?.stringValue
        sender = raw["sender"]?.intValue.map { UInt64(bitPattern: $0) }
        data = raw["data"]
        pluginData = raw["plugindata"]?["data"]
        jsep = JanusJSEP(raw["jsep"])
        if let error = raw["error"] {
            self.error = (Int(error["code"]?.intValue ?? 0), error["reason"]?.stringValue ?? "")
        }
    }

    /// The plugin's refusal in its data, if it is one.
    var pluginError: JanusError? {
        guard let code = pluginData?["error_code"]?.intValue else { return nil }
        return .plugin(code: Int(code), message: pluginData?["error"]?.stringValue ?? "")
    }

    /// The handle event this message is, for the kinds Janus sends about a handle.
    var handleEvent: JanusEvent? {
        switch kind {
        case "event": pluginData.map { .plugin(data: $0, jsep: jsep) }
        case "webrtcup": .webrtcUp
        case "media":
            .media(
                type: raw["type"]?.stringValue ?? "", mid: raw["mid"]?.stringValue,
                receiving: raw["receiving"]?.boolValue ?? false)
        case "hangup": .hangup(reason: raw["reason"]?.stringValue ?? "")
        case "slowlink":
            .slowLink(
                uplink: raw["uplink"]?.boolValue ?? false, mid: raw["mid"]?.stringValue,
                lost: Int(raw["lost"]?.intValue ?? 0))
        case "detached": .detached
        default: nil
        }
    }
}

/// One stream of a VideoRoom publisher, as the plugin lists it.
struct VideoRoomStream: Sendable, Equatable {
    /// `audio`, `video` or `data`.
    var type: String
    var mid: String
    /// The codec (`opus`, `vp8`...), when media.
    var codec: String?
    /// Whether the publisher disabled it.
    var disabled: Bool
    /// The publisher's description of it (engines say "muted" while they do not send it).
    var description: String?

    init(_ value: JSONValue) {
        type = value["type"]?.stringValue ?? ""
        mid = value["mid"]?.stringValue ?? ""
        codec = value["codec"]?.stringValue
        disabled = value["disabled"]?.boolValue ?? false
        description = value["description"]?.stringValue
    }
}

/// A participant publishing in a VideoRoom.
struct VideoRoomPublisher: Sendable, Equatable {
    var id: JanusID
    var display: String?
    var streams: [VideoRoomStream]

    init?(_ value: JSONValue) {
        guard let id = JanusID(value["id"]) else { return nil }
        self.id = id
        display = value["display"]?.stringValue
        streams = value["streams"]?.arrayValue?.map(VideoRoomStream.init) ?? []
    }

    /// The publishers listed in `data["publishers"]`.
    static func list(in data: JSONValue) -> [VideoRoomPublisher] {
        data["publishers"]?.arrayValue?.compactMap(VideoRoomPublisher.init) ?? []
    }
}

/// A participant of a VideoRoom, as `listparticipants` lists them.
struct VideoRoomParticipant: Sendable, Equatable {
    var id: JanusID
    var display: String?
    /// Whether it publishes (its connection is up).
    var publisher: Bool

    init?(_ value: JSONValue) {
        guard let id = JanusID(value["id"]) else { return nil }
        self.id = id
        display = value["display"]?.stringValue
        publisher = value["publisher"]?.boolValue ?? false
    }
}

/// A publisher's `joined` answer.
struct VideoRoomJoined: Sendable, Equatable {
    var room: JanusID
    /// Our participant id (the one asked for, or Janus's choice).
    var id: JanusID
    /// The id that ties our subscriptions to us (`private_id`; a number even with string ids).
    var privateID: UInt64?
    /// Those already publishing. A participant that joined but publishes nothing is not listed.
    var publishers: [VideoRoomPublisher]

    init(_ data: JSONValue) throws {
        guard data["videoroom"]?.stringValue == "joined", let room = JanusID(data["room"]),
            let id = JanusID(data["id"])
        else { throw JanusError.badResponse("not a 'joined' event: \(data)") }
        self.room = room
        self.id = id
        privateID = data["private_id"]?.intValue.map { UInt64(bitPattern: $0) }
        publishers = VideoRoomPublisher.list(in: data)
    }
}

/// One feed (or one stream of it, by `mid`) to subscribe to.
struct VideoRoomFeed: Sendable, Hashable {
    var feed: JanusID
    var mid: String?

    /// All of `feed`'s streams, or only `mid`.
    init(_ feed: JanusID, mid: String? = nil) {
        self.feed = feed
        self.mid = mid
    }

    var json: JSONValue {
        var members: [String: JSONValue] = ["feed": feed.json]
        if let mid { members["mid"] = .string(mid) }
        return .object(members)
    }
}
