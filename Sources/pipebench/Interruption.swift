import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Ctrl-C (SIGINT) and SIGTERM as a flag a long-running command polls, so it can end cleanly
/// and write its files whole instead of dying mid-write.
enum Interruption {
    private static let raised = Atomic<Bool>(false)

    /// Catches SIGINT and SIGTERM from now on (unblocking them: a parent may start this
    /// process with them blocked).
    static func catchSignals() {
        let handler: @convention(c) (Int32) -> Void = { _ in Interruption.raised.store(true, ordering: .relaxed) }
        signal(SIGINT, handler)
        signal(SIGTERM, handler)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Whether a signal came.
    static var wasRaised: Bool { raised.load(ordering: .relaxed) }
}
