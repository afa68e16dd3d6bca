// ICE over libnice on a private GLib main context and a loop thread of the agent's own.
//
// Receive without allocation: libnice's receive callback reads its socket until the read
// reports EAGAIN, and GLib allocates a GError for that read: once per wakeup of the loop, up
// to one per packet. So after each datagram the callback asks the kernel whether another is
// queued on the selected pair's socket (FIONREAD); when none is, it detaches itself, which
// ends libnice's read loop before that read. A source of the highest priority attaches it
// again before the loop's next poll.
//
// Threads: libnice emits its signals on whichever thread calls into it, so every call that can
// change the agent runs on the loop thread (posted as a source, the caller waiting for it); only
// nice_agent_send is called from other threads, behind a read lock that close takes for writing
// before the libnice agent goes away. The handle itself is reference-counted between its owner
// and the loop thread, so a close made from a callback can finish after that callback returns.
#include "cwebrtc_ice.h"

#include <agent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/// A task scheduled on the loop (one per GSource), listed so teardown can release every one.
typedef struct ice_task {
    cwebrtc_ice_agent *agent;
    guint id;
    int ran;
    cwebrtc_ice_task_fn run;
    cwebrtc_ice_task_fn release;
    void *context;
    struct ice_task *next;
} ice_task;

struct cwebrtc_ice_agent {
    int refs; // owner + loop thread (atomic)
    NiceAgent *nice;
    GMainContext *context;
    GMainLoop *loop;
    guint stream_id;
    pthread_t thread;
    int thread_id;
    int closed; // atomic; set under mutex
    int state;  // atomic
    pthread_rwlock_t send_lock;
    pthread_mutex_t mutex;
    pthread_cond_t cond; // CLOCK_MONOTONIC
    // Under mutex:
    int running;
    int loop_exited;
    int close_started;
    int gathering_done;
    int has_selected;
    char selected_local[64];
    char selected_remote[64];
    ice_task *tasks;
    // Loop thread only:
    int gathering_started;
    int receive_detached;    // the receive callback detached itself after a drained read
    int selected_socket_fd;  // the selected pair's socket, -1 before one is selected
    GSource *reattach;       // attaches the receive callback again before each poll
    cwebrtc_ice_callbacks callbacks;
};

static int live_loop_threads;

static int is_closed(const cwebrtc_ice_agent *agent) { return __atomic_load_n(&agent->closed, __ATOMIC_ACQUIRE); }

int cwebrtc_ice_live_loop_threads(void) { return __atomic_load_n(&live_loop_threads, __ATOMIC_ACQUIRE); }

int cwebrtc_ice_agent_is_loop_thread(const cwebrtc_ice_agent *agent) {
    return pthread_equal(pthread_self(), agent->thread) ? 1 : 0;
}

int cwebrtc_ice_agent_loop_thread_id(const cwebrtc_ice_agent *agent) {
    return __atomic_load_n(&agent->thread_id, __ATOMIC_ACQUIRE);
}

int cwebrtc_ice_agent_state(const cwebrtc_ice_agent *agent) {
    return __atomic_load_n(&agent->state, __ATOMIC_ACQUIRE);
}

static void set_error(char *error, int capacity, const char *format, const char *value) {
    if (error != NULL && capacity > 0) snprintf(error, (size_t)capacity, format, value);
}

// MARK: - Running work on the loop thread

typedef int (*loop_fn)(cwebrtc_ice_agent *agent, void *argument);

typedef struct {
    cwebrtc_ice_agent *agent;
    loop_fn fn;
    void *argument;
    int result;
    int done;
} loop_call;

static gboolean loop_call_dispatch(gpointer data) {
    loop_call *call = data;
    // Acquire pairs with run_on_loop's release store: GLib's hand-over is invisible to ThreadSanitizer.
    cwebrtc_ice_agent *agent = __atomic_load_n(&call->agent, __ATOMIC_ACQUIRE);
    int result = is_closed(agent) ? CWEBRTC_ICE_ERROR_CLOSED : call->fn(agent, call->argument);
    pthread_mutex_lock(&agent->mutex);
    call->result = result;
    call->done = 1; // the caller's record may vanish once the mutex is released
    pthread_cond_broadcast(&agent->cond);
    pthread_mutex_unlock(&agent->mutex);
    return G_SOURCE_REMOVE;
}

/// Runs `fn` on the loop thread and waits for its result (directly when already there).
static int run_on_loop(cwebrtc_ice_agent *agent, loop_fn fn, void *argument) {
    if (cwebrtc_ice_agent_is_loop_thread(agent)) {
        return is_closed(agent) ? CWEBRTC_ICE_ERROR_CLOSED : fn(agent, argument);
    }
    if (is_closed(agent)) return CWEBRTC_ICE_ERROR_CLOSED;
    loop_call call = {NULL, fn, argument, 0, 0};
    __atomic_store_n(&call.agent, agent, __ATOMIC_RELEASE); // last: publishes the call and its argument
    GSource *source = g_idle_source_new();
    g_source_set_priority(source, G_PRIORITY_DEFAULT);
    g_source_set_callback(source, loop_call_dispatch, &call, NULL);
    g_source_attach(source, agent->context);
    g_source_unref(source);
    pthread_mutex_lock(&agent->mutex);
    while (!call.done && !agent->loop_exited) pthread_cond_wait(&agent->cond, &agent->mutex);
    int result = call.done ? call.result : CWEBRTC_ICE_ERROR_CLOSED;
    pthread_mutex_unlock(&agent->mutex);
    return result;
}

// MARK: - libnice signals and receive (loop thread)

static int map_state(guint state) {
    switch (state) {
    case NICE_COMPONENT_STATE_GATHERING: return CWEBRTC_ICE_STATE_GATHERING;
    case NICE_COMPONENT_STATE_CONNECTING: return CWEBRTC_ICE_STATE_CONNECTING;
    case NICE_COMPONENT_STATE_CONNECTED: return CWEBRTC_ICE_STATE_CONNECTED;
    case NICE_COMPONENT_STATE_READY: return CWEBRTC_ICE_STATE_READY;
    case NICE_COMPONENT_STATE_FAILED: return CWEBRTC_ICE_STATE_FAILED;
    default: return CWEBRTC_ICE_STATE_NEW;
    }
}

static void on_state_changed(NiceAgent *nice, guint stream_id, guint component_id, guint state, gpointer data) {
    (void)nice, (void)stream_id, (void)component_id;
    cwebrtc_ice_agent *agent = data;
    if (is_closed(agent)) return;
    int mapped = map_state(state);
    __atomic_store_n(&agent->state, mapped, __ATOMIC_RELEASE);
    if (agent->callbacks.on_state != NULL) agent->callbacks.on_state(agent->callbacks.context, mapped);
}

static void on_gathering_done(NiceAgent *nice, guint stream_id, gpointer data) {
    (void)nice, (void)stream_id;
    cwebrtc_ice_agent *agent = data;
    pthread_mutex_lock(&agent->mutex);
    agent->gathering_done = 1;
    pthread_cond_broadcast(&agent->cond);
    pthread_mutex_unlock(&agent->mutex);
}

static void format_address(const NiceAddress *address, char *buffer, size_t capacity) {
    char text[NICE_ADDRESS_STRING_LEN];
    nice_address_to_string(address, text);
    if (nice_address_ip_version(address) == 6) {
        snprintf(buffer, capacity, "[%s]:%u", text, nice_address_get_port(address));
    } else {
        snprintf(buffer, capacity, "%s:%u", text, nice_address_get_port(address));
    }
}

static void on_selected_pair(NiceAgent *nice, guint stream_id, guint component_id, NiceCandidate *local,
                             NiceCandidate *remote, gpointer data) {
    (void)nice, (void)stream_id, (void)component_id;
    cwebrtc_ice_agent *agent = data;
    if (is_closed(agent)) return;
    char local_text[64], remote_text[64];
    format_address(&local->addr, local_text, sizeof local_text);
    format_address(&remote->addr, remote_text, sizeof remote_text);
    GSocket *socket = nice_agent_get_selected_socket(nice, stream_id, component_id);
    agent->selected_socket_fd = socket != NULL ? g_socket_get_fd(socket) : -1;
    if (socket != NULL) g_object_unref(socket); // the agent keeps it while the pair is selected
    pthread_mutex_lock(&agent->mutex);
    memcpy(agent->selected_local, local_text, sizeof local_text);
    memcpy(agent->selected_remote, remote_text, sizeof remote_text);
    agent->has_selected = 1;
    pthread_mutex_unlock(&agent->mutex);
    if (agent->callbacks.on_selected_pair != NULL) {
        agent->callbacks.on_selected_pair(agent->callbacks.context, local_text, remote_text);
    }
}

static void on_receive(NiceAgent *nice, guint stream_id, guint component_id, guint length, gchar *bytes,
                       gpointer data) {
    (void)nice, (void)stream_id, (void)component_id;
    cwebrtc_ice_agent *agent = data;
    if (is_closed(agent) || agent->callbacks.on_receive == NULL) return;
    agent->callbacks.on_receive(agent->callbacks.context, (const uint8_t *)bytes, length);
    // Nothing more queued: end libnice's read loop before the read that would find none.
    int queued = 0;
    if (agent->selected_socket_fd >= 0 && ioctl(agent->selected_socket_fd, FIONREAD, &queued) == 0 && queued == 0 &&
        !is_closed(agent)) {
        nice_agent_attach_recv(nice, stream_id, component_id, agent->context, NULL, NULL);
        agent->receive_detached = 1;
    }
}

static gboolean reattach_prepare(GSource *source, gint *timeout) {
    cwebrtc_ice_agent *agent = *(cwebrtc_ice_agent **)(source + 1);
    *timeout = -1;
    if (agent->receive_detached && !is_closed(agent)) {
        agent->receive_detached = 0;
        nice_agent_attach_recv(agent->nice, agent->stream_id, 1, agent->context, on_receive, agent);
    }
    return FALSE;
}

static gboolean reattach_check(GSource *source) {
    (void)source;
    return FALSE;
}

static gboolean reattach_dispatch(GSource *source, GSourceFunc callback, gpointer data) {
    (void)source, (void)callback, (void)data;
    return G_SOURCE_CONTINUE;
}

static GSourceFuncs reattach_funcs = {reattach_prepare, reattach_check, reattach_dispatch, NULL, NULL, NULL};

// MARK: - Scheduled tasks

/// The task's agent, read with acquire: the task and its context were built on the scheduling
/// thread, and GLib hands the source over through a futex that ThreadSanitizer cannot see, so this
/// load pairs with the release store in cwebrtc_ice_agent_schedule to order them.
static cwebrtc_ice_agent *task_agent(ice_task *task) { return __atomic_load_n(&task->agent, __ATOMIC_ACQUIRE); }

static gboolean task_dispatch(gpointer data) {
    ice_task *task = data;
    cwebrtc_ice_agent *agent = task_agent(task);
    pthread_mutex_lock(&agent->mutex);
    task->ran = 1;
    pthread_mutex_unlock(&agent->mutex);
    if (!is_closed(agent)) task->run(task->context);
    return G_SOURCE_REMOVE;
}

static void task_destroyed(gpointer data) {
    ice_task *task = data;
    cwebrtc_ice_agent *agent = task_agent(task);
    pthread_mutex_lock(&agent->mutex);
    for (ice_task **link = &agent->tasks; *link != NULL; link = &(*link)->next) {
        if (*link == task) {
            *link = task->next;
            break;
        }
    }
    pthread_mutex_unlock(&agent->mutex);
    if (task->release != NULL) task->release(task->context);
    g_free(task);
}

unsigned cwebrtc_ice_agent_schedule(cwebrtc_ice_agent *agent, int delay_ms, cwebrtc_ice_task_fn run,
                                    cwebrtc_ice_task_fn release, void *context) {
    pthread_mutex_lock(&agent->mutex);
    if (is_closed(agent) || run == NULL) {
        pthread_mutex_unlock(&agent->mutex);
        if (release != NULL) release(context);
        return 0;
    }
    ice_task *task = g_new0(ice_task, 1);
    task->run = run;
    task->release = release;
    task->context = context;
    __atomic_store_n(&task->agent, agent, __ATOMIC_RELEASE); // last: publishes the task (task_agent)
    GSource *source = g_timeout_source_new(delay_ms > 0 ? (guint)delay_ms : 0);
    g_source_set_callback(source, task_dispatch, task, task_destroyed);
    // Listed before the lock is released: task_destroyed, which unlists it, takes the lock.
    task->id = g_source_attach(source, agent->context);
    g_source_unref(source);
    task->next = agent->tasks;
    agent->tasks = task;
    unsigned id = task->id;
    pthread_mutex_unlock(&agent->mutex);
    return id;
}

static int op_cancel(cwebrtc_ice_agent *agent, void *argument) {
    guint id = *(guint *)argument;
    int pending = 0;
    pthread_mutex_lock(&agent->mutex);
    for (ice_task *task = agent->tasks; task != NULL; task = task->next) {
        if (task->id == id) {
            pending = !task->ran;
            break;
        }
    }
    pthread_mutex_unlock(&agent->mutex);
    if (!pending) return 0;
    GSource *source = g_main_context_find_source_by_id(agent->context, id);
    if (source == NULL) return 0;
    g_source_destroy(source);
    return 1;
}

int cwebrtc_ice_agent_cancel(cwebrtc_ice_agent *agent, unsigned task_id) {
    guint id = task_id;
    if (id == 0) return 0;
    int result = run_on_loop(agent, op_cancel, &id);
    return result > 0 ? 1 : 0;
}

// MARK: - Loop thread, close and free

static gboolean mark_running(gpointer data) {
    cwebrtc_ice_agent *agent = data;
    pthread_mutex_lock(&agent->mutex);
    agent->running = 1;
    pthread_cond_broadcast(&agent->cond);
    pthread_mutex_unlock(&agent->mutex);
    return G_SOURCE_REMOVE;
}

static void release_reference(cwebrtc_ice_agent *agent) {
    if (__atomic_sub_fetch(&agent->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    g_main_loop_unref(agent->loop);
    g_main_context_unref(agent->context);
    pthread_rwlock_destroy(&agent->send_lock);
    pthread_cond_destroy(&agent->cond);
    pthread_mutex_destroy(&agent->mutex);
    free(agent);
}

/// After the loop stopped, on the loop thread: releases every task, the libnice agent (its
/// sockets with it) and the callbacks' context.
static void teardown(cwebrtc_ice_agent *agent) {
    pthread_mutex_lock(&agent->mutex);
    guint count = 0;
    for (ice_task *task = agent->tasks; task != NULL; task = task->next) count++;
    guint *ids = g_new0(guint, count + 1);
    count = 0;
    for (ice_task *task = agent->tasks; task != NULL; task = task->next) ids[count++] = task->id;
    pthread_mutex_unlock(&agent->mutex);
    for (guint i = 0; i < count; i++) {
        GSource *source = g_main_context_find_source_by_id(agent->context, ids[i]);
        if (source != NULL) g_source_destroy(source);
    }
    g_free(ids);

    g_source_destroy(agent->reattach);
    g_source_unref(agent->reattach);
    agent->reattach = NULL;
    nice_agent_attach_recv(agent->nice, agent->stream_id, 1, agent->context, NULL, NULL);
    g_signal_handlers_disconnect_by_data(agent->nice, agent);
    g_object_unref(agent->nice);
    agent->nice = NULL;
    // Let what the agent's disposal queued (and calls posted while closing) run out.
    for (int i = 0; i < 64 && g_main_context_iteration(agent->context, FALSE); i++) {
    }
    if (agent->callbacks.release != NULL) agent->callbacks.release(agent->callbacks.context);
    agent->callbacks = (cwebrtc_ice_callbacks){0};
    __atomic_store_n(&agent->state, CWEBRTC_ICE_STATE_CLOSED, __ATOMIC_RELEASE);
}

static void *loop_main(void *argument) {
    cwebrtc_ice_agent *agent = argument;
    __atomic_store_n(&agent->thread_id, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
    g_main_context_push_thread_default(agent->context);
    GSource *started = g_idle_source_new();
    g_source_set_priority(started, G_PRIORITY_HIGH);
    g_source_set_callback(started, mark_running, agent, NULL);
    g_source_attach(started, agent->context);
    g_source_unref(started);

    g_main_loop_run(agent->loop);

    teardown(agent);
    g_main_context_pop_thread_default(agent->context);
    pthread_mutex_lock(&agent->mutex);
    agent->loop_exited = 1;
    pthread_cond_broadcast(&agent->cond);
    pthread_mutex_unlock(&agent->mutex);
    __atomic_sub_fetch(&live_loop_threads, 1, __ATOMIC_ACQ_REL);
    release_reference(agent);
    return NULL;
}

void cwebrtc_ice_agent_close(cwebrtc_ice_agent *agent) {
    if (agent == NULL) return;
    int on_loop = cwebrtc_ice_agent_is_loop_thread(agent);
    pthread_mutex_lock(&agent->mutex);
    int first = !agent->close_started;
    agent->close_started = 1;
    __atomic_store_n(&agent->closed, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&agent->mutex);
    if (first) {
        // Every send that saw the agent open has finished once the write lock is had.
        pthread_rwlock_wrlock(&agent->send_lock);
        pthread_rwlock_unlock(&agent->send_lock);
        g_main_loop_quit(agent->loop);
        if (on_loop) {
            pthread_detach(pthread_self());
        } else {
            pthread_join(agent->thread, NULL);
        }
        return;
    }
    if (on_loop) return;
    pthread_mutex_lock(&agent->mutex);
    while (!agent->loop_exited) pthread_cond_wait(&agent->cond, &agent->mutex);
    pthread_mutex_unlock(&agent->mutex);
}

void cwebrtc_ice_agent_free(cwebrtc_ice_agent *agent) {
    if (agent == NULL) return;
    cwebrtc_ice_agent_close(agent);
    release_reference(agent);
}

// MARK: - Creation

cwebrtc_ice_agent *cwebrtc_ice_agent_create(int controlling, const char *local_addresses,
                                            const cwebrtc_ice_callbacks *callbacks, char *error,
                                            int error_capacity) {
    cwebrtc_ice_agent *agent = calloc(1, sizeof *agent);
    if (agent == NULL) {
        set_error(error, error_capacity, "%s", "out of memory creating the ICE agent");
        if (callbacks != NULL && callbacks->release != NULL) callbacks->release(callbacks->context);
        return NULL;
    }
    if (callbacks != NULL) agent->callbacks = *callbacks;
    pthread_mutex_init(&agent->mutex, NULL);
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&agent->cond, &attributes);
    pthread_condattr_destroy(&attributes);
    pthread_rwlock_init(&agent->send_lock, NULL);
    agent->refs = 1;
    agent->context = g_main_context_new();
    agent->loop = g_main_loop_new(agent->context, FALSE);
    agent->nice = nice_agent_new(agent->context, NICE_COMPATIBILITY_RFC5245);
    // UDP host candidates only: no UPnP discovery (it would delay gathering), no ICE-TCP.
    g_object_set(agent->nice, "controlling-mode", controlling ? TRUE : FALSE, "upnp", FALSE, "ice-tcp", FALSE,
                 NULL);

    int ok = 1;
    if (local_addresses != NULL) {
        char *copy = g_strdup(local_addresses);
        char *cursor = NULL;
        for (char *token = strtok_r(copy, " ,\t\r\n", &cursor); token != NULL;
             token = strtok_r(NULL, " ,\t\r\n", &cursor)) {
            NiceAddress address;
            nice_address_init(&address);
            if (!nice_address_set_from_string(&address, token)) {
                set_error(error, error_capacity, "local address '%s' is not an IP address", token);
                ok = 0;
                break;
            }
            if (!nice_agent_add_local_address(agent->nice, &address)) {
                set_error(error, error_capacity, "libnice refused local address '%s'", token);
                ok = 0;
                break;
            }
        }
        g_free(copy);
    }
    if (ok) {
        agent->stream_id = nice_agent_add_stream(agent->nice, 1);
        if (agent->stream_id == 0) {
            set_error(error, error_capacity, "%s", "libnice could not add the ICE stream");
            ok = 0;
        }
    }
    if (ok) {
        g_signal_connect(agent->nice, "component-state-changed", G_CALLBACK(on_state_changed), agent);
        g_signal_connect(agent->nice, "candidate-gathering-done", G_CALLBACK(on_gathering_done), agent);
        g_signal_connect(agent->nice, "new-selected-pair-full", G_CALLBACK(on_selected_pair), agent);
        nice_agent_attach_recv(agent->nice, agent->stream_id, 1, agent->context, on_receive, agent);
        agent->selected_socket_fd = -1;
        agent->reattach = g_source_new(&reattach_funcs, sizeof(GSource) + sizeof(cwebrtc_ice_agent *));
        *(cwebrtc_ice_agent **)(agent->reattach + 1) = agent;
        g_source_set_priority(agent->reattach, G_PRIORITY_HIGH);
        g_source_attach(agent->reattach, agent->context);
        agent->refs = 2;
        __atomic_add_fetch(&live_loop_threads, 1, __ATOMIC_ACQ_REL);
        int status = pthread_create(&agent->thread, NULL, loop_main, agent);
        if (status != 0) {
            __atomic_sub_fetch(&live_loop_threads, 1, __ATOMIC_ACQ_REL);
            agent->refs = 1;
            set_error(error, error_capacity, "could not start the ICE loop thread: %s", strerror(status));
            ok = 0;
        }
    }
    if (!ok) {
        if (agent->reattach != NULL) {
            g_source_destroy(agent->reattach);
            g_source_unref(agent->reattach);
        }
        g_signal_handlers_disconnect_by_data(agent->nice, agent);
        g_object_unref(agent->nice);
        if (agent->callbacks.release != NULL) agent->callbacks.release(agent->callbacks.context);
        release_reference(agent);
        return NULL;
    }
    pthread_mutex_lock(&agent->mutex);
    while (!agent->running) pthread_cond_wait(&agent->cond, &agent->mutex);
    pthread_mutex_unlock(&agent->mutex);
    return agent;
}

// MARK: - Gathering and credentials

static int op_port_range(cwebrtc_ice_agent *agent, void *argument) {
    const int *range = argument;
    if (agent->gathering_started) return CWEBRTC_ICE_ERROR_INVALID_ARGUMENT;
    nice_agent_set_port_range(agent->nice, agent->stream_id, 1, (guint)range[0], (guint)range[1]);
    return 0;
}

int cwebrtc_ice_agent_set_port_range(cwebrtc_ice_agent *agent, int minimum, int maximum) {
    if (minimum < 1 || maximum > 65535 || minimum > maximum) return CWEBRTC_ICE_ERROR_INVALID_ARGUMENT;
    int range[2] = {minimum, maximum};
    return run_on_loop(agent, op_port_range, range);
}

static int op_gather(cwebrtc_ice_agent *agent, void *argument) {
    (void)argument;
    if (agent->gathering_started) return 0;
    if (!nice_agent_gather_candidates(agent->nice, agent->stream_id)) return CWEBRTC_ICE_ERROR_FAILED;
    agent->gathering_started = 1;
    return 0;
}

int cwebrtc_ice_agent_gather(cwebrtc_ice_agent *agent, int timeout_ms) {
    int status = run_on_loop(agent, op_gather, NULL);
    if (status != 0) return status;
    int on_loop = cwebrtc_ice_agent_is_loop_thread(agent);
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    long long nanoseconds = (long long)deadline.tv_nsec + (long long)(timeout_ms > 0 ? timeout_ms : 0) * 1000000LL;
    deadline.tv_sec += (time_t)(nanoseconds / 1000000000LL);
    deadline.tv_nsec = (long)(nanoseconds % 1000000000LL);
    pthread_mutex_lock(&agent->mutex);
    int timed_out = 0;
    while (!agent->gathering_done && !agent->loop_exited && !is_closed(agent) && !on_loop && !timed_out) {
        timed_out = pthread_cond_timedwait(&agent->cond, &agent->mutex, &deadline) == ETIMEDOUT;
    }
    int done = agent->gathering_done;
    pthread_mutex_unlock(&agent->mutex);
    if (is_closed(agent)) return CWEBRTC_ICE_ERROR_CLOSED;
    if (done) return 0;
    return on_loop ? CWEBRTC_ICE_ERROR_WRONG_THREAD : CWEBRTC_ICE_ERROR_TIMEOUT;
}

typedef struct {
    char *buffer;
    int capacity;
} text_out;

static int op_local_candidates(cwebrtc_ice_agent *agent, void *argument) {
    text_out *out = argument;
    GSList *candidates = nice_agent_get_local_candidates(agent->nice, agent->stream_id, 1);
    int length = 0;
    if (out->capacity > 0) out->buffer[0] = 0;
    for (GSList *item = candidates; item != NULL; item = item->next) {
        gchar *sdp = nice_agent_generate_local_candidate_sdp(agent->nice, item->data);
        if (sdp == NULL) continue;
        const char *value = g_str_has_prefix(sdp, "a=") ? sdp + 2 : sdp;
        int value_length = (int)strlen(value);
        int separator = length > 0 ? 1 : 0;
        if (length + separator + value_length < out->capacity) {
            if (separator) out->buffer[length] = '\n';
            memcpy(out->buffer + length + separator, value, (size_t)value_length + 1);
        }
        length += separator + value_length;
        g_free(sdp);
    }
    g_slist_free_full(candidates, (GDestroyNotify)nice_candidate_free);
    return length;
}

int cwebrtc_ice_agent_local_candidates(cwebrtc_ice_agent *agent, char *buffer, int capacity) {
    text_out out = {buffer, buffer != NULL ? capacity : 0};
    return run_on_loop(agent, op_local_candidates, &out);
}

typedef struct {
    char *ufrag;
    int ufrag_capacity;
    char *password;
    int password_capacity;
} credentials_out;

static int op_local_credentials(cwebrtc_ice_agent *agent, void *argument) {
    credentials_out *out = argument;
    gchar *ufrag = NULL, *password = NULL;
    if (!nice_agent_get_local_credentials(agent->nice, agent->stream_id, &ufrag, &password)) {
        return CWEBRTC_ICE_ERROR_FAILED;
    }
    int status = 0;
    if ((int)strlen(ufrag) >= out->ufrag_capacity || (int)strlen(password) >= out->password_capacity) {
        status = CWEBRTC_ICE_ERROR_INVALID_ARGUMENT;
    } else {
        strcpy(out->ufrag, ufrag);
        strcpy(out->password, password);
    }
    g_free(ufrag);
    g_free(password);
    return status;
}

int cwebrtc_ice_agent_local_credentials(cwebrtc_ice_agent *agent, char *ufrag, int ufrag_capacity,
                                        char *password, int password_capacity) {
    if (ufrag == NULL || password == NULL) return CWEBRTC_ICE_ERROR_INVALID_ARGUMENT;
    credentials_out out = {ufrag, ufrag_capacity, password, password_capacity};
    return run_on_loop(agent, op_local_credentials, &out);
}

// MARK: - Remote description

typedef struct {
    const char *ufrag;
    const char *password;
    const char *candidates;
    int bad_line;
} remote_in;

static int is_number(const char *token, unsigned long maximum) {
    if (token == NULL || *token == 0) return 0;
    for (const char *c = token; *c != 0; c++) {
        if (*c < '0' || *c > '9') return 0;
    }
    errno = 0;
    unsigned long value = strtoul(token, NULL, 10);
    return errno == 0 && value <= maximum;
}

/// The checks libnice's parser leaves out: single spaces, numeric component, priority and port,
/// "typ" in its place.
static int candidate_well_formed(const char *value) {
    if (!g_str_has_prefix(value, "candidate:")) return 0;
    gchar **tokens = g_strsplit(value + strlen("candidate:"), " ", 0);
    guint count = g_strv_length(tokens);
    int ok = count >= 8;
    for (guint i = 0; ok && i < count; i++) ok = tokens[i][0] != 0;
    ok = ok && is_number(tokens[1], 256) && strtoul(tokens[1], NULL, 10) >= 1;
    ok = ok && is_number(tokens[3], 0xFFFFFFFFUL);
    ok = ok && is_number(tokens[5], 65535);
    ok = ok && strcmp(tokens[6], "typ") == 0;
    g_strfreev(tokens);
    return ok;
}

static int op_set_remote(cwebrtc_ice_agent *agent, void *argument) {
    remote_in *in = argument;
    GSList *parsed = NULL;
    int status = 0;
    if (in->candidates != NULL && in->candidates[0] != 0) {
        gchar **lines = g_strsplit(in->candidates, "\n", 0);
        for (int i = 0; lines[i] != NULL; i++) {
            gchar *line = g_strstrip(lines[i]);
            const char *value = g_str_has_prefix(line, "a=") ? line + 2 : line;
            NiceCandidate *candidate = NULL;
            if (candidate_well_formed(value)) {
                gchar *attribute = g_strconcat("a=", value, NULL);
                candidate = nice_agent_parse_remote_candidate_sdp(agent->nice, agent->stream_id, attribute);
                g_free(attribute);
            }
            if (candidate == NULL) {
                in->bad_line = i;
                status = CWEBRTC_ICE_ERROR_INVALID_FORMAT;
                break;
            }
            if (candidate->component_id != 1) {
                nice_candidate_free(candidate); // RTCP rides on component 1 (rtcp-mux)
                continue;
            }
            parsed = g_slist_append(parsed, candidate);
        }
        g_strfreev(lines);
    }
    if (status == 0 && !nice_agent_set_remote_credentials(agent->nice, agent->stream_id, in->ufrag, in->password)) {
        status = CWEBRTC_ICE_ERROR_INVALID_ARGUMENT;
    }
    if (status == 0 && parsed != NULL && nice_agent_set_remote_candidates(agent->nice, agent->stream_id, 1, parsed) < 0) {
        status = CWEBRTC_ICE_ERROR_FAILED;
    }
    g_slist_free_full(parsed, (GDestroyNotify)nice_candidate_free);
    return status;
}

int cwebrtc_ice_agent_set_remote(cwebrtc_ice_agent *agent, const char *ufrag, const char *password,
                                 const char *candidates, int *bad_line) {
    if (bad_line != NULL) *bad_line = -1;
    if (ufrag == NULL || password == NULL || ufrag[0] == 0 || password[0] == 0) {
        return CWEBRTC_ICE_ERROR_INVALID_ARGUMENT;
    }
    remote_in in = {ufrag, password, candidates, -1};
    int status = run_on_loop(agent, op_set_remote, &in);
    if (bad_line != NULL) *bad_line = in.bad_line;
    return status;
}

// MARK: - Send, restart, selected pair

int cwebrtc_ice_agent_send(cwebrtc_ice_agent *agent, const void *bytes, size_t length) {
    if (is_closed(agent) || length > G_MAXUINT) return -1;
    pthread_rwlock_rdlock(&agent->send_lock);
    int sent = -1;
    if (!is_closed(agent)) sent = nice_agent_send(agent->nice, agent->stream_id, 1, (guint)length, bytes);
    pthread_rwlock_unlock(&agent->send_lock);
    return sent < 0 ? -1 : sent;
}

static int op_restart(cwebrtc_ice_agent *agent, void *argument) {
    (void)argument;
    return nice_agent_restart_stream(agent->nice, agent->stream_id) ? 0 : CWEBRTC_ICE_ERROR_FAILED;
}

int cwebrtc_ice_agent_restart(cwebrtc_ice_agent *agent) { return run_on_loop(agent, op_restart, NULL); }

int cwebrtc_ice_agent_selected_pair(cwebrtc_ice_agent *agent, char *local, int local_capacity, char *remote,
                                    int remote_capacity) {
    pthread_mutex_lock(&agent->mutex);
    int has = agent->has_selected && !is_closed(agent);
    if (has) {
        snprintf(local, (size_t)local_capacity, "%s", agent->selected_local);
        snprintf(remote, (size_t)remote_capacity, "%s", agent->selected_remote);
    }
    pthread_mutex_unlock(&agent->mutex);
    return has;
}
