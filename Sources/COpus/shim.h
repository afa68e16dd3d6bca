#ifndef COPUS_SHIM_H
#define COPUS_SHIM_H

#include <opus/opus.h>
#include <opus/opus_multistream.h>

// opus_encoder_ctl / opus_decoder_ctl are variadic and their request macros are function-like:
// Swift can call neither, so each request gets one prefixed wrapper here. No logic.

static inline int copus_encoder_set_bitrate(OpusEncoder *st, opus_int32 v) { return opus_encoder_ctl(st, OPUS_SET_BITRATE(v)); }
static inline int copus_encoder_get_bitrate(OpusEncoder *st, opus_int32 *v) { return opus_encoder_ctl(st, OPUS_GET_BITRATE(v)); }
static inline int copus_encoder_set_complexity(OpusEncoder *st, opus_int32 v) { return opus_encoder_ctl(st, OPUS_SET_COMPLEXITY(v)); }
static inline int copus_encoder_get_complexity(OpusEncoder *st, opus_int32 *v) { return opus_encoder_ctl(st, OPUS_GET_COMPLEXITY(v)); }
static inline int copus_encoder_set_vbr(OpusEncoder *st, opus_int32 v) { return opus_encoder_ctl(st, OPUS_SET_VBR(v)); }
static inline int copus_encoder_get_vbr(OpusEncoder *st, opus_int32 *v) { return opus_encoder_ctl(st, OPUS_GET_VBR(v)); }
static inline int copus_encoder_set_vbr_constraint(OpusEncoder *st, opus_int32 v) { return opus_encoder_ctl(st, OPUS_SET_VBR_CONSTRAINT(v)); }
static inline int copus_encoder_get_vbr_constraint(OpusEncoder *st, opus_int32 *v) { return opus_encoder_ctl(st, OPUS_GET_VBR_CONSTRAINT(v)); }
static inline int copus_encoder_set_inband_fec(OpusEncoder *st, opus_int32 v) { return opus_encoder_ctl(st, OPUS_SET_INBAND_FEC(v)); }
static inline int copus_encoder_get_inband_fec(OpusEncoder *st, opus_int32 *v) { return opus_encoder_ctl(st, OPUS_GET_INBAND_FEC(v)); }
static inline int copus_encoder_set_packet_loss_perc(OpusEncoder *st, opus_int32 v) { return opus_encoder_ctl(st, OPUS_SET_PACKET_LOSS_PERC(v)); }
static inline int copus_encoder_get_packet_loss_perc(OpusEncoder *st, opus_int32 *v) { return opus_encoder_ctl(st, OPUS_GET_PACKET_LOSS_PERC(v)); }
static inline int copus_encoder_set_dtx(OpusEncoder *st, opus_int32 v) { return opus_encoder_ctl(st, OPUS_SET_DTX(v)); }
static inline int copus_encoder_get_dtx(OpusEncoder *st, opus_int32 *v) { return opus_encoder_ctl(st, OPUS_GET_DTX(v)); }
static inline int copus_encoder_get_lookahead(OpusEncoder *st, opus_int32 *v) { return opus_encoder_ctl(st, OPUS_GET_LOOKAHEAD(v)); }
static inline int copus_encoder_reset_state(OpusEncoder *st) { return opus_encoder_ctl(st, OPUS_RESET_STATE); }

static inline int copus_decoder_set_gain(OpusDecoder *st, opus_int32 v) { return opus_decoder_ctl(st, OPUS_SET_GAIN(v)); }
static inline int copus_decoder_get_gain(OpusDecoder *st, opus_int32 *v) { return opus_decoder_ctl(st, OPUS_GET_GAIN(v)); }
static inline int copus_decoder_get_last_packet_duration(OpusDecoder *st, opus_int32 *v) { return opus_decoder_ctl(st, OPUS_GET_LAST_PACKET_DURATION(v)); }
static inline int copus_decoder_reset_state(OpusDecoder *st) { return opus_decoder_ctl(st, OPUS_RESET_STATE); }
static inline int copus_ms_decoder_set_gain(OpusMSDecoder *st, opus_int32 v) { return opus_multistream_decoder_ctl(st, OPUS_SET_GAIN(v)); }

#endif
