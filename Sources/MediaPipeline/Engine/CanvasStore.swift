/// The canvases the app bound (Agora's `setupRemoteVideo`), keyed by (channel, uid): media
/// objects that render rounds draw into, owned by the media side. The control plane keeps only
/// what its decisions need of them, their sizes (``ControlPlane/canvasSizes``).
///
/// A leaf lock: nothing is called while it is held (a canvas is made or reconfigured outside
/// it), so it may be taken under any engine lock. Binding and unbinding are serialised by the
/// caller (the engine does them under its control lock).
final class CanvasStore: Sendable {
    private let canvases = LockedValue<[StreamKey: CanvasBuffer]>([:])

    /// The canvas bound to `key`, if any.
    func canvas(_ key: StreamKey) -> CanvasBuffer? { canvases.withLock { $0[key] } }

    /// Binds `canvas` to `key`: reconfigures the one bound there, or makes one. Returns it.
    /// Calls for one key are serialised by the caller.
    /// - Throws: ``MediaError`` from ``CanvasBuffer`` for a canvas it cannot be.
    func bind(_ canvas: VideoCanvas, to key: StreamKey) throws -> CanvasBuffer {
        // Reconfiguring takes the canvas's own lock, which a render or the app's reader may
        // hold: never under the store's.
        if let existing = self.canvas(key) {
            try existing.reconfigure(canvas)
            return existing
        }
        let buffer = try CanvasBuffer(canvas)
        canvases.withLock { $0[key] = buffer }
        return buffer
    }

    /// Unbinds the canvas of `key`.
    func unbind(_ key: StreamKey) { canvases.withLock { _ = $0.removeValue(forKey: key) } }

    /// Unbinds every canvas.
    func removeAll() { canvases.withLock { $0.removeAll() } }

    /// The canvases bound in `channelId`, ordered by uid.
    func canvases(inChannel channelId: String) -> [CanvasBuffer] {
        canvases.withLock {
            $0.filter { $0.key.channelId == channelId }.sorted { $0.key.uid < $1.key.uid }.map(\.value)
        }
    }

    /// The canvases bound to `keys`, in their order, skipping keys without one.
    func canvases(_ keys: [StreamKey]) -> [CanvasBuffer] {
        canvases.withLock { bound in keys.compactMap { bound[$0] } }
    }
}
