#ifndef CWEBRTC_ICE_H
#define CWEBRTC_ICE_H
// ICE over libnice: one full agent (RFC 5245/8445), one stream, one component (BUNDLE + rtcp-mux),
// UDP host candidates. The agent runs on a private GLib main context whose loop runs on a thread
// the agent owns, started by create and joined by close. Every callback, every scheduled task and
// every libnice signal runs on that loop thread; the calls below that change the agent post their
// work to it and wait for it, so they may be made from any other thread.
//
// Plain C types only: nothing of GLib or libnice is visible here.
#include <stddef.h>
#include <stdint.h>

/// An ICE agent and the thread its loop runs on. Opaque.
typedef struct cwebrtc_ice_agent cwebrtc_ice_agent;

/// The connection states an agent reports (libnice's component states).
enum {
    /// Nothing started yet (libnice: disconnected).
    CWEBRTC_ICE_STATE_NEW = 0,
    /// Gathering local candidates (also right after an ICE restart).
    CWEBRTC_ICE_STATE_GATHERING = 1,
    /// Connectivity checks running, no working pair yet.
    CWEBRTC_ICE_STATE_CONNECTING = 2,
    /// At least one working pair; datagrams can flow.
    CWEBRTC_ICE_STATE_CONNECTED = 3,
    /// A pair was nominated; checks concluded.
    CWEBRTC_ICE_STATE_READY = 4,
    /// Every check failed.
    CWEBRTC_ICE_STATE_FAILED = 5,
    /// The agent was closed.
    CWEBRTC_ICE_STATE_CLOSED = 6,
};

/// Status codes: 0 is success, these are failures.
enum {
    /// An argument the agent does not accept (an address, empty credentials).
    CWEBRTC_ICE_ERROR_INVALID_ARGUMENT = -1,
    /// A remote candidate line that does not parse.
    CWEBRTC_ICE_ERROR_INVALID_FORMAT = -2,
    /// Gathering did not finish within the timeout.
    CWEBRTC_ICE_ERROR_TIMEOUT = -3,
    /// The agent is closed.
    CWEBRTC_ICE_ERROR_CLOSED = -4,
    /// libnice refused the operation.
    CWEBRTC_ICE_ERROR_FAILED = -5,
    /// A blocking call made on the agent's own loop thread, which would wait for itself.
    CWEBRTC_ICE_ERROR_WRONG_THREAD = -6,
};

/// A state change (one of `CWEBRTC_ICE_STATE_*`). On the loop thread.
typedef void (*cwebrtc_ice_state_fn)(void *context, int state);
/// A datagram from the peer. On the loop thread; `bytes` is valid only during the call.
typedef void (*cwebrtc_ice_receive_fn)(void *context, const uint8_t *bytes, size_t length);
/// A new selected pair, as "address:port" ("[v6]:port" for IPv6). On the loop thread; the
/// strings are valid only during the call.
typedef void (*cwebrtc_ice_pair_fn)(void *context, const char *local, const char *remote);
/// A task, or the release of its context.
typedef void (*cwebrtc_ice_task_fn)(void *context);

/// What an agent calls, and the context passed to each. `release` (may be NULL) is called once,
/// on the loop thread after its last callback, when the agent is torn down.
typedef struct {
    cwebrtc_ice_state_fn on_state;
    cwebrtc_ice_receive_fn on_receive;
    cwebrtc_ice_pair_fn on_selected_pair;
    cwebrtc_ice_task_fn release;
    void *context;
} cwebrtc_ice_callbacks;

/// Creates an agent, controlling (nonzero) or controlled, and starts its loop thread.
/// `local_addresses`: addresses to gather on, separated by spaces, commas or newlines; NULL or
/// empty for every interface. NULL on failure, with a message naming the value at fault in
/// `error`; the callbacks' `release` is then called before returning.
cwebrtc_ice_agent *cwebrtc_ice_agent_create(int controlling, const char *local_addresses,
                                            const cwebrtc_ice_callbacks *callbacks, char *error,
                                            int error_capacity);

/// Stops the agent: no callback runs after this returns, every socket is closed, the loop thread
/// is joined. Idempotent. Called on the loop thread itself (from a callback), it stops the agent
/// the same way but the teardown finishes, and the thread ends, once that callback returns.
void cwebrtc_ice_agent_close(cwebrtc_ice_agent *agent);

/// Closes the agent if needed and releases the handle. The handle must not be used afterwards.
void cwebrtc_ice_agent_free(cwebrtc_ice_agent *agent);

/// Starts gathering (once) and waits up to `timeout_ms` for it to finish. 0 or an error.
/// Binds the candidates gathered later to a port in minimum...maximum (before gathering).
int cwebrtc_ice_agent_set_port_range(cwebrtc_ice_agent *agent, int minimum, int maximum);
int cwebrtc_ice_agent_gather(cwebrtc_ice_agent *agent, int timeout_ms);

/// The local candidates as SDP attribute values without "a=", separated by '\n', into `buffer`
/// (NUL-terminated when it fits). Returns the length of the full text (without NUL), which may
/// exceed `capacity - 1`: call again with a larger buffer then. Negative on error.
int cwebrtc_ice_agent_local_candidates(cwebrtc_ice_agent *agent, char *buffer, int capacity);

/// The local ufrag and password. 0 or an error (a buffer too small is INVALID_ARGUMENT).
int cwebrtc_ice_agent_local_credentials(cwebrtc_ice_agent *agent, char *ufrag, int ufrag_capacity,
                                        char *password, int password_capacity);

/// Sets the remote credentials and adds the remote candidates: SDP attribute values, with or
/// without "a=", separated by '\n'. Candidates of components other than 1 are skipped (rtcp-mux).
/// All lines are checked before any is used: on INVALID_FORMAT, `bad_line` holds the 0-based
/// index of the first line at fault. 0 or an error.
int cwebrtc_ice_agent_set_remote(cwebrtc_ice_agent *agent, const char *ufrag, const char *password,
                                 const char *candidates, int *bad_line);

/// Sends one datagram on the selected pair. Any thread; allocates nothing of its own. Returns the
/// bytes sent, or -1 when there is no selected pair or the agent is closed.
int cwebrtc_ice_agent_send(cwebrtc_ice_agent *agent, const void *bytes, size_t length);

/// ICE restart: new local credentials, remote candidates forgotten, checks start again once new
/// remote credentials and candidates are set. Local candidates stay. 0 or an error.
int cwebrtc_ice_agent_restart(cwebrtc_ice_agent *agent);

/// The current state (`CWEBRTC_ICE_STATE_*`).
int cwebrtc_ice_agent_state(const cwebrtc_ice_agent *agent);

/// The selected pair as "address:port" strings. 1 when there is one, 0 when not.
int cwebrtc_ice_agent_selected_pair(cwebrtc_ice_agent *agent, char *local, int local_capacity, char *remote,
                                    int remote_capacity);

/// Runs `run(context)` on the loop thread after `delay_ms` (0: as soon as the loop gets to it;
/// tasks with equal delays run in the order scheduled). `release(context)` (may be NULL) is
/// called exactly once, on the loop thread, after the task ran or when it is cancelled or the
/// agent torn down. Any thread. Returns the task's id (nonzero), or 0 when the agent is closed
/// (`release` has then been called).
unsigned cwebrtc_ice_agent_schedule(cwebrtc_ice_agent *agent, int delay_ms, cwebrtc_ice_task_fn run,
                                    cwebrtc_ice_task_fn release, void *context);

/// Cancels a scheduled task that has not run. Any thread: when it returns, the task either ran
/// already or never will. 1 when the task was cancelled, 0 when it had run or is unknown.
int cwebrtc_ice_agent_cancel(cwebrtc_ice_agent *agent, unsigned task_id);

/// 1 on the agent's loop thread, 0 elsewhere.
int cwebrtc_ice_agent_is_loop_thread(const cwebrtc_ice_agent *agent);

/// The Linux thread id of the loop thread (its entry in /proc/self/task).
int cwebrtc_ice_agent_loop_thread_id(const cwebrtc_ice_agent *agent);

/// How many loop threads of agents are running in this process.
int cwebrtc_ice_live_loop_threads(void);
#endif
