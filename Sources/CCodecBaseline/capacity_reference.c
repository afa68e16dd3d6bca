// The session-capacity reference of `pipebench bench`: SubscriberLoad's media work (decode every
// user's Opus and VP8, mix the audio, scale the video into canvases) done directly on libopus,
// libvpx and libyuv, with a small persistent thread pool. See codec_baseline.h.

#include "codec_baseline.h"

#include <libyuv.h>
#include <math.h>
#include <opus/opus.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vpx/vp8dx.h>
#include <vpx/vpx_decoder.h>

/// Samples per channel in one 20 ms Opus packet at 48 kHz, and in one 10 ms playout frame.
enum { PACKET_FRAMES = 960, TICK_FRAMES = 480, CHANNELS = 2 };

/// One remote user: its decoders, its last decoded 20 ms of audio and its canvas. Aligned to a
/// cache line so two threads decoding neighbouring users do not share one.
typedef struct {
    OpusDecoder *opus;
    vpx_codec_ctx_t vpx;
    int vpx_ready;
    /// The last decoded packet, interleaved stereo: the first 10 ms half is mixed on the tick
    /// that decoded it, the second on the next tick.
    int16_t pcm[PACKET_FRAMES * CHANNELS];
    /// The canvas: one allocation, Y then U then V, rows 32-byte aligned as I420Buffer's.
    uint8_t *canvas;
    int stride_y, stride_uv;
    long long audio_packets_decoded;
    long long pictures_rendered;
    int failed;
} __attribute__((aligned(64))) reference_user;

/// What one round of jobs runs: job `index` of the round, on any thread.
typedef void (*reference_job)(mp_capacity_reference *reference, int index);

struct mp_capacity_reference {
    int user_count;
    reference_user *users;
    // The media, copied: packets and frames end to end, with offsets (count + 1 each).
    uint8_t *opus_bytes, *vp8_bytes;
    size_t *opus_offsets, *vp8_offsets;
    int opus_count, vp8_count;
    int canvas_width, canvas_height;
    // The schedule, as SubscriberLoad.advance() keeps it.
    long long tick;
    long long now_microseconds;
    long long next_video_microseconds;
    // Pictures due so far, numbered within the loop of `loop_pictures`: a number that is a multiple
    // of `video_picture_step` has a frame, frame (number / step).
    long long video_index;
    long long video_interval_microseconds;
    int loop_pictures;
    int video_picture_step;
    // The mix: a 32-bit sum per sample, saturated to 16 bits.
    int32_t sum[TICK_FRAMES * CHANNELS];
    int16_t mix[TICK_FRAMES * CHANNELS];
    // The pool: `extra_threads` workers besides the caller, started at creation.
    int extra_threads;
    pthread_t *threads;
    int threads_started;
    pthread_mutex_t mutex;
    pthread_cond_t start_condition, done_condition;
    // Guarded by `mutex`.
    unsigned long generation;
    int finished;
    int stopping;
    reference_job job;
    int job_count;
    // Taken by every thread of a round, one user at a time.
    atomic_int next_job;
    // Wall time of the rounds so far on the calling thread (reference_run), in nanoseconds.
    long long round_nanoseconds;
    // The packet and frame of the current round (set before the round, read by its jobs).
    long long audio_position;
    const uint8_t *video_frame;
    int video_frame_number;
    size_t video_frame_size;
    // The first failure, guarded by `error_mutex`.
    pthread_mutex_t error_mutex;
    int failed;
    char error[256];
};

// MARK: - Failures

/// Records the first failure's message; later ones are dropped.
static void reference_fail(mp_capacity_reference *reference, const char *format, ...) {
    pthread_mutex_lock(&reference->error_mutex);
    if (!reference->failed) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(reference->error, sizeof reference->error, format, arguments);
        va_end(arguments);
        reference->failed = 1;
    }
    pthread_mutex_unlock(&reference->error_mutex);
}

// MARK: - Thread pool

/// Takes jobs from the shared counter until the round has none left.
static void reference_work(mp_capacity_reference *reference, reference_job job, int count) {
    for (;;) {
        int index = atomic_fetch_add_explicit(&reference->next_job, 1, memory_order_relaxed);
        if (index >= count) return;
        job(reference, index);
    }
}

/// A worker: waits for a new round (a new generation), works on it, reports it finished.
static void *reference_worker(void *context) {
    mp_capacity_reference *reference = context;
    unsigned long seen = 0;
    pthread_mutex_lock(&reference->mutex);
    for (;;) {
        while (reference->generation == seen && !reference->stopping)
            pthread_cond_wait(&reference->start_condition, &reference->mutex);
        if (reference->stopping) break;
        seen = reference->generation;
        reference_job job = reference->job;
        int count = reference->job_count;
        pthread_mutex_unlock(&reference->mutex);
        reference_work(reference, job, count);
        pthread_mutex_lock(&reference->mutex);
        reference->finished += 1;
        if (reference->finished == reference->threads_started) pthread_cond_signal(&reference->done_condition);
    }
    pthread_mutex_unlock(&reference->mutex);
    return NULL;
}

/// Runs jobs 0..<count on the workers and the calling thread; returns when all are done. With
/// no workers or a single job, the caller runs them alone (as the engine's pool does).
static void reference_run_jobs(mp_capacity_reference *reference, reference_job job, int count) {
    if (reference->threads_started == 0 || count <= 1) {
        for (int index = 0; index < count; index++) job(reference, index);
        return;
    }
    pthread_mutex_lock(&reference->mutex);
    reference->job = job;
    reference->job_count = count;
    reference->finished = 0;
    atomic_store(&reference->next_job, 0);
    reference->generation += 1;
    pthread_cond_broadcast(&reference->start_condition);
    pthread_mutex_unlock(&reference->mutex);
    reference_work(reference, job, count);
    pthread_mutex_lock(&reference->mutex);
    while (reference->finished < reference->threads_started)
        pthread_cond_wait(&reference->done_condition, &reference->mutex);
    pthread_mutex_unlock(&reference->mutex);
}

/// Nanoseconds on the monotonic clock.
static long long monotonic_nanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

/// reference_run_jobs, its wall time added to round_nanoseconds (as the engine's pools count theirs).
static void reference_run(mp_capacity_reference *reference, reference_job job, int count) {
    long long start = monotonic_nanoseconds();
    reference_run_jobs(reference, job, count);
    reference->round_nanoseconds += monotonic_nanoseconds() - start;
}

// MARK: - Jobs

/// Decodes user `index`'s packet of this 20 ms: user i is at packet (tick / 2 + i * 37), as in
/// SubscriberLoad.advance().
static void reference_decode_audio(mp_capacity_reference *reference, int index) {
    reference_user *user = &reference->users[index];
    int packet = (int)((reference->audio_position + (long long)index * 37) % reference->opus_count);
    const uint8_t *data = reference->opus_bytes + reference->opus_offsets[packet];
    size_t size = reference->opus_offsets[packet + 1] - reference->opus_offsets[packet];
    int frames = opus_decode(user->opus, data, (opus_int32)size, user->pcm, PACKET_FRAMES, 0);
    if (frames != PACKET_FRAMES) {
        user->failed = 1;
        reference_fail(reference, "user %d: opus_decode of packet %d returned %d (%s), not %d samples", index,
                       packet, frames, frames < 0 ? opus_strerror(frames) : "short", PACKET_FRAMES);
        return;
    }
    user->audio_packets_decoded += 1;
}

/// The value rounded to an even number, kept within 1...limit (PictureScaler.evenRounded).
static int even_rounded(double value, int limit) {
    int even = (int)round(value / 2) * 2;
    if (even > limit) even = limit;
    return even < 1 ? 1 : even;
}

/// Scales a decoded picture into the user's canvas in hidden mode: uniform scale so the canvas
/// is covered, the overflowing source cropped, centred (PictureScaler.layout, .hidden). The
/// target is always the whole canvas in this mode, so no black bars are painted.
static void reference_render(mp_capacity_reference *reference, reference_user *user, const vpx_image_t *image) {
    int source_width = (int)image->d_w, source_height = (int)image->d_h;
    int target_width = reference->canvas_width, target_height = reference->canvas_height;
    int width = source_width, height = source_height;
    if ((long long)source_width * target_height > (long long)source_height * target_width) {
        width = even_rounded((double)source_height * target_width / target_height, source_width);
    } else {
        height = even_rounded((double)source_width * target_height / target_width, source_height);
    }
    int x = ((source_width - width) / 2) & ~1;
    int y = ((source_height - height) / 2) & ~1;
    int stride_y = image->stride[VPX_PLANE_Y], stride_u = image->stride[VPX_PLANE_U];
    int stride_v = image->stride[VPX_PLANE_V];
    uint8_t *canvas_y = user->canvas;
    uint8_t *canvas_u = canvas_y + (size_t)user->stride_y * target_height;
    uint8_t *canvas_v = canvas_u + (size_t)user->stride_uv * ((target_height + 1) / 2);
    I420Scale(image->planes[VPX_PLANE_Y] + (size_t)y * stride_y + x, stride_y,
              image->planes[VPX_PLANE_U] + (size_t)(y / 2) * stride_u + x / 2, stride_u,
              image->planes[VPX_PLANE_V] + (size_t)(y / 2) * stride_v + x / 2, stride_v, width, height, canvas_y,
              user->stride_y, canvas_u, user->stride_uv, canvas_v, user->stride_uv, target_width, target_height,
              kFilterBox);
}

/// Decodes this round's VP8 frame for user `index` and renders the (last) picture it yields.
static void reference_decode_video(mp_capacity_reference *reference, int index) {
    reference_user *user = &reference->users[index];
    vpx_codec_err_t status = vpx_codec_decode(&user->vpx, reference->video_frame,
                                              (unsigned int)reference->video_frame_size, NULL, 0);
    if (status != VPX_CODEC_OK) {
        user->failed = 1;
        reference_fail(reference, "user %d: vpx_codec_decode of frame %d failed: %s", index,
                       reference->video_frame_number, vpx_codec_error(&user->vpx));
        return;
    }
    vpx_codec_iter_t iterator = NULL;
    const vpx_image_t *image, *last = NULL;
    while ((image = vpx_codec_get_frame(&user->vpx, &iterator)) != NULL) last = image;
    if (last == NULL) {
        user->failed = 1;
        reference_fail(reference, "user %d: VP8 frame %d gave no picture", index, reference->video_frame_number);
        return;
    }
    if (last->fmt != VPX_IMG_FMT_I420) {
        user->failed = 1;
        reference_fail(reference, "user %d: VP8 picture is not 8-bit 4:2:0 (format %d)", index, (int)last->fmt);
        return;
    }
    reference_render(reference, user, last);
    user->pictures_rendered += 1;
}

// MARK: - Mix

/// Sums this tick's 10 ms half of every user's packet into `mix`: 32-bit sums, saturated to
/// 16 bits. (The engine's mixer sums in float with per-source gain ramps and a peak limiter.)
static void reference_mix(mp_capacity_reference *reference) {
    int half = (int)(reference->tick % 2);
    int32_t *sum = reference->sum;
    memset(sum, 0, sizeof reference->sum);
    for (int u = 0; u < reference->user_count; u++) {
        const int16_t *samples = reference->users[u].pcm + half * TICK_FRAMES * CHANNELS;
        for (int i = 0; i < TICK_FRAMES * CHANNELS; i++) sum[i] += samples[i];
    }
    for (int i = 0; i < TICK_FRAMES * CHANNELS; i++) {
        int32_t value = sum[i];
        reference->mix[i] = (int16_t)(value > INT16_MAX ? INT16_MAX : value < INT16_MIN ? INT16_MIN : value);
    }
}

// MARK: - Session

/// Copies `count` items laid end to end (offsets count + 1) into fresh allocations.
static int copy_media(const uint8_t *bytes, const size_t *offsets, int count, uint8_t **bytes_copy,
                      size_t **offsets_copy) {
    size_t total = offsets[count];
    *bytes_copy = malloc(total > 0 ? total : 1);
    *offsets_copy = malloc(sizeof(size_t) * (size_t)(count + 1));
    if (!*bytes_copy || !*offsets_copy) return -1;
    memcpy(*bytes_copy, bytes, total);
    memcpy(*offsets_copy, offsets, sizeof(size_t) * (size_t)(count + 1));
    return 0;
}

mp_capacity_reference *mp_capacity_reference_create(int users, int threads, const uint8_t *opus_bytes,
                                                    const size_t *opus_offsets, int opus_count,
                                                    const uint8_t *vp8_bytes, const size_t *vp8_offsets,
                                                    int vp8_count, int video_frames_per_second, int loop_pictures,
                                                    int video_picture_step, int canvas_width, int canvas_height,
                                                    char *error, size_t error_capacity) {
    if (users < 1 || users > 4096 || threads < 1 || threads > 64 || opus_count < 1 || vp8_count < 1 ||
        video_frames_per_second < 1 || loop_pictures < 1 || video_picture_step < 1 || canvas_width < 2 ||
        canvas_height < 2) {
        snprintf(error, error_capacity,
                 "invalid reference session: %d users, %d threads, %d packets, %d frames, %d fps, loop of %d "
                 "pictures, picture step %d, canvas %dx%d",
                 users, threads, opus_count, vp8_count, video_frames_per_second, loop_pictures, video_picture_step,
                 canvas_width, canvas_height);
        return NULL;
    }
    mp_capacity_reference *reference = calloc(1, sizeof *reference);
    if (!reference) {
        snprintf(error, error_capacity, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&reference->mutex, NULL);
    pthread_mutex_init(&reference->error_mutex, NULL);
    pthread_cond_init(&reference->start_condition, NULL);
    pthread_cond_init(&reference->done_condition, NULL);
    reference->canvas_width = canvas_width;
    reference->canvas_height = canvas_height;
    reference->opus_count = opus_count;
    reference->vp8_count = vp8_count;
    reference->video_interval_microseconds = 1000000 / video_frames_per_second;
    reference->loop_pictures = loop_pictures;
    reference->video_picture_step = video_picture_step;
    if (copy_media(opus_bytes, opus_offsets, opus_count, &reference->opus_bytes, &reference->opus_offsets) != 0 ||
        copy_media(vp8_bytes, vp8_offsets, vp8_count, &reference->vp8_bytes, &reference->vp8_offsets) != 0) {
        snprintf(error, error_capacity, "out of memory for the media");
        mp_capacity_reference_destroy(reference);
        return NULL;
    }
    reference->users = aligned_alloc(64, sizeof(reference_user) * (size_t)users);
    if (!reference->users) {
        snprintf(error, error_capacity, "out of memory for %d users", users);
        mp_capacity_reference_destroy(reference);
        return NULL;
    }
    memset(reference->users, 0, sizeof(reference_user) * (size_t)users);
    reference->user_count = users;  // from here on, destroy frees every user's parts
    int chroma_width = (canvas_width + 1) / 2, chroma_height = (canvas_height + 1) / 2;
    for (int u = 0; u < users; u++) {
        reference_user *user = &reference->users[u];
        int status = 0;
        user->opus = opus_decoder_create(48000, CHANNELS, &status);
        if (!user->opus || status != OPUS_OK) {
            snprintf(error, error_capacity, "user %d: opus_decoder_create: %s", u, opus_strerror(status));
            mp_capacity_reference_destroy(reference);
            return NULL;
        }
        // One decoder thread per stream, as the engine's VideoReceiver makes its decoders.
        vpx_codec_dec_cfg_t configuration = {.threads = 1, .w = 0, .h = 0};
        if (vpx_codec_dec_init(&user->vpx, vpx_codec_vp8_dx(), &configuration, 0) != VPX_CODEC_OK) {
            snprintf(error, error_capacity, "user %d: vpx_codec_dec_init: %s", u, vpx_codec_error(&user->vpx));
            mp_capacity_reference_destroy(reference);
            return NULL;
        }
        user->vpx_ready = 1;
        user->stride_y = (canvas_width + 31) & ~31;
        user->stride_uv = (chroma_width + 31) & ~31;
        size_t luma = (size_t)user->stride_y * canvas_height;
        size_t chroma = (size_t)user->stride_uv * chroma_height;
        size_t bytes = (luma + 2 * chroma + 63) & ~(size_t)63;
        user->canvas = aligned_alloc(64, bytes);
        if (!user->canvas) {
            snprintf(error, error_capacity, "out of memory for user %d's canvas", u);
            mp_capacity_reference_destroy(reference);
            return NULL;
        }
        memset(user->canvas, 16, luma);  // black: Y 16, U and V 128
        memset(user->canvas + luma, 128, 2 * chroma);
    }
    reference->threads = calloc((size_t)threads, sizeof(pthread_t));
    if (!reference->threads) {
        snprintf(error, error_capacity, "out of memory for %d threads", threads);
        mp_capacity_reference_destroy(reference);
        return NULL;
    }
    reference->extra_threads = threads - 1;
    for (int t = 0; t < reference->extra_threads; t++) {
        if (pthread_create(&reference->threads[t], NULL, reference_worker, reference) != 0) {
            snprintf(error, error_capacity, "pthread_create failed for worker %d", t);
            mp_capacity_reference_destroy(reference);
            return NULL;
        }
        reference->threads_started += 1;
    }
    return reference;
}

int mp_capacity_reference_advance(mp_capacity_reference *reference) {
    if (reference->failed) return -1;
    long long now = reference->now_microseconds;
    // Every other tick: every user's next 20 ms packet, decoded across the threads.
    if (reference->tick % 2 == 0) {
        reference->audio_position = reference->tick / 2;
        reference_run(reference, reference_decode_audio, reference->user_count);
        if (reference->failed) return -1;
    }
    // Every tick: this tick's 10 ms of every user, mixed on the calling thread.
    reference_mix(reference);
    // When a picture with a frame is due: every user decodes it and renders it, across the threads.
    int video_decoded = 0;
    if (now >= reference->next_video_microseconds) {
        int picture = (int)(reference->video_index % reference->loop_pictures);
        if (picture % reference->video_picture_step == 0) {
            int frame = (picture / reference->video_picture_step) % reference->vp8_count;
            reference->video_frame_number = frame;
            reference->video_frame = reference->vp8_bytes + reference->vp8_offsets[frame];
            reference->video_frame_size = reference->vp8_offsets[frame + 1] - reference->vp8_offsets[frame];
            reference_run(reference, reference_decode_video, reference->user_count);
            if (reference->failed) return -1;
            video_decoded = 1;
        }
        reference->video_index += 1;
        reference->next_video_microseconds += reference->video_interval_microseconds;
    }
    reference->now_microseconds += 10000;
    reference->tick += 1;
    return video_decoded;
}

int mp_capacity_reference_users_decoding(const mp_capacity_reference *reference) {
    int count = 0;
    for (int u = 0; u < reference->user_count; u++) {
        const reference_user *user = &reference->users[u];
        if (!user->failed && user->audio_packets_decoded > 0 && user->pictures_rendered > 0) count += 1;
    }
    return count;
}

long long mp_capacity_reference_audio_packets_decoded(const mp_capacity_reference *reference) {
    long long total = 0;
    for (int u = 0; u < reference->user_count; u++) total += reference->users[u].audio_packets_decoded;
    return total;
}

long long mp_capacity_reference_pictures_rendered(const mp_capacity_reference *reference) {
    long long total = 0;
    for (int u = 0; u < reference->user_count; u++) total += reference->users[u].pictures_rendered;
    return total;
}

const int16_t *mp_capacity_reference_mix(const mp_capacity_reference *reference) { return reference->mix; }

long long mp_capacity_reference_round_nanoseconds(const mp_capacity_reference *reference) {
    return reference->round_nanoseconds;
}

const char *mp_capacity_reference_error(const mp_capacity_reference *reference) { return reference->error; }

void mp_capacity_reference_destroy(mp_capacity_reference *reference) {
    if (!reference) return;
    pthread_mutex_lock(&reference->mutex);
    reference->stopping = 1;
    pthread_cond_broadcast(&reference->start_condition);
    pthread_mutex_unlock(&reference->mutex);
    for (int t = 0; t < reference->threads_started; t++) pthread_join(reference->threads[t], NULL);
    free(reference->threads);
    for (int u = 0; u < reference->user_count; u++) {
        reference_user *user = &reference->users[u];
        if (user->opus) opus_decoder_destroy(user->opus);
        if (user->vpx_ready) vpx_codec_destroy(&user->vpx);
        free(user->canvas);
    }
    free(reference->users);
    free(reference->opus_bytes);
    free(reference->opus_offsets);
    free(reference->vp8_bytes);
    free(reference->vp8_offsets);
    pthread_cond_destroy(&reference->start_condition);
    pthread_cond_destroy(&reference->done_condition);
    pthread_mutex_destroy(&reference->mutex);
    pthread_mutex_destroy(&reference->error_mutex);
    free(reference);
}
