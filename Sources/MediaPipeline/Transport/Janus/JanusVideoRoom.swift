import Foundation

/// The VideoRoom plugin's requests (Janus 1.x, multistream), on a handle attached to
/// `janus.plugin.videoroom`. Room and participant ids are ``JanusID``s: numbers, or strings
/// when the plugin runs with `string_ids = true`.
extension JanusHandle {
    /// Joins `room` as a publisher (`id` is Janus's choice when nil). Nothing is published yet:
    /// others learn of us only when we publish. Throws ``JanusError/plugin(code:message:)``: 426
    /// no such room, 433 wrong or missing pin, 436 the id is taken.
    func joinAsPublisher(
        room: JanusID, id: JanusID? = nil, display: String? = nil, pin: String? = nil
    ) async throws -> VideoRoomJoined {
        var body: [String: JSONValue] = [
            "request": .string("join"), "ptype": .string("publisher"), "room": room.json,
        ]
        if let id { body["id"] = id.json }
        if let display { body["display"] = .string(display) }
        if let pin { body["pin"] = .string(pin) }
        return try VideoRoomJoined(try await message(.object(body)).data)
    }

    /// Publishes (or changes what is published): `configure` with `audio` / `video` flags and
    /// our SDP `offer`; the reply's `jsep` is Janus's answer. `extra` goes into the body as is
    /// (`bitrate`, `streams`, `display`...).
    func configure(
        audio: Bool? = nil, video: Bool? = nil, offer: JanusJSEP? = nil, extra: [String: JSONValue] = [:]
    ) async throws -> JanusReply {
        var body = extra
        body["request"] = .string("configure")
        if let audio { body["audio"] = .bool(audio) }
        if let video { body["video"] = .bool(video) }
        return try await message(.object(body), jsep: offer)
    }

    /// Stops publishing (435 when nothing is published).
    @discardableResult
    func unpublish() async throws -> JanusReply {
        try await message(.object(["request": .string("unpublish")]))
    }

    /// Every participant of `room`, publishing or not, with its display (a synchronous request;
    /// no pin needed).
    func listParticipants(room: JanusID) async throws -> [VideoRoomParticipant] {
        let reply = try await message(.object(["request": .string("listparticipants"), "room": room.json]))
        return reply.data["participants"]?.arrayValue?.compactMap(VideoRoomParticipant.init) ?? []
    }

    /// Leaves the room (a publisher's handle, or a subscription).
    @discardableResult
    func leave() async throws -> JanusReply {
        try await message(.object(["request": .string("leave")]))
    }

    /// Subscribes to `feeds` in `room` on this handle (one handle per subscription): the reply
    /// (`videoroom: attached`) carries Janus's offer in `jsep`; answer with ``start(answer:)``.
    /// `privateID` is the one our publisher handle got, to tie the two.
    func joinAsSubscriber(
        room: JanusID, feeds: [VideoRoomFeed], privateID: UInt64? = nil, pin: String? = nil
    ) async throws -> JanusReply {
        var body: [String: JSONValue] = [
            "request": .string("join"), "ptype": .string("subscriber"), "room": room.json,
            "streams": .array(feeds.map(\.json)),
        ]
        if let privateID { body["private_id"] = .int(Int64(bitPattern: privateID)) }
        if let pin { body["pin"] = .string(pin) }
        return try await message(.object(body))
    }

    /// Starts a subscription with our SDP `answer` to Janus's offer.
    @discardableResult
    func start(answer: JanusJSEP) async throws -> JanusReply {
        try await message(.object(["request": .string("start")]), jsep: answer)
    }

    /// Adds `feeds` to this subscription; Janus sends a new offer (in the reply, `updated`).
    func subscribe(_ feeds: [VideoRoomFeed]) async throws -> JanusReply {
        try await message(.object(["request": .string("subscribe"), "streams": .array(feeds.map(\.json))]))
    }

    /// Removes `feeds` from this subscription; Janus sends a new offer (in the reply, `updated`).
    func unsubscribe(_ feeds: [VideoRoomFeed]) async throws -> JanusReply {
        try await message(.object(["request": .string("unsubscribe"), "streams": .array(feeds.map(\.json))]))
    }
}
