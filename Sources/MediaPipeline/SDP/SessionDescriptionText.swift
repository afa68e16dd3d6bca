/// Why an SDP line is wrong (the parser adds the line's number and text).
private struct LineFault: Error {
    let why: String
    init(_ why: String) { self.why = why }
}

extension SessionDescription {
    /// Reads SDP text.
    ///
    /// Attributes it does not know are kept (``attributes``, ``Media/attributes``); a line that
    /// breaks the grammar of one it knows is an error.
    /// - Throws: ``MediaError/Code/invalidFormat`` naming the line (number and text) at fault.
    public init(parsing text: String) throws {
        self.init(name: "-", connectionAddress: nil, media: [])
        var sawVersion = false
        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.trimmingSuffix()
            guard !line.isEmpty else { continue }
            do {
                guard line.count >= 2, line.dropFirst().first == "=" else { throw LineFault("not a 'x=value' line") }
                if line.first == "v" { sawVersion = true }
                try read(type: line.first!, value: String(line.dropFirst(2)))
            } catch let fault as LineFault {
                throw MediaError.invalidFormat("SDP line \(index + 1) '\(line.prefix(80))': \(fault.why)")
            }
        }
        guard sawVersion else { throw MediaError.invalidFormat("SDP has no 'v=0' line") }
        // Static payload types without rtpmap are none of ours; dynamic ones must be described,
        // except in a declined WebRTC section, which may list one bare.
        for section in media where section.kind == "audio" || section.kind == "video" {
            if section.port == 0 && section.isWebRTC { continue }
            for format in section.formats where format.payloadType >= 96 && format.encoding.isEmpty {
                throw MediaError.invalidFormat(
                    "SDP \(section.kind) payload type \(format.payloadType) has no rtpmap line")
            }
        }
    }

    /// Reads one line into the description.
    private mutating func read(type: Character, value: String) throws {
        let fields = value.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        switch type {
        case "v":
            guard value == "0" else { throw LineFault("version \(value); SDP has version 0") }
        case "o":
            guard fields.count >= 6 else { throw LineFault("an origin needs 6 fields") }
            sessionID = fields[1]
            sessionVersion = fields[2]
            originAddress = fields[5]
        case "s":
            name = value
        case "c":
            guard fields.count >= 3, fields[0] == "IN", ["IP4", "IP6"].contains(fields[1]) else {
                throw LineFault("a connection must be 'IN IP4|IP6 ADDRESS'")
            }
            let address = String(fields[2].split(separator: "/").first ?? "")
            if media.isEmpty {
                connectionAddress = address
            } else {
                media[media.count - 1].connectionAddress = address
            }
        case "m":
            guard fields.count >= 4, let port = Int(fields[1].split(separator: "/").first ?? ""),
                (0...65535).contains(port)
            else { throw LineFault("a media line must be 'KIND PORT PROTO FORMAT...'") }
            var section = Media(kind: fields[0], port: port, transport: fields[2], formats: [])
            if section.carriesRTP {
                for field in fields[3...] {
                    guard let payloadType = Int(field), (0...127).contains(payloadType) else {
                        throw LineFault("payload type '\(field)' is not 0...127")
                    }
                    section.formats.append(Media.Format(payloadType: payloadType, encoding: "", clockRate: 0))
                }
            } else {
                section.otherFormats = Array(fields[3...])
            }
            media.append(section)
        case "a":
            let (name, argument) = value.splitOnce(":")
            if media.isEmpty {
                try readSessionAttribute(name, argument, value)
            } else {
                try media[media.count - 1].readAttribute(name, argument, value)
            }
        default:
            break  // t=, b=, i=, … are not needed here
        }
    }

    /// Reads a session-level attribute.
    private mutating func readSessionAttribute(_ name: String, _ argument: String, _ whole: String) throws {
        switch name {
        case "group":
            let fields = argument.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            guard let semantics = fields.first else { throw LineFault("a group must be 'SEMANTICS MID...'") }
            groups.append(Group(semantics: semantics, mids: Array(fields.dropFirst())))
        case "msid-semantic":
            let semantic = argument.trimmingCharacters(in: .whitespaces)
            guard !semantic.isEmpty else { throw LineFault("msid-semantic needs a value") }
            msidSemantic = semantic
        default:
            if let direction = Direction(rawValue: name), argument.isEmpty {
                self.direction = direction
            } else if try !transportAttributes.read(name, argument) {
                attributes.append(whole)
            }
        }
    }
}

extension SessionDescription.TransportAttributes {
    /// Reads `name`:`argument` when it is an ICE or DTLS attribute; false when it is none.
    fileprivate mutating func read(_ name: String, _ argument: String) throws -> Bool {
        switch name {
        case "ice-ufrag", "ice-pwd":
            guard !argument.isEmpty, !argument.contains(" ") else { throw LineFault("\(name) needs one token") }
            if name == "ice-ufrag" { iceUfrag = argument } else { icePassword = argument }
        case "ice-options":
            iceOptions = argument.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        case "fingerprint":
            if let reason = SessionDescription.Fingerprint.fault(argument) { throw LineFault(reason) }
            fingerprints.append(try SessionDescription.Fingerprint(parsing: argument))
        case "setup":
            guard let role = SessionDescription.SetupRole(rawValue: argument) else {
                throw LineFault("setup must be actpass, active, passive or holdconn")
            }
            setup = role
        case "candidate":
            let fields = argument.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 8, let component = Int(fields[1]), (1...256).contains(component),
                let port = Int(fields[5]), (0...65535).contains(port), fields[6] == "typ"
            else {
                throw LineFault("a candidate must be 'FOUNDATION COMPONENT TRANSPORT PRIORITY ADDRESS PORT typ TYPE…'")
            }
            candidates.append(argument)
        case "end-of-candidates":
            endOfCandidates = true
        default:
            return false
        }
        return true
    }
}

extension SessionDescription.Media {
    /// Reads a section's attribute.
    fileprivate mutating func readAttribute(_ name: String, _ argument: String, _ whole: String) throws {
        switch name {
        case "rtpmap":
            let parts = argument.split(separator: " ", maxSplits: 1).map(String.init)
            let codec = parts.count == 2 ? parts[1].split(separator: "/").map(String.init) : []
            guard parts.count == 2, let payloadType = Int(parts[0]), codec.count >= 2,
                let clockRate = Int(codec[1]), clockRate > 0
            else { throw LineFault("rtpmap must be 'PT ENCODING/CLOCKRATE[/CHANNELS]'") }
            guard let f = formats.firstIndex(where: { $0.payloadType == payloadType }) else {
                throw LineFault("payload type \(payloadType) is not on its m= line")
            }
            formats[f].encoding = codec[0]
            formats[f].clockRate = clockRate
            formats[f].channels = codec.count > 2 ? Int(codec[2]) ?? 1 : 1
        case "fmtp", "rtcp-fb":
            let (pt, rest) = argument.splitOnce(" ")
            let targets = formats.indices.filter { pt == "*" || String(formats[$0].payloadType) == pt }
            guard !targets.isEmpty else { throw LineFault("payload type \(pt) is not on its m= line") }
            for f in targets {
                if name == "fmtp" {
                    formats[f].parameters = rest
                } else {
                    formats[f].feedback.append(rest)
                }
            }
        case "rtcp":
            guard let port = Int(argument.split(separator: " ").first ?? ""), (1...65535).contains(port) else {
                throw LineFault("rtcp must give a port")
            }
            rtcpPort = port
        case "rtcp-mux":
            rtcpMux = true
        case "rtcp-rsize":
            rtcpReducedSize = true
        case "ssrc":
            let (number, attribute) = argument.splitOnce(" ")
            guard let ssrc = UInt32(number) else { throw LineFault("ssrc must start with a 32-bit number") }
            let (key, keyValue) = attribute.splitOnce(":")
            if attribute.isEmpty || key == "cname" || key == "msid" {
                guard attribute.isEmpty || !keyValue.isEmpty else { throw LineFault("ssrc \(key) needs a value") }
            }
            var at = sources.firstIndex { $0.ssrc == ssrc }
            if at == nil {
                sources.append(Source(ssrc: ssrc))
                at = sources.count - 1
            }
            if key == "cname" { sources[at!].cname = keyValue }
            if key == "msid" { sources[at!].msid = keyValue }
        case "ssrc-group":
            let fields = argument.split(separator: " ", omittingEmptySubsequences: true)
            let ssrcs = fields.dropFirst().compactMap { UInt32($0) }
            guard fields.count >= 2, ssrcs.count == fields.count - 1 else {
                throw LineFault("ssrc-group must be 'SEMANTICS SSRC...' with 32-bit SSRCs")
            }
            sourceGroups.append(SourceGroup(semantics: String(fields[0]), ssrcs: ssrcs))
        case "mid":
            guard !argument.isEmpty, !argument.contains(" ") else { throw LineFault("mid needs one token") }
            mid = argument
        case "msid":
            let fields = argument.split(separator: " ", omittingEmptySubsequences: true)
            guard (1...2).contains(fields.count) else { throw LineFault("msid must be 'STREAM [TRACK]'") }
            msid = argument
        case "extmap":
            let fields = argument.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            let head = fields.first?.split(separator: "/", maxSplits: 1) ?? []
            guard fields.count >= 2, let id = Int(head.first ?? ""), (0...65535).contains(id) else {
                throw LineFault("extmap must be 'ID[/DIRECTION] URI [ATTRIBUTES]'")
            }
            var direction: SessionDescription.Direction?
            if head.count == 2 {
                guard let stated = SessionDescription.Direction(rawValue: String(head[1])) else {
                    throw LineFault("extmap direction '\(head[1])' is not sendrecv, sendonly, recvonly or inactive")
                }
                direction = stated
            }
            headerExtensions.append(
                HeaderExtension(
                    id: id, direction: direction, uri: String(fields[1]),
                    attributes: fields.count > 2 ? String(fields[2]) : nil))
        default:
            if let stated = SessionDescription.Direction(rawValue: name), argument.isEmpty {
                direction = stated
            } else if try !transportAttributes.read(name, argument) {
                attributes.append(whole)
            }
        }
    }
}

extension SessionDescription {
    /// The description as SDP text (CRLF line ends).
    public var text: String {
        let family = (connectionAddress ?? originAddress).contains(":") ? "IP6" : "IP4"
        var lines = [
            "v=0", "o=- \(sessionID) \(sessionVersion) IN \(family) \(originAddress)", "s=\(name)",
        ]
        if let connectionAddress { lines.append("c=IN \(family) \(connectionAddress)") }
        lines.append("t=0 0")
        for group in groups { lines.append("a=group:" + ([group.semantics] + group.mids).joined(separator: " ")) }
        if let msidSemantic { lines.append("a=msid-semantic: \(msidSemantic)") }
        if let direction { lines.append("a=\(direction.rawValue)") }
        transportAttributes.write(credentials: true, to: &lines)
        lines += attributes.map { "a=" + $0 }
        transportAttributes.write(credentials: false, to: &lines)
        for section in media {
            let formats = section.formats.map { String($0.payloadType) } + section.otherFormats
            lines.append("m=\(section.kind) \(section.port) \(section.transport) " + formats.joined(separator: " "))
            if let address = section.connectionAddress {
                lines.append("c=IN \(address.contains(":") ? "IP6" : "IP4") \(address)")
            }
            if let port = section.rtcpPort { lines.append("a=rtcp:\(port)") }
            section.transportAttributes.write(credentials: true, to: &lines)
            if let mid = section.mid { lines.append("a=mid:\(mid)") }
            for e in section.headerExtensions {
                let direction = e.direction.map { "/" + $0.rawValue } ?? ""
                lines.append("a=extmap:\(e.id)\(direction) \(e.uri)" + (e.attributes.map { " " + $0 } ?? ""))
            }
            if let direction = section.direction { lines.append("a=\(direction.rawValue)") }
            if let msid = section.msid { lines.append("a=msid:\(msid)") }
            if section.rtcpMux { lines.append("a=rtcp-mux") }
            if section.rtcpReducedSize { lines.append("a=rtcp-rsize") }
            for format in section.formats {
                let channels = format.channels > 1 ? "/\(format.channels)" : ""
                if !format.encoding.isEmpty {
                    lines.append("a=rtpmap:\(format.payloadType) \(format.encoding)/\(format.clockRate)\(channels)")
                }
                if let parameters = format.parameters { lines.append("a=fmtp:\(format.payloadType) \(parameters)") }
                for feedback in format.feedback { lines.append("a=rtcp-fb:\(format.payloadType) \(feedback)") }
            }
            for group in section.sourceGroups {
                lines.append(
                    "a=ssrc-group:" + ([group.semantics] + group.ssrcs.map(String.init)).joined(separator: " "))
            }
            for source in section.sources {
                if let cname = source.cname { lines.append("a=ssrc:\(source.ssrc) cname:\(cname)") }
                if let msid = source.msid { lines.append("a=ssrc:\(source.ssrc) msid:\(msid)") }
                if source.cname == nil && source.msid == nil { lines.append("a=ssrc:\(source.ssrc)") }
            }
            lines += section.attributes.map { "a=" + $0 }
            section.transportAttributes.write(credentials: false, to: &lines)
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}

extension SessionDescription.TransportAttributes {
    /// Appends the attribute lines: the credentials, options, fingerprints and setup, or the
    /// candidates and end-of-candidates.
    fileprivate func write(credentials: Bool, to lines: inout [String]) {
        if credentials {
            if let iceUfrag { lines.append("a=ice-ufrag:\(iceUfrag)") }
            if let icePassword { lines.append("a=ice-pwd:\(icePassword)") }
            if !iceOptions.isEmpty { lines.append("a=ice-options:" + iceOptions.joined(separator: " ")) }
            lines += fingerprints.map { "a=fingerprint:" + $0.text }
            if let setup { lines.append("a=setup:\(setup.rawValue)") }
        } else {
            lines += candidates.map { "a=candidate:" + $0 }
            if endOfCandidates { lines.append("a=end-of-candidates") }
        }
    }
}
extension Substring {
    fileprivate func trimmingSuffix() -> Substring {
        var end = endIndex
        while end > startIndex, let last = self[startIndex..<end].last, last == " " || last == "\t" || last == "\r" {
            end = index(before: end)
        }
        return self[startIndex..<end]
    }
}

extension String {
    /// The text before and after the first `separator` (all of it and "" when there is none).
    fileprivate func splitOnce(_ separator: Character) -> (String, String) {
        guard let at = firstIndex(of: separator) else { return (self, "") }
        return (String(self[..<at]), String(self[index(after: at)...]))
    }
}
