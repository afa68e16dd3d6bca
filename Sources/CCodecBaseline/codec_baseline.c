#include "codec_baseline.h"

#include <opus/opus.h>
#include <stdlib.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vpx_encoder.h>

// MARK: - Opus

void *mp_twin_opus_encoder_create(int channels, int bitrate, int complexity, int vbr_constraint) {
    int error = 0;
    OpusEncoder *encoder = opus_encoder_create(48000, channels, OPUS_APPLICATION_AUDIO, &error);
    if (!encoder || error != OPUS_OK) return NULL;
    opus_encoder_ctl(encoder, OPUS_SET_BITRATE(bitrate));
    opus_encoder_ctl(encoder, OPUS_SET_COMPLEXITY(complexity));
    opus_encoder_ctl(encoder, OPUS_SET_VBR(1));
    opus_encoder_ctl(encoder, OPUS_SET_VBR_CONSTRAINT(vbr_constraint));
    opus_encoder_ctl(encoder, OPUS_SET_INBAND_FEC(0));
    opus_encoder_ctl(encoder, OPUS_SET_PACKET_LOSS_PERC(0));
    opus_encoder_ctl(encoder, OPUS_SET_DTX(0));
    return encoder;
}

int mp_twin_opus_encode(void *encoder, const int16_t *pcm, int frame_size, uint8_t *packet, int max_packet) {
    return opus_encode(encoder, pcm, frame_size, packet, max_packet);
}

void mp_twin_opus_encoder_destroy(void *encoder) { opus_encoder_destroy(encoder); }

void *mp_twin_opus_decoder_create(int channels) {
    int error = 0;
    OpusDecoder *decoder = opus_decoder_create(48000, channels, &error);
    return error == OPUS_OK ? decoder : NULL;
}

int mp_twin_opus_decode(void *decoder, const uint8_t *packet, int size, int16_t *pcm, int max_frame_size) {
    return opus_decode(decoder, packet, size, pcm, max_frame_size, 0);
}

void mp_twin_opus_decoder_destroy(void *decoder) { opus_decoder_destroy(decoder); }

// MARK: - VPX

typedef struct {
    vpx_codec_ctx_t ctx;
    vpx_image_t image;
    int width, height;
} twin_vpx_encoder;

void *mp_twin_vpx_encoder_create(int codec, int width, int height, int fps, int bitrate_bps, int speed, int threads) {
    vpx_codec_iface_t *iface = codec == 9 ? vpx_codec_vp9_cx() : vpx_codec_vp8_cx();
    vpx_codec_enc_cfg_t cfg;
    if (vpx_codec_enc_config_default(iface, &cfg, 0) != VPX_CODEC_OK) return NULL;
    cfg.g_w = width;
    cfg.g_h = height;
    cfg.g_timebase.num = 1;
    cfg.g_timebase.den = fps;
    cfg.g_threads = threads;
    cfg.g_lag_in_frames = 0;
    cfg.g_pass = VPX_RC_ONE_PASS;
    cfg.g_error_resilient = 0;
    cfg.rc_end_usage = VPX_CBR;
    cfg.rc_target_bitrate = (bitrate_bps + 500) / 1000;
    cfg.rc_dropframe_thresh = 0;
    cfg.rc_resize_allowed = 0;
    cfg.rc_min_quantizer = 2;
    cfg.rc_max_quantizer = 56;
    cfg.rc_undershoot_pct = 100;
    cfg.rc_overshoot_pct = 15;
    cfg.rc_buf_initial_sz = 500;
    cfg.rc_buf_optimal_sz = 600;
    cfg.rc_buf_sz = 1000;
    cfg.kf_mode = VPX_KF_AUTO;
    cfg.kf_min_dist = 0;
    cfg.kf_max_dist = 3000;
    twin_vpx_encoder *encoder = calloc(1, sizeof *encoder);
    if (!encoder || vpx_codec_enc_init(&encoder->ctx, iface, &cfg, 0) != VPX_CODEC_OK) {
        free(encoder);
        return NULL;
    }
    vpx_codec_control(&encoder->ctx, VP8E_SET_CPUUSED, speed);
    if (codec == 9) {
        vpx_codec_control(&encoder->ctx, VP9E_SET_AQ_MODE, 3);
        vpx_codec_control(&encoder->ctx, VP9E_SET_ROW_MT, threads > 1 ? 1 : 0);
    } else {
        vpx_codec_control(&encoder->ctx, VP8E_SET_STATIC_THRESHOLD, 1);
        vpx_codec_control(&encoder->ctx, VP8E_SET_MAX_INTRA_BITRATE_PCT, 300);
    }
    encoder->width = width;
    encoder->height = height;
    return encoder;
}

long mp_twin_vpx_encode(void *handle, const uint8_t *y, const uint8_t *u, const uint8_t *v, int stride_y,
                        int stride_uv, long pts) {
    twin_vpx_encoder *encoder = handle;
    vpx_image_t *image = &encoder->image;
    vpx_img_wrap(image, VPX_IMG_FMT_I420, encoder->width, encoder->height, 1, (uint8_t *)y);
    image->planes[0] = (uint8_t *)y;
    image->planes[1] = (uint8_t *)u;
    image->planes[2] = (uint8_t *)v;
    image->stride[0] = stride_y;
    image->stride[1] = image->stride[2] = stride_uv;
    if (vpx_codec_encode(&encoder->ctx, image, pts, 1, 0, VPX_DL_REALTIME) != VPX_CODEC_OK) return -1;
    long total = 0;
    vpx_codec_iter_t iter = NULL;
    const vpx_codec_cx_pkt_t *pkt;
    while ((pkt = vpx_codec_get_cx_data(&encoder->ctx, &iter)) != NULL) {
        if (pkt->kind == VPX_CODEC_CX_FRAME_PKT) total += (long)pkt->data.frame.sz;
    }
    return total;
}

void mp_twin_vpx_encoder_destroy(void *handle) {
    twin_vpx_encoder *encoder = handle;
    vpx_codec_destroy(&encoder->ctx);
    free(encoder);
}

void *mp_twin_vpx_decoder_create(int codec, int threads) {
    vpx_codec_dec_cfg_t cfg = {.threads = threads, .w = 0, .h = 0};
    vpx_codec_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx || vpx_codec_dec_init(ctx, codec == 9 ? vpx_codec_vp9_dx() : vpx_codec_vp8_dx(), &cfg, 0) != VPX_CODEC_OK) {
        free(ctx);
        return NULL;
    }
    return ctx;
}

long mp_twin_vpx_decode(void *decoder, const uint8_t *frame, size_t size) {
    vpx_codec_ctx_t *ctx = decoder;
    if (vpx_codec_decode(ctx, frame, (unsigned int)size, NULL, 0) != VPX_CODEC_OK) return -1;
    long width = 0;
    vpx_codec_iter_t iter = NULL;
    vpx_image_t *img;
    while ((img = vpx_codec_get_frame(ctx, &iter)) != NULL) width = img->d_w;
    return width;
}

void mp_twin_vpx_decoder_destroy(void *decoder) {
    vpx_codec_destroy(decoder);
    free(decoder);
}

// MARK: - Whole loops

long mp_baseline_opus_encode(const int16_t *pcm, int frame_count, int frame_size, int channels, int bitrate,
                             int complexity, int vbr_constraint, uint8_t *packets, int max_packet, int *packet_sizes) {
    void *encoder = mp_twin_opus_encoder_create(channels, bitrate, complexity, vbr_constraint);
    if (!encoder) return -1;
    long total = 0;
    for (int i = 0; i < frame_count; i++) {
        int n = mp_twin_opus_encode(encoder, pcm + (size_t)i * frame_size * channels, frame_size,
                                    packets + (size_t)i * max_packet, max_packet);
        if (n < 0) { total = -1; break; }
        packet_sizes[i] = n;
        total += n;
    }
    mp_twin_opus_encoder_destroy(encoder);
    return total;
}

long mp_baseline_opus_decode(const uint8_t *packets, int max_packet, const int *packet_sizes, int packet_count,
                             int channels, int16_t *pcm, int max_frame_size) {
    void *decoder = mp_twin_opus_decoder_create(channels);
    if (!decoder) return -1;
    long total = 0;
    for (int i = 0; i < packet_count; i++) {
        int n = mp_twin_opus_decode(decoder, packets + (size_t)i * max_packet, packet_sizes[i], pcm, max_frame_size);
        if (n < 0) { total = -1; break; }
        total += n;
    }
    mp_twin_opus_decoder_destroy(decoder);
    return total;
}

long mp_baseline_vpx_encode(int codec, const uint8_t *const *pictures, int frame_count, int width, int height,
                            int fps, int bitrate_bps, int speed, int threads) {
    void *encoder = mp_twin_vpx_encoder_create(codec, width, height, fps, bitrate_bps, speed, threads);
    if (!encoder) return -1;
    long total = 0;
    int chroma_w = (width + 1) / 2, chroma_h = (height + 1) / 2;
    for (int i = 0; i < frame_count; i++) {
        const uint8_t *y = pictures[i];
        const uint8_t *u = y + (size_t)width * height;
        const uint8_t *v = u + (size_t)chroma_w * chroma_h;
        long n = mp_twin_vpx_encode(encoder, y, u, v, width, chroma_w, i);
        if (n < 0) { total = -1; break; }
        total += n;
    }
    mp_twin_vpx_encoder_destroy(encoder);
    return total;
}

long mp_baseline_vpx_decode(int codec, const uint8_t *const *frames, const size_t *sizes, int frame_count, int threads) {
    void *decoder = mp_twin_vpx_decoder_create(codec, threads);
    if (!decoder) return -1;
    long total = 0;
    for (int i = 0; i < frame_count; i++) {
        long width = mp_twin_vpx_decode(decoder, frames[i], sizes[i]);
        if (width < 0) { total = -1; break; }
        total += width;
    }
    mp_twin_vpx_decoder_destroy(decoder);
    return total;
}
