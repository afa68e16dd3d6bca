#if canImport(Glibc)
    import Glibc
#endif

/// Gives the heap's free pages back to the kernel: glibc's `malloc_trim`, looked up when first
/// needed (a C library without it does nothing).
///
/// glibc keeps what a process freed in its arenas, and maps large blocks only until the first
/// one is freed (its threshold then rises to that block's size). An engine frees hundreds of
/// megabytes of codec state at once when destroyed; without a trim, a process that makes and
/// destroys engines one after the other (a bot joining session after session, a capacity
/// search's trials) keeps the high-water mark of each arena its threads used: 1.5–1.7 times
/// one engine's peak was measured.
enum FreedMemory {
    private typealias Trim = @convention(c) (Int) -> Int32

    /// `malloc_trim`, if the C library has it.
    private static let trim: Trim? = {
        #if canImport(Glibc)
            guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
            return unsafeBitCast(symbol, to: Trim.self)
        #else
            return nil
        #endif
    }()

    /// Returns the free pages of every arena to the kernel. Takes each arena's lock in turn
    /// (milliseconds for a large heap): for rare moments such as an engine's end, never a
    /// per-frame path.
    static func release() { _ = trim?(0) }
}
