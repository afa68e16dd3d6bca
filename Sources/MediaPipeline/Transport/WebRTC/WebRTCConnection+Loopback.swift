extension WebRTCConnection {
    /// Two connections on 127.0.0.1 wired to each other, started (ICE checks and the DTLS
    /// handshake under way): `a` controls ICE and is the DTLS client, `b` the controlled side and
    /// the DTLS server. For the bench and the tests; `bFingerprint` replaces the fingerprint `a`
    /// expects of `b` (a test of a wrong one).
    struct LoopbackPair {
        let a: WebRTCConnection, b: WebRTCConnection
        /// The candidates each gathered (one host candidate on 127.0.0.1).
        let candidatesA: [String], candidatesB: [String]

        init(a aHandlers: Handlers, b bHandlers: Handlers, bFingerprint: String? = nil) throws {
            a = try WebRTCConnection(
                controllingICE: true, certificate: try DTLSCertificate.generate(), localAddresses: ["127.0.0.1"],
                handlers: aHandlers)
            b = try WebRTCConnection(
                controllingICE: false, certificate: try DTLSCertificate.generate(), localAddresses: ["127.0.0.1"],
                dtlsRole: .server, handlers: bHandlers)
            candidatesA = try a.gatherCandidates()
            candidatesB = try b.gatherCandidates()
            try b.start(
                remoteCredentials: a.localCredentials, remoteCandidates: candidatesA,
                remoteFingerprint: a.certificate.fingerprint)
            try a.start(
                remoteCredentials: b.localCredentials, remoteCandidates: candidatesB,
                remoteFingerprint: bFingerprint ?? b.certificate.fingerprint)
        }

        /// Closes both.
        func close() {
            a.close()
            b.close()
        }
    }
}
