#ifndef CWEBRTC_SRTP_H
#define CWEBRTC_SRTP_H
// SRTP and SRTCP (libsrtp2, its ciphers and HMAC replaced by ours on OpenSSL's libcrypto), one
// session per direction. Plain C types only. Packets are protected and unprotected in place;
// nothing is allocated per packet.
#include <stddef.h>
#include <stdint.h>

/// Status codes of the cwebrtc_srtp_* functions.
enum {
    CWEBRTC_SRTP_OK = 0,
    /// The packet's authentication tag did not verify (tampered, wrong key, truncated tag).
    CWEBRTC_SRTP_ERROR_AUTH = -1,
    /// The packet's index was seen before or is older than the replay window.
    CWEBRTC_SRTP_ERROR_REPLAY = -2,
    /// The packet is too short or its header is inconsistent.
    CWEBRTC_SRTP_ERROR_MALFORMED = -3,
    /// An argument libsrtp2 refused (profile, key length, direction).
    CWEBRTC_SRTP_ERROR_BAD_PARAMETER = -4,
    /// Any other libsrtp2 failure; cwebrtc_srtp_last_library_status tells which.
    CWEBRTC_SRTP_ERROR_LIBRARY = -5,
};

/// Protection profiles (the DTLS-SRTP identifiers of RFC 5764 and RFC 7714).
enum { CWEBRTC_SRTP_AES128_CM_SHA1_80 = 0x0001, CWEBRTC_SRTP_AEAD_AES_128_GCM = 0x0007 };

/// Directions: outbound sessions protect, inbound sessions unprotect (any SSRC).
enum { CWEBRTC_SRTP_OUTBOUND = 0, CWEBRTC_SRTP_INBOUND = 1 };

/// Bytes a buffer must have free after a packet before protecting it (tag, MKI, SRTCP index).
int cwebrtc_srtp_maximum_trailer_bytes(void);
/// Master key and salt bytes of a profile (30 for AES128_CM_SHA1_80, 28 for AEAD_AES_128_GCM), or 0.
int cwebrtc_srtp_key_and_salt_length(int profile);

/// One SRTP session (one direction). Used by one thread at a time.
typedef struct cwebrtc_srtp cwebrtc_srtp;

/// Creates a session in `*session`; `key_and_salt` is the master key followed by the master salt.
int cwebrtc_srtp_create(cwebrtc_srtp **session, int profile, int direction, const uint8_t *key_and_salt,
                        size_t length);
/// Releases a session.
void cwebrtc_srtp_free(cwebrtc_srtp *session);
/// Protects the RTP packet at `packet` in place; `*length` in: RTP bytes, out: SRTP bytes.
int cwebrtc_srtp_protect_rtp(cwebrtc_srtp *session, void *packet, int *length);
/// Unprotects the SRTP packet at `packet` in place; `*length` in: SRTP bytes, out: RTP bytes.
int cwebrtc_srtp_unprotect_rtp(cwebrtc_srtp *session, void *packet, int *length);
/// Protects the RTCP compound packet at `packet` in place.
int cwebrtc_srtp_protect_rtcp(cwebrtc_srtp *session, void *packet, int *length);
/// Unprotects the SRTCP packet at `packet` in place.
int cwebrtc_srtp_unprotect_rtcp(cwebrtc_srtp *session, void *packet, int *length);
/// libsrtp2's own status (srtp_err_status_t) of the session's last failure.
int cwebrtc_srtp_last_library_status(const cwebrtc_srtp *session);

/// Bytes between packets in the baselines' slabs: the packet, the trailer, rounded up to 16.
#define CWEBRTC_SRTP_BASELINE_STRIDE(packet_size) ((((size_t)(packet_size) + 148u) + 15u) / 16u * 16u)

/// Whether libsrtp2's AES-ICM, AES-GCM and HMAC-SHA1 types have been replaced by ours on
/// OpenSSL (done once per process, when the first session is made): 1 or 0.
int cwebrtc_srtp_uses_openssl_crypto(void);
/// Tests only: runs libsrtp2's self test on each of our crypto types with our known-answer vectors
/// (RFC 3711 B.2, RFC 6188, GCM test case 4, RFC 2202) and RFC 3711 B.3's key derivation on
/// our AES-ICM; registers the types first if needed. 0, or libsrtp2's status of the failure.
int cwebrtc_srtp_crypto_self_test(void);

/// The baseline: libsrtp2 called directly, `count` (1…30000) packets of `packet_size` bytes
/// (`rtcp` 0: RTP packets of one SSRC; 1: RTCP sender reports), each copied from a template into
/// its own slot of a slab, given its sequence number (RTP) and protected; then all of them
/// unprotected where they lie. `profile` as cwebrtc_srtp_create. Nanoseconds per packet into the
/// outputs. Allocates its slab before timing. It does not register our crypto types: in a process
/// that has made no session yet it measures libsrtp2 with its own (Debian: NSS) crypto, and
/// `*openssl_crypto` is 0; after the first session it measures libsrtp2 on our types (1).
int cwebrtc_srtp_baseline(int profile, int rtcp, int packet_size, int count, double *protect_ns,
                          double *unprotect_ns, int *openssl_crypto);
#endif
