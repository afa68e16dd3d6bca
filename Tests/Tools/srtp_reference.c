// Stock libsrtp2 as a reference for the SRTP interop tests (SRTPCryptoTests): a process of its
// own, linked with -lsrtp2 alone, so it runs libsrtp2's own crypto (Debian: NSS), never the
// OpenSSL types MediaPipeline registers in its process.
//
//   srtp_reference KEY_AES_CM_SHA1_80 KEY_AEAD_AES_128_GCM  < requests > answers
//
// Keys in hex (master key then salt: 30 and 28 bytes). Sessions as MediaPipeline makes them: one
// outbound (ssrc_any_outbound) and one inbound (ssrc_any_inbound) per profile, window 1024,
// allow_repeat_tx. Each request line is "PROFILE OPERATION HEX", PROFILE 1 (AES128_CM_SHA1_80)
// or 7 (AEAD_AES_128_GCM), OPERATION protect-rtp, protect-rtcp, unprotect-rtp or unprotect-rtcp;
// each answer line is "ok HEX" or "error STATUS" (libsrtp2's srtp_err_status_t).
#include <srtp2/srtp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int from_hex(const char *text, unsigned char *bytes, int capacity) {
    int length = 0;
    while (text[0] && text[1] && text[0] != '\n') {
        unsigned int value;
        if (length == capacity || sscanf(text, "%2x", &value) != 1) return -1;
        bytes[length++] = (unsigned char)value;
        text += 2;
    }
    return length;
}

static int make(srtp_t *session, int profile, int outbound, const char *hex) {
    unsigned char key[64];
    int length = from_hex(hex, key, sizeof key);
    srtp_policy_t policy;
    memset(&policy, 0, sizeof policy);
    if (profile == 1) {
        if (length != 30) return -1;
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy.rtp);
        srtp_crypto_policy_set_aes_cm_128_hmac_sha1_80(&policy.rtcp);
    } else {
        if (length != 28) return -1;
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp);
        srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp);
    }
    policy.ssrc.type = outbound ? ssrc_any_outbound : ssrc_any_inbound;
    policy.key = key;
    policy.window_size = 1024;
    policy.allow_repeat_tx = 1;
    return srtp_create(session, &policy) == srtp_err_status_ok ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc != 3 || srtp_init() != srtp_err_status_ok) return 2;
    srtp_t out_cm, in_cm, out_gcm, in_gcm;
    if (make(&out_cm, 1, 1, argv[1]) || make(&in_cm, 1, 0, argv[1]) || make(&out_gcm, 7, 1, argv[2]) ||
        make(&in_gcm, 7, 0, argv[2]))
        return 3;
    char *line = NULL;
    size_t size = 0;
    static unsigned char packet[4096] __attribute__((aligned(16)));
    while (getline(&line, &size, stdin) > 0) {
        int profile;
        char operation[32];
        int offset = 0;
        if (sscanf(line, "%d %31s %n", &profile, operation, &offset) != 2) return 4;
        int length = from_hex(line + offset, packet, 2048);
        if (length < 0) return 5;
        srtp_t out = profile == 1 ? out_cm : out_gcm, in = profile == 1 ? in_cm : in_gcm;
        srtp_err_status_t status;
        if (!strcmp(operation, "protect-rtp")) status = srtp_protect(out, packet, &length);
        else if (!strcmp(operation, "protect-rtcp")) status = srtp_protect_rtcp(out, packet, &length);
        else if (!strcmp(operation, "unprotect-rtp")) status = srtp_unprotect(in, packet, &length);
        else if (!strcmp(operation, "unprotect-rtcp")) status = srtp_unprotect_rtcp(in, packet, &length);
        else return 6;
        if (status != srtp_err_status_ok) {
            printf("error %d\n", (int)status);
            continue;
        }
        printf("ok ");
        for (int i = 0; i < length; i++) printf("%02x", packet[i]);
        printf("\n");
    }
    free(line);
    return 0;
}
