/// The VP9 payload descriptor at the start of every VP9 RTP payload (RFC 9628 section 4.2).
///
/// ```
///       0 1 2 3 4 5 6 7
///      |I|P|L|F|B|E|V|Z| (required)
///  I:  |M| PICTURE ID  | (M: 15-bit PictureID, a second byte follows)
///  M:  | EXTENDED PID  |
///  L:  |  TID  |U| SID |D|  (and, when F = 0, TL0PICIDX in the next byte)
///  P,F:| P_DIFF      |N|  (flexible mode: up to 3 reference differences)
///  V:  | SS            |  (scalability structure)
/// ```
/// The scalability structure: `N_S(3) Y G - - -`, then with Y a 16-bit width and height per
/// spatial layer, then with G `N_G` and per picture group entry `TID(3) U R(2) - -` and R P_DIFFs.
public struct VP9PayloadDescriptor: Sendable, Equatable {
    /// P: the picture is predicted from earlier pictures (false for a keyframe).
    public var interPicturePredicted = false
    /// F: flexible mode (references listed in each packet).
    public var flexibleMode = false
    /// B: the packet starts a frame of a layer.
    public var startOfFrame = false
    /// E: the packet ends a frame of a layer.
    public var endOfFrame = false
    /// Z: the frame is not used for prediction by higher spatial layers.
    public var notReferencedByUpperLayers = false
    /// The PictureID, 7 or 15 bits, if present.
    public var pictureId: UInt16?
    /// True when ``pictureId`` is written in 15 bits (M = 1).
    public var pictureIdIs15Bit = true
    /// The layer indices (L), if present.
    public var layer: LayerIndices?
    /// TL0PICIDX: present with layer indices in non-flexible mode.
    public var temporalLayerZeroIndex: UInt8 = 0
    /// Reference differences to earlier PictureIDs (flexible mode with P), at most 3.
    public var referenceDifferences: [UInt8] = []
    /// The scalability structure (V), if present.
    public var scalability: ScalabilityStructure?

    /// The layer indices byte.
    public struct LayerIndices: Sendable, Equatable {
        /// TID: the temporal layer, 0...7.
        public var temporalId: UInt8
        /// U: switching up to a higher temporal layer is possible here.
        public var switchingUpPoint: Bool
        /// SID: the spatial layer, 0...7.
        public var spatialId: UInt8
        /// D: the frame depends on the spatial layer below (inter-layer prediction).
        public var interLayerDependency: Bool

        /// Layer indices with the given fields.
        public init(temporalId: UInt8, switchingUpPoint: Bool, spatialId: UInt8, interLayerDependency: Bool) {
            self.temporalId = temporalId
            self.switchingUpPoint = switchingUpPoint
            self.spatialId = spatialId
            self.interLayerDependency = interLayerDependency
        }
    }

    /// The scalability structure: picture sizes per spatial layer and the picture group.
    public struct ScalabilityStructure: Sendable, Equatable {
        /// Width and height per spatial layer (empty when the sender leaves them out).
        public var sizes: [(width: Int, height: Int)]
        /// Spatial layers, 1...8.
        public var spatialLayerCount: Int
        /// The picture group description: per picture, (TID, U, reference differences).
        public var pictureGroup: [(temporalId: UInt8, switchingUpPoint: Bool, references: [UInt8])]?

        /// A structure for one spatial layer of `width` × `height`, without a picture group.
        public init(width: Int, height: Int) {
            sizes = [(width, height)]
            spatialLayerCount = 1
            pictureGroup = nil
        }

        init(spatialLayerCount: Int) {
            sizes = []
            self.spatialLayerCount = spatialLayerCount
            pictureGroup = nil
        }

        public static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.spatialLayerCount == rhs.spatialLayerCount && lhs.sizes.elementsEqual(rhs.sizes, by: { $0 == $1 })
                && (lhs.pictureGroup ?? []).elementsEqual(
                    rhs.pictureGroup ?? [], by: { $0.0 == $1.0 && $0.1 == $1.1 && $0.2 == $1.2 })
                && (lhs.pictureGroup == nil) == (rhs.pictureGroup == nil)
        }
    }

    /// A descriptor with only the required byte.
    public init() {}

    /// Bytes the descriptor takes.
    public var byteCount: Int {
        var count = 1
        if pictureId != nil { count += pictureIdIs15Bit ? 2 : 1 }
        if layer != nil { count += flexibleMode ? 1 : 2 }
        if flexibleMode && interPicturePredicted { count += referenceDifferences.count }
        if let scalability {
            count += 1 + scalability.sizes.count * 4
            if let group = scalability.pictureGroup { count += 1 + group.reduce(0) { $0 + 1 + $1.references.count } }
        }
        return count
    }

    /// Parses the descriptor at the start of `payload`.
    /// - Throws: ``MediaError/Code/truncated`` when the payload ends inside the descriptor or holds
    ///   nothing after it, ``MediaError/Code/invalidFormat`` for more than 3 reference differences.
    public init(parsing payload: UnsafeRawBufferPointer) throws {
        var offset = 0
        func take() throws -> UInt8 {
            guard offset < payload.count else {
                throw MediaError(.truncated, "VP9 payload of \(payload.count) bytes ends inside its descriptor")
            }
            defer { offset += 1 }
            return payload[offset]
        }
        let first = try take()
        interPicturePredicted = first & 0x40 != 0
        flexibleMode = first & 0x10 != 0
        startOfFrame = first & 0x08 != 0
        endOfFrame = first & 0x04 != 0
        notReferencedByUpperLayers = first & 0x01 != 0
        if first & 0x80 != 0 {
            let high = try take()
            if high & 0x80 != 0 {
                pictureId = UInt16(high & 0x7F) << 8 | UInt16(try take())
                pictureIdIs15Bit = true
            } else {
                pictureId = UInt16(high)
                pictureIdIs15Bit = false
            }
        }
        if first & 0x20 != 0 {
            let byte = try take()
            layer = LayerIndices(
                temporalId: byte >> 5, switchingUpPoint: byte & 0x10 != 0, spatialId: (byte >> 1) & 0x07,
                interLayerDependency: byte & 0x01 != 0)
            if !flexibleMode { temporalLayerZeroIndex = try take() }
        }
        if flexibleMode && interPicturePredicted {
            while true {
                let byte = try take()
                guard referenceDifferences.count < 3 else {
                    throw MediaError.invalidFormat("VP9 descriptor lists more than 3 reference differences")
                }
                referenceDifferences.append(byte >> 1)
                if byte & 0x01 == 0 { break }
            }
        }
        if first & 0x02 != 0 {
            let header = try take()
            var structure = ScalabilityStructure(spatialLayerCount: Int(header >> 5) + 1)
            if header & 0x10 != 0 {
                for _ in 0..<structure.spatialLayerCount {
                    let width = Int(try take()) << 8 | Int(try take())
                    let height = Int(try take()) << 8 | Int(try take())
                    structure.sizes.append((width, height))
                }
            }
            if header & 0x08 != 0 {
                var group: [(temporalId: UInt8, switchingUpPoint: Bool, references: [UInt8])] = []
                for _ in 0..<Int(try take()) {
                    let entry = try take()
                    var references: [UInt8] = []
                    for _ in 0..<Int((entry >> 2) & 0x03) { references.append(try take()) }
                    group.append((entry >> 5, entry & 0x10 != 0, references))
                }
                structure.pictureGroup = group
            }
            scalability = structure
        }
        guard offset < payload.count else {
            throw MediaError(
                .truncated, "VP9 payload of \(payload.count) bytes holds no frame data after its descriptor")
        }
    }

    /// Writes the descriptor at the start of `bytes`; returns the bytes written (``byteCount``).
    @discardableResult
    public func write(into bytes: UnsafeMutableRawBufferPointer) -> Int {
        var offset = 0
        func put(_ byte: UInt8) {
            bytes[offset] = byte
            offset += 1
        }
        put(
            (pictureId != nil ? 0x80 : 0) | (interPicturePredicted ? 0x40 : 0) | (layer != nil ? 0x20 : 0)
                | (flexibleMode ? 0x10 : 0) | (startOfFrame ? 0x08 : 0) | (endOfFrame ? 0x04 : 0)
                | (scalability != nil ? 0x02 : 0) | (notReferencedByUpperLayers ? 0x01 : 0))
        if let pictureId {
            if pictureIdIs15Bit {
                put(0x80 | UInt8((pictureId >> 8) & 0x7F))
                put(UInt8(pictureId & 0xFF))
            } else {
                put(UInt8(pictureId & 0x7F))
            }
        }
        if let layer {
            put(
                (layer.temporalId & 0x07) << 5 | (layer.switchingUpPoint ? 0x10 : 0) | (layer.spatialId & 0x07) << 1
                    | (layer.interLayerDependency ? 0x01 : 0))
            if !flexibleMode { put(temporalLayerZeroIndex) }
        }
        if flexibleMode && interPicturePredicted {
            for (index, difference) in referenceDifferences.enumerated() {
                put((difference & 0x7F) << 1 | (index + 1 < referenceDifferences.count ? 0x01 : 0))
            }
        }
        if let scalability {
            put(
                UInt8((scalability.spatialLayerCount - 1) & 0x07) << 5 | (scalability.sizes.isEmpty ? 0 : 0x10)
                    | (scalability.pictureGroup != nil ? 0x08 : 0))
            for size in scalability.sizes {
                put(UInt8((size.width >> 8) & 0xFF))
                put(UInt8(size.width & 0xFF))
                put(UInt8((size.height >> 8) & 0xFF))
                put(UInt8(size.height & 0xFF))
            }
            if let group = scalability.pictureGroup {
                put(UInt8(group.count))
                for entry in group {
                    put(
                        (entry.temporalId & 0x07) << 5 | (entry.switchingUpPoint ? 0x10 : 0) | UInt8(
                            entry.references.count & 0x03) << 2)
                    for reference in entry.references { put(reference) }
                }
            }
        }
        return offset
    }
}
