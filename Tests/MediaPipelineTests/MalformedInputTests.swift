import Foundation
import Testing

@testable import MediaPipeline

/// Small valid files of each format, made fresh for each test.
private struct SmallFiles {
    let folder = TemporaryFolder()
    let wav: String
    let opus: String
    let ivf: String
    let y4m: String
    /// Byte offsets at which a Y4M prefix is a valid, shorter file (frame boundaries).
    let y4mFrameBoundaries: [Int]

    init() throws {
        wav = folder.file("small.wav")
        let writer = try WAVWriter(path: wav, sampleRate: 48000, channelCount: 2)
        try writer.write(testTone(samplesPerChannel: 4000))
        try writer.finish()
        opus = folder.file("small.opus")
        try AudioFileEncoder.encode(input: wav, output: opus)

        ivf = folder.file("small.ivf")
        let ivfWriter = try IVFWriter(path: ivf, header: IVFHeader(codec: .vp8, width: 16, height: 12))
        let encoder = try VPXEncoder(configuration: VPXEncoderConfiguration(width: 16, height: 12))
        for index in 0..<3 {
            try ivfWriter.write(
                try encoder.encode(try syntheticPicture(width: 16, height: 12, frame: index)).bytes,
                timestamp: Int64(index))
        }
        try ivfWriter.finish()

        y4m = folder.file("small.y4m")
        let header = Y4MHeader(width: 9, height: 7)
        let y4mWriter = try Y4MWriter(path: y4m, header: header)
        for index in 0..<2 {
            try syntheticPicture(width: 9, height: 7, frame: index).withView { try y4mWriter.write($0) }
        }
        try y4mWriter.finish()
        let headerLength = header.serialized().utf8.count
        y4mFrameBoundaries = (1...2).map { headerLength + $0 * (6 + header.frameByteCount) }
    }

    /// Reads a file the whole way with the reader its extension names, decoding compressed media too.
    static func readThrough(_ path: String) throws {
        switch path.split(separator: ".").last {
        case "wav":
            let reader = try WAVReader(path: path)
            var block: [Float] = []
            while try reader.read(into: &block, maxFrames: 1000) > 0 {}
        case "opus": _ = try OggOpusReader(path: path).decode { _ in }
        case "ivf": _ = try VideoFileDecoder.decode(input: path, output: .none)
        default:
            let reader = try Y4MReader(path: path, bufferCount: 1)
            while try reader.readFrame() != nil {}
        }
    }
}

private func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }
private func write(_ bytes: [UInt8], _ path: String) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }

@Suite("Malformed input", .timeLimit(.minutes(5)))
struct MalformedInputTests {
    @Test("a file truncated at any byte is a typed error naming the file", arguments: ["wav", "opus", "ivf", "y4m"])
    func truncation(format: String) throws {
        let files = try SmallFiles()
        let source = [files.wav, files.opus, files.ivf, files.y4m][
            ["wav", "opus", "ivf", "y4m"].firstIndex(of: format)!]
        let whole = try bytes(source)
        try SmallFiles.readThrough(source)  // the whole file is valid
        let cut = files.folder.file("cut.\(format)")
        var failures: [String] = []
        for length in 0..<whole.count {
            try write(Array(whole[0..<length]), cut)
            if format == "y4m" && files.y4mFrameBoundaries.contains(length) {
                continue  // a Y4M file cut between frames is a valid shorter file: nothing says otherwise
            }
            do {
                try SmallFiles.readThrough(cut)
                failures.append("\(length): accepted")
            } catch let error as MediaError {
                if error.file != cut { failures.append("\(length): error does not name the file: \(error)") }
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }

    /// Applies `mutate` to a copy of `path` and expects a MediaError whose text contains `words`.
    private func expectRejected(
        _ path: String, _ folder: TemporaryFolder, _ words: String, code: MediaError.Code? = nil,
        sourceLocation: SourceLocation = #_sourceLocation, _ mutate: (inout [UInt8]) -> Void
    ) throws {
        var data = try bytes(path)
        mutate(&data)
        let bad = folder.file(
            "bad-" + UUID().uuidString + "." + (path.split(separator: ".").last.map(String.init) ?? ""))
        try write(data, bad)
        do {
            try SmallFiles.readThrough(bad)
            Issue.record("accepted a file with \(words)", sourceLocation: sourceLocation)
        } catch let error as MediaError {
            #expect(error.file == bad, sourceLocation: sourceLocation)
            #expect(error.message.lowercased().contains(words.lowercased()), "\(error)", sourceLocation: sourceLocation)
            if let code { #expect(error.code == code, "\(error)", sourceLocation: sourceLocation) }
        }
    }

    private func setLE16(_ data: inout [UInt8], _ at: Int, _ value: UInt16) {
        data[at] = UInt8(value & 0xFF)
        data[at + 1] = UInt8(value >> 8)
    }
    private func setLE32(_ data: inout [UInt8], _ at: Int, _ value: UInt32) {
        for i in 0..<4 { data[at + i] = UInt8((value >> (8 * UInt32(i))) & 0xFF) }
    }

    @Test("bad WAV header fields")
    func wavFields() throws {
        let files = try SmallFiles()
        let f = files.folder
        try expectRejected(files.wav, f, "not a WAV file") { $0[0] = UInt8(ascii: "X") }
        try expectRejected(files.wav, f, "channel count 3") { setLE16(&$0, 22, 3) }
        try expectRejected(files.wav, f, "sample rate 0") { setLE32(&$0, 24, 0) }
        try expectRejected(files.wav, f, "12-bit") { setLE16(&$0, 34, 12) }
        try expectRejected(files.wav, f, "format tag 85") { setLE16(&$0, 20, 85) }
        try expectRejected(files.wav, f, "block align") { setLE16(&$0, 32, 3) }
        try expectRejected(files.wav, f, "declares", code: .truncated) { setLE32(&$0, 40, 0x7FFF_FFF0) }
        try expectRejected(files.wav, f, "'fmt ' chunk at byte 12 has size 4") { setLE32(&$0, 16, 4) }
    }

    /// Recomputes the checksum of the Ogg page starting at `at`, so a field change is seen as such.
    private func fixCRC(_ data: inout [UInt8], page at: Int) {
        let segments = Int(data[at + 26])
        let length = 27 + segments + data[(at + 27)..<(at + 27 + segments)].reduce(0) { $0 + Int($1) }
        setLE32(&data, at + 22, 0)
        let crc = Array(data[at..<at + length]).withUnsafeBytes { OggCRC.update(0, $0) }
        setLE32(&data, at + 22, crc)
    }

    @Test("bad Ogg pages and Opus headers")
    func oggFields() throws {
        let files = try SmallFiles()
        let f = files.folder
        let whole = try bytes(files.opus)
        let second = 27 + Int(whole[26]) + Int(whole[27])  // the first page holds only OpusHead
        try expectRejected(files.opus, f, "expected an Ogg page") { $0[0] = UInt8(ascii: "X") }
        try expectRejected(files.opus, f, "version 1") {
            $0[4] = 1
            fixCRC(&$0, page: 0)
        }
        try expectRejected(files.opus, f, "checksum") { $0[40] ^= 0x55 }
        try expectRejected(files.opus, f, "channel count is 0") {
            $0[28 + 9] = 0
            fixCRC(&$0, page: 0)
        }
        // Family 1 needs its channel mapping table after the 19 bytes; family 2 is not read here.
        try expectRejected(files.opus, f, "23 needed for its channel mapping") {
            $0[28 + 18] = 1
            fixCRC(&$0, page: 0)
        }
        try expectRejected(files.opus, f, "mapping family 2", code: .unsupported) {
            $0[28 + 18] = 2
            fixCRC(&$0, page: 0)
        }
        try expectRejected(files.opus, f, "not an opus identification header") {
            $0[28] = UInt8(ascii: "X")
            fixCRC(&$0, page: 0)
        }
        try expectRejected(files.opus, f, "sequence jumps") {
            setLE32(&$0, second + 18, 7)
            fixCRC(&$0, page: second)
        }
        try expectRejected(files.opus, f, "another logical stream", code: .unsupported) {
            setLE32(&$0, second + 14, 0xDEAD)
            fixCRC(&$0, page: second)
        }
        try expectRejected(files.opus, f, "lacks the beginning-of-stream flag") {
            $0[5] = 0
            fixCRC(&$0, page: 0)
        }
        // OpusTags claiming a vendor string longer than the packet.
        try expectRejected(files.opus, f, "vendor string claims") {
            setLE32(&$0, second + 28 + 8, 0x00FF_FFFF)
            fixCRC(&$0, page: second)
        }
    }

    @Test("bad IVF header and frame fields")
    func ivfFields() throws {
        let files = try SmallFiles()
        let f = files.folder
        try expectRejected(files.ivf, f, "not an IVF file") { $0[0] = UInt8(ascii: "X") }
        try expectRejected(files.ivf, f, "version 1", code: .unsupported) { setLE16(&$0, 4, 1) }
        try expectRejected(files.ivf, f, "header length is 31") { setLE16(&$0, 6, 31) }
        try expectRejected(files.ivf, f, "fourcc 'H264'", code: .unsupported) {
            $0.replaceSubrange(8..<12, with: Array("H264".utf8))
        }
        try expectRejected(files.ivf, f, "zero dimension") { setLE16(&$0, 12, 0) }
        try expectRejected(files.ivf, f, "time base") { setLE32(&$0, 16, 0) }
        try expectRejected(files.ivf, f, "frame 0 has size 0") { setLE32(&$0, 32, 0) }
        try expectRejected(files.ivf, f, "above the") { setLE32(&$0, 32, 0xFFFF_FFF0) }
        try expectRejected(files.ivf, f, "only", code: .truncated) { setLE32(&$0, 32, 5000) }
        try expectRejected(files.ivf, f, "header declares 9") { setLE32(&$0, 24, 9) }
        try expectRejected(files.ivf, f, "decode of frame 0", code: .codecFailure) {
            for i in 44..<min(60, $0.count) { $0[i] = 0xFF }
        }
    }

    @Test("bad Y4M header and frame fields")
    func y4mFields() throws {
        let files = try SmallFiles()
        let f = files.folder
        func replaceHeader(_ data: inout [UInt8], _ header: String) {
            let end = data.firstIndex(of: 0x0A)!
            data.replaceSubrange(0..<end, with: Array(header.utf8))
        }
        try expectRejected(files.y4m, f, "not a Y4M file") { $0[0] = UInt8(ascii: "X") }
        try expectRejected(files.y4m, f, "width 'W0'") { replaceHeader(&$0, "YUV4MPEG2 W0 H7 F30:1") }
        try expectRejected(files.y4m, f, "height 'H-5'") { replaceHeader(&$0, "YUV4MPEG2 W9 H-5 F30:1") }
        try expectRejected(files.y4m, f, "frame rate 'F30:0'") { replaceHeader(&$0, "YUV4MPEG2 W9 H7 F30:0") }
        try expectRejected(files.y4m, f, "C444", code: .unsupported) {
            replaceHeader(&$0, "YUV4MPEG2 W9 H7 F30:1 C444")
        }
        try expectRejected(files.y4m, f, "interlace tag 'Ixyz'") { replaceHeader(&$0, "YUV4MPEG2 W9 H7 F30:1 Ixyz") }
        try expectRejected(files.y4m, f, "no width") { replaceHeader(&$0, "YUV4MPEG2 H7 F30:1") }
        try expectRejected(files.y4m, f, "expected 'FRAME'") {
            let at = $0.firstIndex(of: 0x0A)! + 1
            $0[at + 4] = UInt8(ascii: "X")
        }
        try expectRejected(files.y4m, f, "no line end") {
            $0 = Array("YUV4MPEG2 W9 H7 ".utf8) + [UInt8](repeating: 0x41, count: 5000)
        }
    }
}

@Suite("pipebench on bad input", .timeLimit(.minutes(5)))
struct CommandLineErrorTests {
    /// Expects pipebench to fail with one line naming `file`, leaving no output and no partial file.
    private func expectOneLineFailure(
        _ arguments: [String], names file: String, output: String?, in folder: TemporaryFolder,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let before = Set(folder.contents)
        let result = try pipebench(arguments)
        #expect(result.status != 0, sourceLocation: sourceLocation)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(lines.first?.hasPrefix("pipebench: error: ") == true, sourceLocation: sourceLocation)
        #expect(result.stderr.contains(file), "\(result.stderr)", sourceLocation: sourceLocation)
        if let output { #expect(!FileManager.default.fileExists(atPath: output), sourceLocation: sourceLocation) }
        #expect(
            Set(folder.contents) == before, "left behind: \(Set(folder.contents).subtracting(before))",
            sourceLocation: sourceLocation)
    }

    @Test("truncated and corrupt inputs fail in one line with no output left behind")
    func badInputs() throws {
        let files = try SmallFiles()
        let f = files.folder
        func truncated(_ path: String, keeping fraction: Double) throws -> String {
            let data = try bytes(path)
            let cut = f.file("cut-" + (path.split(separator: "/").last.map(String.init) ?? ""))
            try write(Array(data[0..<Int(Double(data.count) * fraction)]), cut)
            return cut
        }
        // Cut inside the second frame: the first frame is already written when the error comes.
        let y4m = try truncated(files.y4m, keeping: 0.8)
        try expectOneLineFailure(["encode", y4m, f.file("o.ivf")], names: y4m, output: f.file("o.ivf"), in: f)
        let wav = try truncated(files.wav, keeping: 0.7)
        try expectOneLineFailure(["encode", wav, f.file("o.opus")], names: wav, output: f.file("o.opus"), in: f)
        let opus = try truncated(files.opus, keeping: 0.9)
        try expectOneLineFailure(["decode", opus, f.file("o.wav")], names: opus, output: f.file("o.wav"), in: f)
        let ivf = try truncated(files.ivf, keeping: 0.9)
        try expectOneLineFailure(["decode", ivf, f.file("o.y4m")], names: ivf, output: f.file("o.y4m"), in: f)
        try expectOneLineFailure(["info", ivf], names: ivf, output: nil, in: f)
        try write(Array("hello, world".utf8), f.file("text.txt"))
        try expectOneLineFailure(
            ["decode", f.file("text.txt"), f.file("o.wav")], names: "text.txt", output: f.file("o.wav"), in: f)
        try expectOneLineFailure(["info", f.file("missing.ivf")], names: "missing.ivf", output: nil, in: f)
        // An existing output is left as it was when the run fails.
        try write([1, 2, 3], f.file("keep.wav"))
        try expectOneLineFailure(["decode", opus, f.file("keep.wav")], names: opus, output: nil, in: f)
        #expect(try bytes(f.file("keep.wav")) == [1, 2, 3])
    }

    @Test("invalid arguments fail in one line")
    func badArguments() throws {
        let files = try SmallFiles()
        let f = files.folder
        try expectOneLineFailure(
            ["encode", files.wav, f.file("o.opus"), "--bitrate", "12q"], names: "12q", output: f.file("o.opus"), in: f)
        try expectOneLineFailure(
            ["encode", files.wav, f.file("o.opus"), "--complexity", "11"], names: "11", output: f.file("o.opus"), in: f)
        try expectOneLineFailure(
            ["encode", files.wav, f.file("o.opus"), "--frame-size", "30"], names: "30", output: f.file("o.opus"), in: f)
        try expectOneLineFailure(
            ["encode", files.wav, f.file("o.ivf")], names: "o.ivf", output: f.file("o.ivf"), in: f)
        try expectOneLineFailure(
            ["encode", files.y4m, f.file("o.ivf"), "--speed", "99"], names: "99", output: f.file("o.ivf"), in: f)
        try expectOneLineFailure(
            ["encode", files.y4m, f.file("o.ivf"), "--fec"], names: "--fec", output: f.file("o.ivf"), in: f)
        try expectOneLineFailure(
            ["decode", files.opus, f.file("o.wav"), "--rate", "44100"], names: "44100", output: f.file("o.wav"), in: f)
    }
}
