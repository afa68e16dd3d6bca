#ifndef CWEBRTC_SRTP_CRYPTO_H
#define CWEBRTC_SRTP_CRYPTO_H
// Internal to CWebRTC (not in include/): libsrtp2's cipher and auth types on OpenSSL's libcrypto,
// registered in place of Debian's NSS ones (srtp_crypto.c).

/// Replaces libsrtp2's AES-ICM-128/256, AES-GCM-128 and HMAC-SHA1 types with ours. Call once,
/// after srtp_init and before any stream is made. libsrtp2 runs our known-answer vectors and its
/// own on each type as it replaces it. Returns an srtp_err_status_t (0 on success).
int cwebrtc_srtp_crypto_register(void);

/// Runs libsrtp2's self test of each of our types on our known-answer vectors (RFC 3711 B.2,
/// RFC 6188, the GCM specification's test case 4, RFC 2202), and RFC 3711 B.3's key
/// derivation on our AES-ICM type as libsrtp2's KDF drives it. Returns 0 or the first failure.
int cwebrtc_srtp_crypto_known_answers(void);
#endif
