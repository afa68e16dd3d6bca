#ifndef CWEBRTC_DTLS_H
#define CWEBRTC_DTLS_H
// DTLS 1.2 key agreement for DTLS-SRTP (OpenSSL on a memory BIO in, a callback BIO out).
// Plain C types only. An association is driven by one thread at a time.
#include <stddef.h>
#include <stdint.h>

/// Status codes of the cwebrtc_dtls_* functions.
enum {
    CWEBRTC_DTLS_OK = 0,
    /// The peer sent a fatal alert (named in the last error).
    CWEBRTC_DTLS_ERROR_ALERT = -1,
    /// The peer's certificate does not have the expected SHA-256 fingerprint.
    CWEBRTC_DTLS_ERROR_FINGERPRINT = -2,
    /// The handshake failed on our side (OpenSSL's reason in the last error).
    CWEBRTC_DTLS_ERROR_HANDSHAKE = -3,
    /// A datagram that is not a sequence of well-formed DTLS records.
    CWEBRTC_DTLS_ERROR_MALFORMED = -4,
    /// A call out of sequence (start on a server, keys before the handshake, use after failure).
    CWEBRTC_DTLS_ERROR_STATE = -5,
    /// The handshake ended without an SRTP protection profile both sides support.
    CWEBRTC_DTLS_ERROR_NO_SRTP_PROFILE = -6,
    /// The peer did not answer within OpenSSL's retransmission budget.
    CWEBRTC_DTLS_ERROR_TIMEOUT = -7,
    /// OpenSSL refused an operation that should not fail (allocation, key generation).
    CWEBRTC_DTLS_ERROR_INTERNAL = -8,
};

/// The DTLS roles.
enum { CWEBRTC_DTLS_ROLE_CLIENT = 0, CWEBRTC_DTLS_ROLE_SERVER = 1 };

/// SRTP protection profiles negotiated by use_srtp (RFC 5764, RFC 7714 identifiers).
enum { CWEBRTC_DTLS_SRTP_AES128_CM_SHA1_80 = 0x0001, CWEBRTC_DTLS_SRTP_AEAD_AES_128_GCM = 0x0007 };

/// Capacity for a fingerprint string "AB:CD:…" (32 bytes, 95 characters and the terminator).
#define CWEBRTC_DTLS_FINGERPRINT_CAPACITY 96

/// A self-signed ECDSA P-256 certificate and its key (reference counted by OpenSSL inside).
typedef struct cwebrtc_dtls_certificate cwebrtc_dtls_certificate;

/// A new self-signed ECDSA P-256 certificate, random serial, valid for 30 days; NULL on failure
/// with the reason in `error`.
cwebrtc_dtls_certificate *cwebrtc_dtls_certificate_generate(char *error, int error_capacity);
/// Releases a certificate (associations made with it keep their own references).
void cwebrtc_dtls_certificate_free(cwebrtc_dtls_certificate *certificate);
/// The certificate's SHA-256 fingerprint as "AB:CD:…" into `buffer` (CWEBRTC_DTLS_FINGERPRINT_CAPACITY).
int cwebrtc_dtls_certificate_fingerprint(const cwebrtc_dtls_certificate *certificate, char *buffer, int capacity);

/// Receives one outgoing datagram (at most the MTU). It must not call into the association.
typedef void (*cwebrtc_dtls_send_fn)(void *context, const uint8_t *datagram, size_t length);

/// One DTLS association.
typedef struct cwebrtc_dtls cwebrtc_dtls;

/// A new association; NULL on failure with the reason in `error`. `remote_fingerprint` is the
/// peer's "AB:CD:…" SHA-256 fingerprint (case-insensitive). `mtu` bounds every datagram sent.
cwebrtc_dtls *cwebrtc_dtls_new(const cwebrtc_dtls_certificate *certificate, int role, const char *remote_fingerprint,
                               int mtu, int first_retransmit_ms, cwebrtc_dtls_send_fn send, void *send_context,
                               char *error, int error_capacity);
/// Releases the association (without sending anything).
void cwebrtc_dtls_free(cwebrtc_dtls *dtls);
/// A client sends its ClientHello; a server does nothing.
int cwebrtc_dtls_start(cwebrtc_dtls *dtls);
/// Feeds one received datagram: handshake progress, retransmissions, close_notify.
int cwebrtc_dtls_receive(cwebrtc_dtls *dtls, const uint8_t *datagram, size_t length);
/// Milliseconds until cwebrtc_dtls_handle_timeout is due, or -1 when no timer runs.
int64_t cwebrtc_dtls_timeout_ms(cwebrtc_dtls *dtls);
/// Retransmits the last flight if its timer expired.
int cwebrtc_dtls_handle_timeout(cwebrtc_dtls *dtls);
/// 1 once the handshake completed and the peer's fingerprint matched.
int cwebrtc_dtls_is_connected(const cwebrtc_dtls *dtls);
/// 1 once the peer's close_notify arrived.
int cwebrtc_dtls_peer_closed(const cwebrtc_dtls *dtls);
/// The negotiated SRTP profile (CWEBRTC_DTLS_SRTP_*), or 0 before the handshake.
int cwebrtc_dtls_srtp_profile(const cwebrtc_dtls *dtls);
/// Exports `length` bytes of keying material with the label "EXTRACTOR-dtls_srtp".
int cwebrtc_dtls_export_srtp_keying_material(cwebrtc_dtls *dtls, uint8_t *output, size_t length);
/// Sends close_notify (once).
int cwebrtc_dtls_close(cwebrtc_dtls *dtls);
/// The sentence explaining the last failure ("" when none).
const char *cwebrtc_dtls_last_error(const cwebrtc_dtls *dtls);
#endif
