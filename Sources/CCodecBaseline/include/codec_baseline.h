#ifndef CCODECBASELINE_H
#define CCODECBASELINE_H

// The codec work that `pipebench bench` and the benchmark package measure through
// MediaPipeline's types, written directly against libopus and libvpx, so the wrappers' cost is a
// ratio measured in one run on the same frames. The codecs are created with the same settings
// as the Swift types use.
//
// Two forms: per-frame calls on a handle (the benchmark package times one frame at a time) and
// whole loops (`pipebench bench` times a whole pass with no Swift in between). Handles are
// opaque; functions return a negative value on error.

#include <stddef.h>
#include <stdint.h>

// MARK: - Per frame

/// A 48 kHz Opus encoder (application audio, VBR, FEC/DTX off), or NULL.
void *mp_twin_opus_encoder_create(int channels, int bitrate, int complexity, int vbr_constraint);
/// Encodes `frame_size` samples per channel (interleaved); returns the packet's length.
int mp_twin_opus_encode(void *encoder, const int16_t *pcm, int frame_size, uint8_t *packet, int max_packet);
void mp_twin_opus_encoder_destroy(void *encoder);

/// A 48 kHz Opus decoder, or NULL.
void *mp_twin_opus_decoder_create(int channels);
/// Decodes one packet into `pcm` (room for `max_frame_size` samples per channel); returns samples per channel.
int mp_twin_opus_decode(void *decoder, const uint8_t *packet, int size, int16_t *pcm, int max_frame_size);
void mp_twin_opus_decoder_destroy(void *decoder);

/// A realtime CBR VP8 (codec 8) or VP9 (codec 9) encoder mirroring VPXEncoder's settings, or NULL.
void *mp_twin_vpx_encoder_create(int codec, int width, int height, int fps, int bitrate_bps, int speed, int threads);
/// Encodes one I420 picture given by its planes and strides; returns the compressed size in bytes.
long mp_twin_vpx_encode(void *encoder, const uint8_t *y, const uint8_t *u, const uint8_t *v, int stride_y,
                        int stride_uv, long pts);
void mp_twin_vpx_encoder_destroy(void *encoder);

/// A VP8 (codec 8) or VP9 (codec 9) decoder, or NULL.
void *mp_twin_vpx_decoder_create(int codec, int threads);
/// Decodes one compressed frame; returns the decoded picture's width (0 when none came out).
long mp_twin_vpx_decode(void *decoder, const uint8_t *frame, size_t size);
void mp_twin_vpx_decoder_destroy(void *decoder);

// MARK: - Whole loops

/// Encodes `frame_count` frames of `frame_size` samples per channel (interleaved) at 48 kHz.
/// Packet sizes go to `packet_sizes`, packets to `packets` (stride `max_packet`). Returns the total size.
long mp_baseline_opus_encode(const int16_t *pcm, int frame_count, int frame_size, int channels, int bitrate,
                             int complexity, int vbr_constraint, uint8_t *packets, int max_packet, int *packet_sizes);

/// Decodes `packet_count` packets laid out as `mp_baseline_opus_encode` wrote them.
long mp_baseline_opus_decode(const uint8_t *packets, int max_packet, const int *packet_sizes, int packet_count,
                             int channels, int16_t *pcm, int max_frame_size);

/// Encodes `frame_count` packed I420 pictures (`width` × `height`, chroma (w+1)/2); returns the total size.
long mp_baseline_vpx_encode(int codec, const uint8_t *const *pictures, int frame_count, int width, int height,
                            int fps, int bitrate_bps, int speed, int threads);

/// Decodes `frame_count` compressed frames; returns the sum of decoded picture widths.
long mp_baseline_vpx_decode(int codec, const uint8_t *const *frames, const size_t *sizes, int frame_count, int threads);

#endif
