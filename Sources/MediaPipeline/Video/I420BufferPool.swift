import Synchronization

/// A bounded pool of same-size ``I420Buffer``s.
///
/// A buffer is free again as soon as nobody but the pool holds it: the pool keeps one reference
/// to each buffer and hands out those whose only reference is its own. It creates at most
/// ``capacity`` buffers and then reports exhaustion instead of allocating without limit.
public final class I420BufferPool: Sendable {
    /// Luma width and height of every buffer, in pixels.
    public let width: Int, height: Int
    /// The most buffers this pool will ever create.
    public let capacity: Int
    private let buffers = LockedValue<[I420Buffer]>([])

    /// A pool of buffers of `width` × `height` pixels.
    public init(width: Int, height: Int, capacity: Int) throws {
        guard capacity > 0 else {
            throw MediaError.invalidArgument("pool capacity must be at least 1, not \(capacity)")
        }
        try I420Buffer.validate(width: width, height: height)
        self.width = width
        self.height = height
        self.capacity = capacity
    }

    /// A buffer that nobody else holds, with unspecified contents.
    /// - Throws: ``MediaError/Code/poolExhausted`` when all ``capacity`` buffers are in use.
    public func acquire() throws -> I420Buffer {
        try buffers.withLock { (list) throws -> I420Buffer in
            for index in list.indices where isKnownUniquelyReferenced(&list[index]) {
                return list[index]
            }
            guard list.count < capacity else {
                throw MediaError(
                    .poolExhausted, "all \(capacity) \(width)x\(height) picture buffers are in use")
            }
            let buffer = try I420Buffer(width: width, height: height)
            list.append(buffer)
            return buffer
        }
    }

    /// How many buffers exist (free or in use).
    public var allocatedCount: Int { buffers.withLock { $0.count } }
}
