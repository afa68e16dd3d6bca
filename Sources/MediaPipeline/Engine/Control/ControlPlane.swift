/// The engine's control plane as one value: channels, roles, local and remote mutes, the
/// one-publishing-channel rule, relays, the remote stream state machines, canvases bound and the
/// engine's counters.
///
/// It is a state machine: each input (an API call, a transport answer or callback, what a
/// packet or a decode round showed) is a `mutating` method; what must happen outside (transport
/// signalling, events for the app, warnings for the log) is appended to ``actions`` in the
/// order decided. It touches neither the transport nor the app and reads no clock: time comes in
/// as ``now``. The engine owns the value in one `LockedValue` (its serial owner): an input runs
/// with the value locked, and the engine carries the actions out afterwards, in order, one thread
/// at a time. So two threads' inputs are decided one after the other and reach the transport in
/// that order, and no input sees another half-done.
struct ControlPlane: Sendable {
    // The fields the packet path reads come first, so they share cache lines.
    /// Clock time of the input being handled (microseconds); set by the engine before each input.
    var now: Int64 = 0
    /// Channel objects in creation order.
    var channels: [ChannelState] = []
    /// ``EngineConfiguration/keyframeRequestIntervalMs`` in microseconds.
    let keyframeRequestIntervalMicroseconds: Int64
    private var nextSerial = 0
    var destroyed = false
    /// The size of each bound canvas (the canvases themselves are the media side's
    /// ``CanvasStore``), for the video layer it calls for (adaptive stream) and whether a
    /// stream's pictures are rendered.
    var canvasSizes: [StreamKey: (width: Int, height: Int)] = [:]
    /// The channels recorded as a composite (the engine's ``RecordingStore`` holds their
    /// recorders): their users are aligned with each other (``lipSyncJobs(into:)``).
    var compositeRecordedChannels: Set<String> = []
    var stats = EngineStatistics()
    var observer: AudioFrameObserver?
    /// Who sees every decoded remote picture (``MediaEngine/setVideoFrameObserver(_:)``).
    var videoObserver: VideoFrameObserver?
    /// Receivers to start and stop, in decision order, for the engine to carry out on its
    /// ``ReceiverStore`` before the control lock is released.
    var receiverChanges: [ReceiverChange] = []
    /// A subscriber asked for a keyframe; the next local picture is forced to one.
    var keyframePending = false
    /// What subscriptions fall back to under loss (``MediaEngine/setRemoteSubscribeFallbackOption(_:)``).
    var subscribeFallbackOption = StreamFallbackOptions.videoStreamLow
    /// The same for the low video layer (dual stream mode).
    var lowKeyframePending = false
    var lastForcedLowKeyframe: Int64?
    var lastForcedKeyframe: Int64?

    /// The receive router must be published again (see ``routingChanged()``).
    var routesChanged = true
    /// The serial of the last ``ReceiverID`` given.
    private var lastReceiverSerial: UInt64 = 0

    /// Decided and not yet carried out, in decision order.
    private(set) var actions: [EngineAction] = []
    /// Empty storage for the next batch of actions (see ``takeActions(into:continuing:)``).
    private var spareActions: [EngineAction] = []
    /// Actions decided so far, held back or not (an input compares it before and after to learn
    /// whether it decided anything).
    private(set) var decisions = 0
    /// True while a thread carries out actions.
    private var delivering = false
    /// Subscription decisions not yet told to the transport; those of a channel still joining
    /// wait for its uid.
    private var subscriptionChanges: [(ref: ChannelRef, publisher: UInt32, kind: MediaKind, subscribed: Bool)] = []

    let configuration: EngineConfiguration

    init(configuration: EngineConfiguration) {
        self.configuration = configuration
        keyframeRequestIntervalMicroseconds = Int64(configuration.keyframeRequestIntervalMs) * 1000
    }

    // MARK: - Channels

    /// Adds a channel object for `channelId`.
    mutating func createChannel(_ channelId: String) throws -> ChannelRef {
        guard !destroyed else { throw EngineError(.notReady, "the engine is destroyed") }
        guard !channels.contains(where: { $0.id == channelId }) else {
            throw EngineError(.invalidArgument, "channel '\(channelId)' already exists in this engine")
        }
        nextSerial += 1
        let ref = ChannelRef(id: channelId, serial: nextSerial)
        channels.append(ChannelState(ref: ref))
        return ref
    }

    /// The position of the channel object `ref`, if it still exists.
    ///
    /// Lookups on the packet and tick paths read elements through unsafe buffer pointers, which
    /// read fields in place: reading through an array's subscript may copy the whole channel
    /// (or user) value first.
    func index(_ ref: ChannelRef) -> Int? {
        channels.withUnsafeBufferPointer { all in all.indices.first { all[$0].ref.serial == ref.serial } }
    }

    /// The position of the joined channel `channelId` (the transport names channels by id).
    func joinedIndex(_ channelId: String) -> Int? {
        channels.withUnsafeBufferPointer { all in all.indices.first { all[$0].joined && all[$0].ref.id == channelId } }
    }

    /// The position of user `uid` in channel `c`, trying `hint` first (decode rounds remember
    /// where a stream was; users may have come and gone since).
    func userIndex(_ c: Int, _ uid: UInt32, hint: Int? = nil) -> Int? {
        channels.withUnsafeBufferPointer { $0[c].userIndex(uid, hint: hint) }
    }

    /// The position of `ref`, trying `hint` first (where a decode round saw it).
    func index(_ ref: ChannelRef, hint: Int) -> Int? {
        let hinted = channels.withUnsafeBufferPointer { all in all.indices.contains(hint) && all[hint].ref == ref }
        return hinted ? hint : index(ref)
    }

    /// Whether channel object `ref` exists and is joined.
    func isJoined(_ ref: ChannelRef) -> Bool {
        channels.withUnsafeBufferPointer { all in all.contains { $0.ref.serial == ref.serial && $0.joined } }
    }

    /// The position of `ref`, or the error an API call on it gets.
    func usable(_ ref: ChannelRef) throws -> Int {
        guard !destroyed else { throw EngineError(.notReady, "the engine is destroyed") }
        guard let c = index(ref) else { throw EngineError(.notReady, "channel '\(ref.id)' is destroyed") }
        return c
    }

    // MARK: - Actions

    /// Queues `event` for channel `c`. Events of a channel that is still joining wait until
    /// its join success has been reported.
    mutating func emit(_ c: Int, _ event: ChannelEvent) {
        decisions += 1
        if channels[c].joining {
            channels[c].deferred.append(event)
        } else {
            actions.append(.event(channels[c].ref, event))
        }
    }

    /// Queues `event` for channel `c` now, even while it joins.
    mutating func emitNow(_ c: Int, _ event: ChannelEvent) {
        decisions += 1
        actions.append(.event(channels[c].ref, event))
    }

    /// Reports a connection state change of channel `c` at once (not held back while joining).
    mutating func setConnection(_ c: Int, _ connection: ConnectionState, _ reason: ConnectionChangedReason) {
        guard channels[c].connection != connection else { return }
        channels[c].connection = connection
        emitNow(c, .connectionStateChanged(state: connection, reason: reason))
    }

    /// Queues a transport call.
    mutating func signal(_ command: TransportCommand) {
        decisions += 1
        actions.append(.transport(command))
    }

    /// Queues a line for the log that no event carries.
    mutating func warn(_ message: String, channelId: String) {
        decisions += 1
        actions.append(.warning(message, channelId: channelId))
    }

    /// Queues a subscription decision for the transport.
    mutating func subscriptionChanged(_ c: Int, publisher: UInt32, _ kind: MediaKind, subscribed: Bool) {
        subscriptionChanges.append((channels[c].ref, publisher, kind, subscribed))
    }

    /// Hands the queued actions to the calling thread in `batch`, if no other thread is carrying
    /// actions out (it must then call again when done, until this returns false); false
    /// otherwise, or when nothing is queued (the delivering thread is released).
    ///
    /// The storage goes round: `batch`'s last contents are emptied and kept as the spare, the
    /// queue's storage moves to `batch`, and the spare becomes the queue; so delivering actions
    /// allocates nothing once both have grown.
    mutating func takeActions(into batch: inout [EngineAction], continuing: Bool) -> Bool {
        batch.removeAll(keepingCapacity: true)
        if batch.capacity > spareActions.capacity { swap(&batch, &spareActions) }
        queueSubscriptionChanges()
        if !continuing && delivering { return false }
        guard !actions.isEmpty else {
            if continuing { delivering = false }
            return false
        }
        delivering = true
        swap(&batch, &actions)
        swap(&actions, &spareActions)
        // The queue keeps room for as much as it just held (grown once, not once per buffer).
        if actions.capacity < batch.count { actions.reserveCapacity(batch.count) }
        return true
    }

    /// Turns the subscription decisions of joined channels into transport calls, so unsubscribed
    /// streams are not even forwarded; those of a channel still joining wait for its uid.
    private mutating func queueSubscriptionChanges() {
        guard !subscriptionChanges.isEmpty else { return }
        var waiting: [(ref: ChannelRef, publisher: UInt32, kind: MediaKind, subscribed: Bool)] = []
        for change in subscriptionChanges {
            guard let c = index(change.ref) else { continue }
            if channels[c].joining {
                waiting.append(change)
            } else if channels[c].joined {
                signal(
                    .setSubscribed(
                        change.subscribed,
                        to: MediaStreamID(channelId: change.ref.id, uid: change.publisher, kind: change.kind),
                        subscriber: channels[c].uid))
            }
        }
        subscriptionChanges = waiting
    }

    // MARK: - The publishing rule

    /// The channel that publishes now, if any (at most one does).
    func publishingChannel() -> Int? { channels.firstIndex { !$0.publishedMedia.isEmpty } }

    /// Refuses (ERR_REFUSED) a change that would make channel `c` publish `media` while another
    /// channel publishes.
    func checkSinglePublisher(_ c: Int, wouldPublish media: PublishedMedia) throws {
        guard !media.isEmpty, let other = publishingChannel(), other != c else { return }
        throw EngineError(
            .refused,
            "channel '\(channels[c].id)' cannot publish while channel '\(channels[other].id)' publishes: one publishing channel at a time"
        )
    }

    /// A new receiver's name.
    mutating func newReceiverID() -> ReceiverID {
        lastReceiverSerial += 1
        return ReceiverID(serial: lastReceiverSerial)
    }
}
