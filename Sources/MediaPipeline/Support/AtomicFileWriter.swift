import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a file whole or not at all: bytes go to a hidden temporary file beside the
/// destination, which replaces the destination only on ``commit()``. A writer dropped without a
/// commit removes its temporary file, so a failed run leaves no partial output.
///
/// Destinations that are not regular files (`/dev/null`, a pipe) are written directly, and so
/// is every destination with `direct` (live recordings, which must keep what was written
/// when the process dies): there a writer dropped without a commit leaves what it flushed.
final class AtomicFileWriter {
    let path: String
    private let temporaryPath: String?
    /// True when the file can seek back to patch what it wrote (not a pipe or a device).
    let isSeekable: Bool
    private var file: UnsafeMutablePointer<FILE>?
    private var committed = false
    /// Bytes written so far (the current position after a ``seek(to:)``).
    private(set) var position: Int64 = 0

    init(path: String, direct: Bool = false) throws {
        self.path = path
        var info = stat()
        let isSpecial = stat(path, &info) == 0 && (info.st_mode & S_IFMT) != S_IFREG
        isSeekable = !isSpecial
        if isSpecial || direct {
            guard !isSpecial || (info.st_mode & S_IFMT) != S_IFDIR else {
                throw MediaError(.io, "is a directory; an output file name is needed", file: path)
            }
            temporaryPath = nil
            file = fopen(path, "wb")
        } else {
            let slash = path.lastIndex(of: "/")
            let directory = slash.map { String(path[...$0]) } ?? ""
            let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
            let temporary = "\(directory).\(name).partial-\(getpid())-\(AtomicFileWriter.nextSerial())"
            temporaryPath = temporary
            file = fopen(temporary, "wb")
        }
        if file == nil {
            throw MediaError(.io, "cannot create: \(String(cString: strerror(errno)))", file: path)
        }
        // Direct files are unbuffered: each write reaches the file whole or fails, and nothing
        // written after the last good one is flushed on close.
        if direct { setvbuf(file, nil, _IONBF, 0) }
    }

    deinit { if !committed { discard() } }

    /// Hands what was written to the operating system, so it outlives this process.
    func flush() throws {
        guard let file, fflush(file) == 0 else {
            throw MediaError(.io, "write failed: \(String(cString: strerror(errno)))", file: path)
        }
    }

    private static let serial = Atomic<Int>(0)
    /// Temporary names are unique within the process; the pid keeps processes apart.
    private static func nextSerial() -> Int { serial.add(1, ordering: .relaxed).newValue }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard let file, let base = bytes.baseAddress, bytes.count > 0 else { return }
        if fwrite(base, 1, bytes.count, file) != bytes.count {
            throw MediaError(.io, "write failed: \(String(cString: strerror(errno)))", file: path)
        }
        position += Int64(bytes.count)
    }

    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { (raw) in try write(raw) }
    }

    /// Moves the write position (to patch a header once sizes are known).
    func seek(to offset: Int64) throws {
        guard let file, fseeko(file, off_t(offset), SEEK_SET) == 0 else {
            throw MediaError(.io, "seek failed: \(String(cString: strerror(errno)))", file: path)
        }
        position = offset
    }

    /// Moves the write position to the end of what was written.
    func seekToEnd() throws {
        guard let file, fseeko(file, 0, SEEK_END) == 0 else {
            throw MediaError(.io, "seek failed: \(String(cString: strerror(errno)))", file: path)
        }
        position = Int64(ftello(file))
    }

    /// Flushes and moves the finished file into place.
    func commit() throws {
        guard let file, !committed else { return }
        let flushed = fflush(file) == 0
        let closed = fclose(file) == 0
        self.file = nil
        guard flushed && closed else {
            discard()
            throw MediaError(.io, "write failed: \(String(cString: strerror(errno)))", file: path)
        }
        if let temporaryPath, rename(temporaryPath, path) != 0 {
            let reason = String(cString: strerror(errno))
            discard()
            throw MediaError(.io, "cannot move the finished file into place: \(reason)", file: path)
        }
        committed = true
    }

    /// Closes and deletes the temporary file; the destination is left untouched (a direct
    /// destination keeps what was flushed to it).
    func discard() {
        if let file { fclose(file) }
        file = nil
        if let temporaryPath { unlink(temporaryPath) }
    }
}
