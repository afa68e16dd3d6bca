/// Element IDs of the WebM subset of Matroska (RFC 9559) that MediaPipeline reads and writes,
/// and their names for messages.
extension EBML {
    enum ID {
        static let ebml: UInt32 = 0x1A45_DFA3
        static let ebmlVersion: UInt32 = 0x4286
        static let ebmlReadVersion: UInt32 = 0x42F7
        static let ebmlMaxIDLength: UInt32 = 0x42F2
        static let ebmlMaxSizeLength: UInt32 = 0x42F3
        static let docType: UInt32 = 0x4282
        static let docTypeVersion: UInt32 = 0x4287
        static let docTypeReadVersion: UInt32 = 0x4285
        static let segment: UInt32 = 0x1853_8067
        static let seekHead: UInt32 = 0x114D_9B74
        static let seek: UInt32 = 0x4DBB
        static let seekID: UInt32 = 0x53AB
        static let seekPosition: UInt32 = 0x53AC
        static let info: UInt32 = 0x1549_A966
        static let timestampScale: UInt32 = 0x2A_D7B1
        static let duration: UInt32 = 0x4489
        static let muxingApp: UInt32 = 0x4D80
        static let writingApp: UInt32 = 0x5741
        static let tracks: UInt32 = 0x1654_AE6B
        static let trackEntry: UInt32 = 0xAE
        static let trackNumber: UInt32 = 0xD7
        static let trackUID: UInt32 = 0x73C5
        static let trackType: UInt32 = 0x83
        static let flagLacing: UInt32 = 0x9C
        static let codecID: UInt32 = 0x86
        static let codecPrivate: UInt32 = 0x63A2
        static let codecDelay: UInt32 = 0x56AA
        static let seekPreRoll: UInt32 = 0x56BB
        static let defaultDuration: UInt32 = 0x23_E383
        static let video: UInt32 = 0xE0
        static let pixelWidth: UInt32 = 0xB0
        static let pixelHeight: UInt32 = 0xBA
        static let audio: UInt32 = 0xE1
        static let samplingFrequency: UInt32 = 0xB5
        static let channels: UInt32 = 0x9F
        static let cluster: UInt32 = 0x1F43_B675
        static let timestamp: UInt32 = 0xE7
        static let simpleBlock: UInt32 = 0xA3
        static let blockGroup: UInt32 = 0xA0
        static let block: UInt32 = 0xA1
        static let discardPadding: UInt32 = 0x75A2
        static let cues: UInt32 = 0x1C53_BB6B
        static let cuePoint: UInt32 = 0xBB
        static let cueTime: UInt32 = 0xB3
        static let cueTrackPositions: UInt32 = 0xB7
        static let cueTrack: UInt32 = 0xF7
        static let cueClusterPosition: UInt32 = 0xF1
        static let void: UInt32 = 0xEC
        static let crc32: UInt32 = 0xBF
        static let blockDuration: UInt32 = 0x9B
        static let referenceBlock: UInt32 = 0xFB
        static let contentEncodings: UInt32 = 0x6D80
        static let tags: UInt32 = 0x1254_C367
        static let chapters: UInt32 = 0x1043_A770
        static let attachments: UInt32 = 0x1941_A469
        static let flagEnabled: UInt32 = 0xB9
        static let flagDefault: UInt32 = 0x88
        static let name: UInt32 = 0x536E
        static let language: UInt32 = 0x22_B59C
        static let displayWidth: UInt32 = 0x54B0
        static let displayHeight: UInt32 = 0x54BA
        static let bitDepth: UInt32 = 0x6264
        static let outputSamplingFrequency: UInt32 = 0x78B5
        static let segmentUID: UInt32 = 0x73A4
        static let dateUTC: UInt32 = 0x4461
        static let title: UInt32 = 0x7BA9
        static let position: UInt32 = 0xA7
        static let prevSize: UInt32 = 0xAB
        static let silentTracks: UInt32 = 0x5854
        static let encryptedBlock: UInt32 = 0xAF
        static let codecName: UInt32 = 0x258688
        static let blockAdditions: UInt32 = 0x75A1
        static let cueRelativePosition: UInt32 = 0xF0
        static let cueDuration: UInt32 = 0xB2
        static let cueBlockNumber: UInt32 = 0x5378
    }

    /// The Matroska name of element `id` ("SimpleBlock"), or its hexadecimal ID when unknown here.
    static func name(_ id: UInt32) -> String {
        names[id] ?? "element 0x" + String(id, radix: 16, uppercase: true)
    }

    private static let names: [UInt32: String] = [
        ID.ebml: "EBML",
        ID.ebmlVersion: "EBMLVersion",
        ID.ebmlReadVersion: "EBMLReadVersion",
        ID.ebmlMaxIDLength: "EBMLMaxIDLength",
        ID.ebmlMaxSizeLength: "EBMLMaxSizeLength",
        ID.docType: "DocType",
        ID.docTypeVersion: "DocTypeVersion",
        ID.docTypeReadVersion: "DocTypeReadVersion",
        ID.segment: "Segment",
        ID.seekHead: "SeekHead",
        ID.seek: "Seek",
        ID.seekID: "SeekID",
        ID.seekPosition: "SeekPosition",
        ID.info: "Info",
        ID.timestampScale: "TimestampScale",
        ID.duration: "Duration",
        ID.muxingApp: "MuxingApp",
        ID.writingApp: "WritingApp",
        ID.tracks: "Tracks",
        ID.trackEntry: "TrackEntry",
        ID.trackNumber: "TrackNumber",
        ID.trackUID: "TrackUID",
        ID.trackType: "TrackType",
        ID.flagLacing: "FlagLacing",
        ID.codecID: "CodecID",
        ID.codecPrivate: "CodecPrivate",
        ID.codecDelay: "CodecDelay",
        ID.seekPreRoll: "SeekPreRoll",
        ID.defaultDuration: "DefaultDuration",
        ID.video: "Video",
        ID.pixelWidth: "PixelWidth",
        ID.pixelHeight: "PixelHeight",
        ID.audio: "Audio",
        ID.samplingFrequency: "SamplingFrequency",
        ID.channels: "Channels",
        ID.cluster: "Cluster",
        ID.timestamp: "Timestamp",
        ID.simpleBlock: "SimpleBlock",
        ID.blockGroup: "BlockGroup",
        ID.block: "Block",
        ID.discardPadding: "DiscardPadding",
        ID.cues: "Cues",
        ID.cuePoint: "CuePoint",
        ID.cueTime: "CueTime",
        ID.cueTrackPositions: "CueTrackPositions",
        ID.cueTrack: "CueTrack",
        ID.cueClusterPosition: "CueClusterPosition",
        ID.void: "Void",
        ID.crc32: "CRC-32",
        ID.blockDuration: "BlockDuration",
        ID.referenceBlock: "ReferenceBlock",
        ID.contentEncodings: "ContentEncodings",
        ID.tags: "Tags",
        ID.chapters: "Chapters",
        ID.attachments: "Attachments",
        ID.flagEnabled: "FlagEnabled",
        ID.flagDefault: "FlagDefault",
        ID.name: "Name",
        ID.language: "Language",
        ID.displayWidth: "DisplayWidth",
        ID.displayHeight: "DisplayHeight",
        ID.bitDepth: "BitDepth",
        ID.outputSamplingFrequency: "OutputSamplingFrequency",
        ID.segmentUID: "SegmentUID",
        ID.dateUTC: "DateUTC",
        ID.title: "Title",
        ID.position: "Position",
        ID.prevSize: "PrevSize",
        ID.silentTracks: "SilentTracks",
        ID.encryptedBlock: "EncryptedBlock",
        ID.codecName: "CodecName",
        ID.blockAdditions: "BlockAdditions",
        ID.cueRelativePosition: "CueRelativePosition",
        ID.cueDuration: "CueDuration",
        ID.cueBlockNumber: "CueBlockNumber",
    ]
}
