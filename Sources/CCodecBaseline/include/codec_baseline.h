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

// MARK: - Session capacity reference

// The media work of `pipebench bench`'s session capacity (SubscriberLoad driving one MediaEngine)
// with no engine: no RTP, no hub, no jitter buffers, no statistics. For `users` users, every 10 ms
// tick: on even ticks each user's next 20 ms Opus packet is decoded (48 kHz stereo); each tick
// the tick's 10 ms half of every user is summed into one stereo frame; when a video frame is due
// (the engine's schedule: every 1/fps s) each user decodes the same VP8 frame and scales it into
// its own canvas (libyuv I420Scale, box filter, hidden mode: the source cropped to the canvas's
// aspect, centred, as the engine's PictureScaler does). The users' decodes of a tick are spread
// over `threads` threads (the caller and threads - 1 persistent workers), as the engine's
// ParallelWorkers spread them: jobs taken one user at a time from a shared counter.

/// One reference session; opaque.
typedef struct mp_capacity_reference mp_capacity_reference;

/// Creates a reference session of `users` users on `threads` threads. The media are copied: the
/// Opus packets are `opus_count` packets laid end to end in `opus_bytes`, packet i from
/// `opus_offsets[i]` to `opus_offsets[i + 1]`; the VP8 frames likewise. Users start at different
/// points of the speech, user i at packet i * 37, as SubscriberLoad's do; all users send the same
/// video frame. Pictures come `video_frames_per_second` times a second, numbered within the
/// sample's loop of `loop_pictures`; a picture whose number is a multiple of `video_picture_step`
/// has a frame, frame (number / step) of the `vp8_count` in turn: step 1 for a layer sent at the
/// full rate (loop_pictures = vp8_count), 2 for a low layer at about half of it, as
/// SubscriberLoad's dual stream users send it (an odd loop gives two frames in a row where it
/// wraps). Each user gets a `canvas_width` × `canvas_height` I420 canvas, black at first.
/// Returns NULL on failure, with a message in `error` (room for `error_capacity` bytes).
mp_capacity_reference *mp_capacity_reference_create(int users, int threads, const uint8_t *opus_bytes,
                                                    const size_t *opus_offsets, int opus_count,
                                                    const uint8_t *vp8_bytes, const size_t *vp8_offsets,
                                                    int vp8_count, int video_frames_per_second, int loop_pictures,
                                                    int video_picture_step, int canvas_width, int canvas_height,
                                                    char *error, size_t error_capacity);

/// Advances the session by 10 ms. Returns 1 when video was decoded and rendered in this tick, 0
/// when not, and -1 when a decode failed (the message: mp_capacity_reference_error).
int mp_capacity_reference_advance(mp_capacity_reference *reference);

/// Users that have decoded audio and rendered video at least once and never failed a decode.
int mp_capacity_reference_users_decoding(const mp_capacity_reference *reference);

/// Opus packets decoded, all users together.
long long mp_capacity_reference_audio_packets_decoded(const mp_capacity_reference *reference);

/// VP8 pictures decoded and scaled into canvases, all users together.
long long mp_capacity_reference_pictures_rendered(const mp_capacity_reference *reference);

/// The last 10 ms mix: 480 stereo frames, interleaved, 960 samples.
const int16_t *mp_capacity_reference_mix(const mp_capacity_reference *reference);

/// The first decode failure's message, "" when there was none.
const char *mp_capacity_reference_error(const mp_capacity_reference *reference);

/// Wall time the session's rounds (its decodes, across the threads, from the start of each to its
/// last job's end) took so far on the thread that advances it, in nanoseconds; the rest of an
/// advance is its serial work (the mix).
long long mp_capacity_reference_round_nanoseconds(const mp_capacity_reference *reference);

/// Stops the worker threads and frees the session.
void mp_capacity_reference_destroy(mp_capacity_reference *reference);

#endif
