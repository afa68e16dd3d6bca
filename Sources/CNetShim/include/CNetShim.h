#ifndef CNETSHIM_H
#define CNETSHIM_H
// UDP sockets for RTP/RTCP: binding (IPv4 or IPv6), waiting on several sockets and an eventfd,
// batched receive (recvmmsg into a caller-owned slab of fixed-size slots, no allocation) and
// sending to resolved addresses. Errors are -errno.

#include <stdint.h>

/// A resolved socket address (IPv4 or IPv6), kept by value so sending needs no lookup.
typedef struct {
    uint8_t storage[28];  // a sockaddr_in or sockaddr_in6
    uint32_t length;      // 0: no address
} cnet_peer;

/// Fills `*peer` from a numeric IPv4 or IPv6 `address` and `port`. Returns 0 or -EINVAL.
int cnet_peer_make(const char *address, int port, cnet_peer *peer);

/// The port of `peer` (host order), and its address as text into `text` (at least 46 bytes).
int cnet_peer_describe(const cnet_peer *peer, char *text, int text_size);

/// Binds a UDP socket to `address` (numeric IPv4 or IPv6; NULL or "" for any IPv4) and `port`
/// (0: the system picks). Returns the descriptor, or -errno. `*bound_port` gets the port.
int cnet_udp_bind(const char *address, int port, int *bound_port);

/// Receives up to `count` datagrams waiting now (recvmmsg, no waiting) into `slab` (`count`
/// slots of `slot_size` bytes). `lengths[i]` gets each one's size (datagrams longer than a slot
/// are cut: their length is reported as slot_size + 1) and `from[i]` (may be NULL) its sender.
/// Returns the number received, 0 when none waits, or -errno.
int cnet_udp_receive_peers(int fd, uint8_t *slab, int slot_size, int count, int *lengths, cnet_peer *from);

/// Sends one datagram to `peer`. Returns the bytes sent or -errno.
int cnet_udp_send_to(int fd, const uint8_t *data, int length, const cnet_peer *peer);

/// Sends `count` datagrams (`data[i]`, `lengths[i]` bytes) to `peer` with as few system calls as
/// the kernel allows (sendmmsg, up to 64 a call). A datagram the system refuses is skipped, as
/// a failed sendto would lose it. Returns how many were sent, or -errno when none could be.
int cnet_udp_send_batch(int fd, const uint8_t *const *data, const int *lengths, int count, const cnet_peer *peer);

/// Waits up to `timeout_ms` until one of `count` sockets has a datagram; `readable[i]` is set
/// to 1 for those that do. Returns how many, 0 on timeout, or -errno.
int cnet_wait(const int *fds, int count, int timeout_ms, int *readable);

/// An event descriptor (eventfd, non-blocking) to wake a thread waiting in cnet_wait. Returns
/// the descriptor or -errno.
int cnet_event_open(void);

/// Makes `fd` readable (wakes its waiter).
void cnet_event_signal(int fd);

/// Makes `fd` unreadable again.
void cnet_event_clear(int fd);

/// Closes a socket.
void cnet_close(int fd);

#endif
