#ifndef CCODECBASELINE_H
#define CCODECBASELINE_H

// The codec work that `pipebench bench` measures through MediaPipeline's types, written
// directly against libopus and libvpx, so the wrappers' cost is a ratio measured in one run.
// Each function creates its codec with the same settings as the Swift path, runs the whole
// loop and destroys the codec. They return a checksum-like total (bytes or samples) so the
// work cannot be optimised away, or a negative value on error.

#include <stddef.h>
#include <stdint.h>

/// Encodes `frame_count` frames of `frame_size` samples per channel (interleaved) at 48 kHz.
/// Packet sizes go to `packet_sizes`, packets to `packets` (stride `max_packet`).
long mp_baseline_opus_encode(const int16_t *pcm, int frame_count, int frame_size, int channels, int bitrate,
                             int complexity, int vbr_constraint, uint8_t *packets, int max_packet, int *packet_sizes);

/// Decodes `packet_count` packets laid out as `mp_baseline_opus_encode` wrote them.
long mp_baseline_opus_decode(const uint8_t *packets, int max_packet, const int *packet_sizes, int packet_count,
                             int channels, int16_t *pcm, int max_frame_size);

/// Encodes `frame_count` packed I420 pictures (`width` × `height`, chroma (w+1)/2) with VP8 (codec 8)
/// or VP9 (codec 9) in realtime CBR mode, mirroring VPXEncoder's settings.
long mp_baseline_vpx_encode(int codec, const uint8_t *const *pictures, int frame_count, int width, int height,
                            int fps, int bitrate_bps, int speed, int threads);

/// Decodes `frame_count` compressed frames; returns the sum of decoded picture widths.
long mp_baseline_vpx_decode(int codec, const uint8_t *const *frames, const size_t *sizes, int frame_count, int threads);

#endif
