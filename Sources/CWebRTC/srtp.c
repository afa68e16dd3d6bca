// SRTP on libsrtp2: one srtp_t per direction, ssrc_any_outbound / ssrc_any_inbound policies.
//
// libsrtp2 keeps the protocol (key derivation, rollover counter, replay window, SRTCP index);
// its AES-ICM, AES-GCM and HMAC-SHA1 implementations are replaced, once per process before the
// first session, by ours on OpenSSL's libcrypto (srtp_crypto.c): Debian's libsrtp2 runs them on
// NSS, which allocates some 14 times per packet; ours allocate only when a stream is made.
#include "cwebrtc_srtp.h"
#include "srtp_crypto.h"

#include <pthread.h>
#include <stdatomic.h>
#include <srtp2/srtp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cwebrtc_srtp {
    srtp_t session;
    int direction;
    int last_library_status;
};

// libsrtp2's crypto kernel, with its own (NSS) types: what the baseline may measure.
static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;
static srtp_err_status_t kernel_status = srtp_err_status_init_fail;
static void initialise_kernel(void) { kernel_status = srtp_init(); }

// Then our types in place of libsrtp2's, before any session is made: every session uses them.
static pthread_once_t library_once = PTHREAD_ONCE_INIT;
static srtp_err_status_t library_status = srtp_err_status_init_fail;
static atomic_int crypto_registered;
static void initialise_library(void) {
    pthread_once(&kernel_once, initialise_kernel);
    library_status = kernel_status;
    if (library_status != srtp_err_status_ok) return;
    library_status = (srtp_err_status_t)cwebrtc_srtp_crypto_register();
    atomic_store(&crypto_registered, library_status == srtp_err_status_ok);
}

int cwebrtc_srtp_uses_openssl_crypto(void) { return atomic_load(&crypto_registered); }

int cwebrtc_srtp_crypto_self_test(void) {
    pthread_once(&library_once, initialise_library);
    if (library_status != srtp_err_status_ok) return (int)library_status;
    return cwebrtc_srtp_crypto_known_answers();
}

_Static_assert(SRTP_MAX_TRAILER_LEN + 4 == 148, "CWEBRTC_SRTP_BASELINE_STRIDE assumes a 148-byte trailer");

int cwebrtc_srtp_maximum_trailer_bytes(void) { return SRTP_MAX_TRAILER_LEN + 4; }

int cwebrtc_srtp_key_and_salt_length(int profile) {
    switch (profile) {
    case CWEBRTC_SRTP_AES128_CM_SHA1_80: return SRTP_AES_128_KEY_LEN + SRTP_SALT_LEN;
    case CWEBRTC_SRTP_AEAD_AES_128_GCM: return SRTP_AES_128_KEY_LEN + SRTP_AEAD_SALT_LEN;
    default: return 0;
    }
}

int cwebrtc_srtp_create(cwebrtc_srtp **result, int profile, int direction, const uint8_t *key_and_salt,
                        size_t length) {
    *result = NULL;
    pthread_once(&library_once, initialise_library);
    if (library_status != srtp_err_status_ok) return CWEBRTC_SRTP_ERROR_LIBRARY;
    if (direction != CWEBRTC_SRTP_OUTBOUND && direction != CWEBRTC_SRTP_INBOUND)
        return CWEBRTC_SRTP_ERROR_BAD_PARAMETER;
    int expected = cwebrtc_srtp_key_and_salt_length(profile);
    if (expected == 0 || length != (size_t)expected) return CWEBRTC_SRTP_ERROR_BAD_PARAMETER;

    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    if (profile == CWEBRTC_SRTP_AES128_CM_SHA1_80) {
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy.rtp);
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy.rtcp);
    } else {
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp);
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp);
    }
    policy.ssrc.type = direction == CWEBRTC_SRTP_OUTBOUND ? ssrc_any_outbound : ssrc_any_inbound;
    // libsrtp2 copies the key when the stream is made.
    unsigned char key[SRTP_MAX_KEY_LEN];
    memcpy(key, key_and_salt, length);
    policy.key = key;
    policy.window_size = 1024;  // video bursts reorder more than the default 128
    policy.allow_repeat_tx = 1;  // a retransmission of a packet protects it again
    policy.next = NULL;

    cwebrtc_srtp *session = calloc(1, sizeof *session);
    if (!session) return CWEBRTC_SRTP_ERROR_LIBRARY;
    srtp_err_status_t status = srtp_create(&session->session, &policy);
    memset(key, 0, sizeof key);
    if (status != srtp_err_status_ok) {
        free(session);
        return status == srtp_err_status_bad_param ? CWEBRTC_SRTP_ERROR_BAD_PARAMETER : CWEBRTC_SRTP_ERROR_LIBRARY;
    }
    session->direction = direction;
    *result = session;
    return CWEBRTC_SRTP_OK;
}

void cwebrtc_srtp_free(cwebrtc_srtp *session) {
    if (!session) return;
    srtp_dealloc(session->session);
    free(session);
}

static int map_status(cwebrtc_srtp *session, srtp_err_status_t status) {
    session->last_library_status = (int)status;
    switch (status) {
    case srtp_err_status_ok: return CWEBRTC_SRTP_OK;
    case srtp_err_status_auth_fail: return CWEBRTC_SRTP_ERROR_AUTH;
    case srtp_err_status_replay_fail:
    case srtp_err_status_replay_old: return CWEBRTC_SRTP_ERROR_REPLAY;
    case srtp_err_status_bad_param:
    case srtp_err_status_parse_err: return CWEBRTC_SRTP_ERROR_MALFORMED;
    default: return CWEBRTC_SRTP_ERROR_LIBRARY;
    }
}

/// RTP: version 2, a 12-byte header, the CSRCs and the header extension within `length`.
static int valid_rtp(const uint8_t *packet, int length) {
    if (length < 12 || (packet[0] >> 6) != 2) return 0;
    int header = 12 + 4 * (packet[0] & 15);
    if (length < header) return 0;
    if (packet[0] & 0x10) {
        if (length < header + 4) return 0;
        header += 4 + 4 * (((int)packet[header + 2] << 8) | packet[header + 3]);
        if (length < header) return 0;
    }
    return 1;
}

/// RTCP: version 2, at least the 8-byte header of a sender or receiver report.
static int valid_rtcp(const uint8_t *packet, int length) { return length >= 8 && (packet[0] >> 6) == 2; }

int cwebrtc_srtp_protect_rtp(cwebrtc_srtp *session, void *packet, int *length) {
    if (session->direction != CWEBRTC_SRTP_OUTBOUND) return CWEBRTC_SRTP_ERROR_BAD_PARAMETER;
    if (!valid_rtp(packet, *length)) return CWEBRTC_SRTP_ERROR_MALFORMED;
    return map_status(session, srtp_protect(session->session, packet, length));
}

int cwebrtc_srtp_unprotect_rtp(cwebrtc_srtp *session, void *packet, int *length) {
    if (session->direction != CWEBRTC_SRTP_INBOUND) return CWEBRTC_SRTP_ERROR_BAD_PARAMETER;
    if (!valid_rtp(packet, *length)) return CWEBRTC_SRTP_ERROR_MALFORMED;
    return map_status(session, srtp_unprotect(session->session, packet, length));
}

int cwebrtc_srtp_protect_rtcp(cwebrtc_srtp *session, void *packet, int *length) {
    if (session->direction != CWEBRTC_SRTP_OUTBOUND) return CWEBRTC_SRTP_ERROR_BAD_PARAMETER;
    if (!valid_rtcp(packet, *length)) return CWEBRTC_SRTP_ERROR_MALFORMED;
    return map_status(session, srtp_protect_rtcp(session->session, packet, length));
}

int cwebrtc_srtp_unprotect_rtcp(cwebrtc_srtp *session, void *packet, int *length) {
    if (session->direction != CWEBRTC_SRTP_INBOUND) return CWEBRTC_SRTP_ERROR_BAD_PARAMETER;
    if (!valid_rtcp(packet, *length)) return CWEBRTC_SRTP_ERROR_MALFORMED;
    return map_status(session, srtp_unprotect_rtcp(session->session, packet, length));
}

int cwebrtc_srtp_last_library_status(const cwebrtc_srtp *session) { return session->last_library_status; }

// MARK: - Baseline

static double now_ns(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec * 1e9 + (double)time.tv_nsec;
}

int cwebrtc_srtp_baseline(int profile, int rtcp, int packet_size, int count, double *protect_ns,
                          double *unprotect_ns, int *openssl_crypto) {
    // libsrtp2's kernel only: in a process that has made no session yet, its own (NSS) types.
    pthread_once(&kernel_once, initialise_kernel);
    int key_length = cwebrtc_srtp_key_and_salt_length(profile);
    if (kernel_status != srtp_err_status_ok || key_length == 0 || packet_size < (rtcp ? 8 : 12) ||
        packet_size > 1500 || count <= 0 || count > 30000)
        return CWEBRTC_SRTP_ERROR_BAD_PARAMETER;
    unsigned char key[SRTP_MAX_KEY_LEN];
    for (int i = 0; i < key_length; i++) key[i] = (unsigned char)(i * 7 + 1);
    srtp_policy_t out_policy, in_policy;
    memset(&out_policy, 0, sizeof out_policy);
    if (profile == CWEBRTC_SRTP_AES128_CM_SHA1_80) {
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&out_policy.rtp);
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&out_policy.rtcp);
    } else {
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&out_policy.rtp);
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&out_policy.rtcp);
    }
    out_policy.key = key;
    out_policy.window_size = 1024;
    out_policy.allow_repeat_tx = 1;
    in_policy = out_policy;
    out_policy.ssrc.type = ssrc_any_outbound;
    in_policy.ssrc.type = ssrc_any_inbound;
    size_t stride = CWEBRTC_SRTP_BASELINE_STRIDE(packet_size);
    unsigned char *template = aligned_alloc(16, stride);
    unsigned char *slab = aligned_alloc(16, stride * (size_t)count);
    int *lengths = calloc((size_t)count, sizeof *lengths);
    srtp_t outbound = NULL, inbound = NULL;
    int status = CWEBRTC_SRTP_OK;
    int ours_before = cwebrtc_srtp_uses_openssl_crypto();
    if (!template || !slab || !lengths || srtp_create(&outbound, &out_policy) != srtp_err_status_ok ||
        srtp_create(&inbound, &in_policy) != srtp_err_status_ok)
        status = CWEBRTC_SRTP_ERROR_LIBRARY;
    // Types are bound when a stream is made: the answer is exact unless they changed meanwhile.
    if (cwebrtc_srtp_uses_openssl_crypto() != ours_before) status = CWEBRTC_SRTP_ERROR_LIBRARY;
    *openssl_crypto = ours_before;
    if (status == CWEBRTC_SRTP_OK) {
        for (int i = 0; i < packet_size; i++) template[i] = (unsigned char)(i * 31 + 5);
        template[0] = 0x80;
        if (rtcp) {
            // A sender report of packet_size bytes (its length field in 32-bit words minus one).
            template[1] = 200;
            template[2] = (unsigned char)((packet_size / 4 - 1) >> 8), template[3] = (unsigned char)(packet_size / 4 - 1);
            template[4] = 0x12, template[5] = 0x34, template[6] = 0x56, template[7] = 0x78;
        } else {
            template[1] = 96;
            template[8] = 0x12, template[9] = 0x34, template[10] = 0x56, template[11] = 0x78;
        }
        memset(slab, 0, stride * (size_t)count);  // touched before timing, as the caller's buffers would be

        // Protect: copy the template into the packet's buffer, set its sequence number (RTP),
        // protect (SRTCP numbers its packets itself).
        double start = now_ns();
        for (int i = 0; i < count && status == CWEBRTC_SRTP_OK; i++) {
            unsigned char *packet = slab + (size_t)i * stride;
            memcpy(packet, template, (size_t)packet_size);
            lengths[i] = packet_size;
            srtp_err_status_t result;
            if (rtcp) {
                result = srtp_protect_rtcp(outbound, packet, &lengths[i]);
            } else {
                packet[2] = (unsigned char)(i >> 8), packet[3] = (unsigned char)i;
                result = srtp_protect(outbound, packet, &lengths[i]);
            }
            if (result != srtp_err_status_ok) status = CWEBRTC_SRTP_ERROR_LIBRARY;
        }
        *protect_ns = (now_ns() - start) / count;

        // Unprotect the protected packets where they lie.
        start = now_ns();
        for (int i = 0; i < count && status == CWEBRTC_SRTP_OK; i++) {
            unsigned char *packet = slab + (size_t)i * stride;
            srtp_err_status_t result = rtcp ? srtp_unprotect_rtcp(inbound, packet, &lengths[i])
                                            : srtp_unprotect(inbound, packet, &lengths[i]);
            if (result != srtp_err_status_ok || lengths[i] != packet_size) status = CWEBRTC_SRTP_ERROR_LIBRARY;
        }
        *unprotect_ns = (now_ns() - start) / count;
    }
    if (outbound) srtp_dealloc(outbound);
    if (inbound) srtp_dealloc(inbound);
    free(template);
    free(slab);
    free(lengths);
    return status;
}
