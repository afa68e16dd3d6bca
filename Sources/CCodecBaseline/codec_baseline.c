#include "codec_baseline.h"

#include <opus/opus.h>
#include <stdlib.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vpx_encoder.h>

long mp_baseline_opus_encode(const int16_t *pcm, int frame_count, int frame_size, int channels, int bitrate,
                             int complexity, int vbr_constraint, uint8_t *packets, int max_packet, int *packet_sizes) {
    int error = 0;
    OpusEncoder *encoder = opus_encoder_create(48000, channels, OPUS_APPLICATION_AUDIO, &error);
    if (!encoder || error != OPUS_OK) return -1;
    opus_encoder_ctl(encoder, OPUS_SET_BITRATE(bitrate));
    opus_encoder_ctl(encoder, OPUS_SET_COMPLEXITY(complexity));
    opus_encoder_ctl(encoder, OPUS_SET_VBR(1));
    opus_encoder_ctl(encoder, OPUS_SET_VBR_CONSTRAINT(vbr_constraint));
    opus_encoder_ctl(encoder, OPUS_SET_INBAND_FEC(0));
    opus_encoder_ctl(encoder, OPUS_SET_PACKET_LOSS_PERC(0));
    opus_encoder_ctl(encoder, OPUS_SET_DTX(0));
    long total = 0;
    for (int i = 0; i < frame_count; i++) {
        int n = opus_encode(encoder, pcm + (size_t)i * frame_size * channels, frame_size,
                            packets + (size_t)i * max_packet, max_packet);
        if (n < 0) { total = -1; break; }
        packet_sizes[i] = n;
        total += n;
    }
    opus_encoder_destroy(encoder);
    return total;
}

long mp_baseline_opus_decode(const uint8_t *packets, int max_packet, const int *packet_sizes, int packet_count,
                             int channels, int16_t *pcm, int max_frame_size) {
    int error = 0;
    OpusDecoder *decoder = opus_decoder_create(48000, channels, &error);
    if (!decoder || error != OPUS_OK) return -1;
    long total = 0;
    for (int i = 0; i < packet_count; i++) {
        int n = opus_decode(decoder, packets + (size_t)i * max_packet, packet_sizes[i], pcm, max_frame_size, 0);
        if (n < 0) { total = -1; break; }
        total += n;
    }
    opus_decoder_destroy(decoder);
    return total;
}

long mp_baseline_vpx_encode(int codec, const uint8_t *const *pictures, int frame_count, int width, int height,
                            int fps, int bitrate_bps, int speed, int threads) {
    vpx_codec_iface_t *iface = codec == 9 ? vpx_codec_vp9_cx() : vpx_codec_vp8_cx();
    vpx_codec_enc_cfg_t cfg;
    if (vpx_codec_enc_config_default(iface, &cfg, 0) != VPX_CODEC_OK) return -1;
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
    vpx_codec_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx || vpx_codec_enc_init(ctx, iface, &cfg, 0) != VPX_CODEC_OK) { free(ctx); return -1; }
    vpx_codec_control(ctx, VP8E_SET_CPUUSED, speed);
    if (codec == 9) {
        vpx_codec_control(ctx, VP9E_SET_AQ_MODE, 3);
        vpx_codec_control(ctx, VP9E_SET_ROW_MT, threads > 1 ? 1 : 0);
    } else {
        vpx_codec_control(ctx, VP8E_SET_STATIC_THRESHOLD, 1);
        vpx_codec_control(ctx, VP8E_SET_MAX_INTRA_BITRATE_PCT, 300);
    }
    long total = 0;
    vpx_image_t image;
    int chroma_w = (width + 1) / 2, chroma_h = (height + 1) / 2;
    for (int i = 0; i < frame_count && total >= 0; i++) {
        uint8_t *y = (uint8_t *)pictures[i];
        vpx_img_wrap(&image, VPX_IMG_FMT_I420, width, height, 1, y);
        image.planes[0] = y;
        image.planes[1] = y + (size_t)width * height;
        image.planes[2] = image.planes[1] + (size_t)chroma_w * chroma_h;
        image.stride[0] = width;
        image.stride[1] = image.stride[2] = chroma_w;
        if (vpx_codec_encode(ctx, &image, i, 1, 0, VPX_DL_REALTIME) != VPX_CODEC_OK) { total = -1; break; }
        vpx_codec_iter_t iter = NULL;
        const vpx_codec_cx_pkt_t *pkt;
        while ((pkt = vpx_codec_get_cx_data(ctx, &iter)) != NULL) {
            if (pkt->kind == VPX_CODEC_CX_FRAME_PKT) total += (long)pkt->data.frame.sz;
        }
    }
    vpx_codec_destroy(ctx);
    free(ctx);
    return total;
}

long mp_baseline_vpx_decode(int codec, const uint8_t *const *frames, const size_t *sizes, int frame_count, int threads) {
    vpx_codec_dec_cfg_t cfg = {.threads = threads, .w = 0, .h = 0};
    vpx_codec_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx || vpx_codec_dec_init(ctx, codec == 9 ? vpx_codec_vp9_dx() : vpx_codec_vp8_dx(), &cfg, 0) != VPX_CODEC_OK) {
        free(ctx);
        return -1;
    }
    long total = 0;
    for (int i = 0; i < frame_count; i++) {
        if (vpx_codec_decode(ctx, frames[i], (unsigned int)sizes[i], NULL, 0) != VPX_CODEC_OK) { total = -1; break; }
        vpx_codec_iter_t iter = NULL;
        vpx_image_t *img;
        while ((img = vpx_codec_get_frame(ctx, &iter)) != NULL) total += img->d_w;
    }
    vpx_codec_destroy(ctx);
    free(ctx);
    return total;
}
