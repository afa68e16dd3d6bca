#define _GNU_SOURCE
#include "CNetShim.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

static int fill_address(const char *address, int port, struct sockaddr_storage *storage, socklen_t *length) {
    memset(storage, 0, sizeof(*storage));
    struct sockaddr_in *v4 = (struct sockaddr_in *)storage;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)storage;
    if (address == NULL || address[0] == 0) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        v4->sin_addr.s_addr = htonl(INADDR_ANY);
        *length = sizeof(*v4);
        return 0;
    }
    if (inet_pton(AF_INET, address, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *length = sizeof(*v4);
        return 0;
    }
    if (inet_pton(AF_INET6, address, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *length = sizeof(*v6);
        return 0;
    }
    return -EINVAL;
}

int cnet_udp_bind(const char *address, int port, int *bound_port) {
    struct sockaddr_storage storage;
    socklen_t length;
    int status = fill_address(address, port, &storage, &length);
    if (status < 0) return status;
    int fd = socket(storage.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int size = 4 << 20;  // room for a keyframe's burst
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    if (bind(fd, (struct sockaddr *)&storage, length) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    if (bound_port != NULL) {
        struct sockaddr_storage bound;
        socklen_t bound_length = sizeof(bound);
        getsockname(fd, (struct sockaddr *)&bound, &bound_length);
        *bound_port = bound.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
                                                  : ntohs(((struct sockaddr_in *)&bound)->sin_port);
    }
    return fd;
}

enum { MAX_BATCH = 64 };

int cnet_wait(const int *fds, int count, int timeout_ms, int *readable) {
    struct pollfd pfds[16];
    if (count > 16) count = 16;
    for (int i = 0; i < count; i++) {
        pfds[i].fd = fds[i];
        pfds[i].events = POLLIN;
        pfds[i].revents = 0;
    }
    int ready = poll(pfds, (nfds_t)count, timeout_ms);
    if (ready < 0) return errno == EINTR ? 0 : -errno;
    for (int i = 0; i < count; i++) readable[i] = (pfds[i].revents & POLLIN) != 0;
    return ready;
}

void cnet_close(int fd) { close(fd); }

int cnet_peer_make(const char *address, int port, cnet_peer *peer) {
    struct sockaddr_storage storage;
    socklen_t length;
    memset(peer, 0, sizeof(*peer));
    int status = fill_address(address, port, &storage, &length);
    if (status < 0) return status;
    if (length > sizeof(peer->storage)) return -EINVAL;
    memcpy(peer->storage, &storage, length);
    peer->length = length;
    return 0;
}

int cnet_peer_describe(const cnet_peer *peer, char *text, int text_size) {
    const struct sockaddr *address = (const struct sockaddr *)peer->storage;
    if (text_size > 0) text[0] = 0;
    if (peer->length == 0) return 0;
    if (address->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)peer->storage;
        inet_ntop(AF_INET6, &v6->sin6_addr, text, (socklen_t)text_size);
        return ntohs(v6->sin6_port);
    }
    const struct sockaddr_in *v4 = (const struct sockaddr_in *)peer->storage;
    inet_ntop(AF_INET, &v4->sin_addr, text, (socklen_t)text_size);
    return ntohs(v4->sin_port);
}

int cnet_udp_receive_peers(int fd, uint8_t *slab, int slot_size, int count, int *lengths, cnet_peer *from) {
    if (count > MAX_BATCH) count = MAX_BATCH;
    struct mmsghdr messages[MAX_BATCH];
    struct iovec vectors[MAX_BATCH];
    struct sockaddr_storage senders[MAX_BATCH];
    memset(messages, 0, sizeof(messages[0]) * (size_t)count);
    for (int i = 0; i < count; i++) {
        vectors[i].iov_base = slab + (size_t)i * (size_t)slot_size;
        vectors[i].iov_len = (size_t)slot_size;
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
        messages[i].msg_hdr.msg_name = &senders[i];
        messages[i].msg_hdr.msg_namelen = sizeof(senders[i]);
    }
    int received = recvmmsg(fd, messages, (unsigned int)count, MSG_DONTWAIT, NULL);
    if (received < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -errno;
    for (int i = 0; i < received; i++) {
        int truncated = (messages[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
        lengths[i] = truncated ? slot_size + 1 : (int)messages[i].msg_len;
        if (from != NULL) {
            socklen_t length = messages[i].msg_hdr.msg_namelen;
            if (length > sizeof(from[i].storage)) length = 0;
            memset(&from[i], 0, sizeof(from[i]));
            memcpy(from[i].storage, &senders[i], length);
            from[i].length = length;
        }
    }
    return received;
}

int cnet_udp_send_to(int fd, const uint8_t *data, int length, const cnet_peer *peer) {
    if (peer->length == 0) return -EDESTADDRREQ;
    ssize_t sent = sendto(fd, data, (size_t)length, 0, (const struct sockaddr *)peer->storage, peer->length);
    return sent < 0 ? -errno : (int)sent;
}

int cnet_udp_send_batch(int fd, const uint8_t *const *data, const int *lengths, int count, const cnet_peer *peer) {
    if (peer->length == 0) return -EDESTADDRREQ;
    enum { batch = 64 };
    struct mmsghdr messages[batch];
    struct iovec vectors[batch];
    int sent_total = 0, index = 0, last_error = 0;
    while (index < count) {
        int n = count - index < batch ? count - index : batch;
        for (int i = 0; i < n; i++) {
            vectors[i].iov_base = (void *)data[index + i];
            vectors[i].iov_len = (size_t)lengths[index + i];
            memset(&messages[i], 0, sizeof(messages[i]));
            messages[i].msg_hdr.msg_name = (void *)peer->storage;
            messages[i].msg_hdr.msg_namelen = peer->length;
            messages[i].msg_hdr.msg_iov = &vectors[i];
            messages[i].msg_hdr.msg_iovlen = 1;
        }
        int sent = sendmmsg(fd, messages, (unsigned int)n, 0);
        if (sent < 0 && errno == EINTR) continue;
        if (sent <= 0) {
            // The first of these was refused: it is lost, the rest are tried again.
            last_error = sent < 0 ? errno : EIO;
            index += 1;
            continue;
        }
        sent_total += sent;
        index += sent;
    }
    return sent_total == 0 && count > 0 ? -last_error : sent_total;
}

int cnet_event_open(void) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

void cnet_event_signal(int fd) {
    uint64_t one = 1;
    ssize_t written = write(fd, &one, sizeof(one));
    (void)written;
}

void cnet_event_clear(int fd) {
    uint64_t value;
    ssize_t read_bytes = read(fd, &value, sizeof(value));
    (void)read_bytes;
}
