#ifndef CVPX_SHIM_H
#define CVPX_SHIM_H

#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

// The init macros pass VPX_*_ABI_VERSION, which Swift cannot see: wrap them.
static inline vpx_codec_err_t cvpx_codec_enc_init(vpx_codec_ctx_t *ctx, vpx_codec_iface_t *iface, const vpx_codec_enc_cfg_t *cfg, vpx_codec_flags_t flags) { return vpx_codec_enc_init(ctx, iface, cfg, flags); }
static inline vpx_codec_err_t cvpx_codec_dec_init(vpx_codec_ctx_t *ctx, vpx_codec_iface_t *iface, const vpx_codec_dec_cfg_t *cfg, vpx_codec_flags_t flags) { return vpx_codec_dec_init(ctx, iface, cfg, flags); }

// vpx_codec_control is a type-checking macro over a variadic function: one wrapper per control.
static inline vpx_codec_err_t cvpx_set_cpuused(vpx_codec_ctx_t *ctx, int v) { return vpx_codec_control(ctx, VP8E_SET_CPUUSED, v); }
static inline vpx_codec_err_t cvpx_set_static_threshold(vpx_codec_ctx_t *ctx, unsigned int v) { return vpx_codec_control(ctx, VP8E_SET_STATIC_THRESHOLD, v); }
static inline vpx_codec_err_t cvpx_set_noise_sensitivity(vpx_codec_ctx_t *ctx, unsigned int v) { return vpx_codec_control(ctx, VP8E_SET_NOISE_SENSITIVITY, v); }
static inline vpx_codec_err_t cvpx_set_max_intra_bitrate_pct(vpx_codec_ctx_t *ctx, unsigned int v) { return vpx_codec_control(ctx, VP8E_SET_MAX_INTRA_BITRATE_PCT, v); }
static inline vpx_codec_err_t cvpx_vp8_set_token_partitions(vpx_codec_ctx_t *ctx, int v) { return vpx_codec_control(ctx, VP8E_SET_TOKEN_PARTITIONS, (vp8e_token_partitions)v); }
static inline vpx_codec_err_t cvpx_vp9_set_aq_mode(vpx_codec_ctx_t *ctx, unsigned int v) { return vpx_codec_control(ctx, VP9E_SET_AQ_MODE, v); }
static inline vpx_codec_err_t cvpx_vp9_set_row_mt(vpx_codec_ctx_t *ctx, unsigned int v) { return vpx_codec_control(ctx, VP9E_SET_ROW_MT, v); }
static inline vpx_codec_err_t cvpx_vp9_set_tile_columns(vpx_codec_ctx_t *ctx, int v) { return vpx_codec_control(ctx, VP9E_SET_TILE_COLUMNS, v); }
static inline vpx_codec_err_t cvpx_get_last_quantizer(vpx_codec_ctx_t *ctx, int *v) { return vpx_codec_control(ctx, VP8E_GET_LAST_QUANTIZER_64, v); }

// Flag macros built from shifts: give Swift plain values.
static inline vpx_enc_frame_flags_t cvpx_eflag_force_kf(void) { return VPX_EFLAG_FORCE_KF; }
static inline vpx_codec_frame_flags_t cvpx_frame_is_key(void) { return VPX_FRAME_IS_KEY; }
static inline unsigned long cvpx_dl_realtime(void) { return VPX_DL_REALTIME; }

#endif
