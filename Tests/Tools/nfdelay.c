// nfdelay: a delay line for the tests' network namespaces, where the kernel has no netem.
// Packets an iptables NFQUEUE rule hands to queue QUEUE are held in the kernel and released
// (verdict ACCEPT) after DELAY_MS ± JITTER_MS (uniform); REORDER_PERCENT of them are released at
// once, so they overtake the ones held, as netem's "reorder" does. Runs until SIGTERM.
//   nfdelay QUEUE DELAY_MS JITTER_MS REORDER_PERCENT SEED
#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

enum { CAPACITY = 4096 };
static struct { uint32_t id; int64_t due; } held[CAPACITY];
static int count = 0;
static int delay_us, jitter_us, reorder_percent;
static volatile sig_atomic_t stopping = 0;
static uint64_t state;

static uint64_t next_random(void) {  // xorshift64*
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ULL;
}

static int64_t now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static int on_packet(struct nfq_q_handle *queue, struct nfgenmsg *message, struct nfq_data *data, void *context) {
    (void)message;
    (void)context;
    struct nfqnl_msg_packet_hdr *header = nfq_get_msg_packet_hdr(data);
    if (header == NULL) return 0;
    uint32_t id = ntohl(header->packet_id);
    int64_t wait = delay_us;
    if (jitter_us > 0) wait += (int64_t)(next_random() % (uint64_t)(2 * jitter_us + 1)) - jitter_us;
    if ((int)(next_random() % 100) < reorder_percent || wait <= 0 || count == CAPACITY) {
        return nfq_set_verdict(queue, id, NF_ACCEPT, 0, NULL);
    }
    held[count].id = id;
    held[count].due = now_us() + wait;
    count++;
    return 0;
}

static void on_signal(int signal) {
    (void)signal;
    stopping = 1;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: nfdelay QUEUE DELAY_MS JITTER_MS REORDER_PERCENT SEED\n");
        return 2;
    }
    int queue_number = atoi(argv[1]);
    delay_us = atoi(argv[2]) * 1000;
    jitter_us = atoi(argv[3]) * 1000;
    reorder_percent = atoi(argv[4]);
    state = (uint64_t)strtoull(argv[5], NULL, 10) | 1;
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    struct nfq_handle *handle = nfq_open();
    if (handle == NULL) {
        perror("nfq_open");
        return 1;
    }
    struct nfq_q_handle *queue = nfq_create_queue(handle, (uint16_t)queue_number, on_packet, NULL);
    if (queue == NULL || nfq_set_mode(queue, NFQNL_COPY_META, 0) < 0) {
        perror("nfq_create_queue");
        return 1;
    }
    nfq_set_queue_maxlen(queue, CAPACITY);
    int fd = nfq_fd(handle);
    char buffer[65536];
    fprintf(stderr, "nfdelay: queue %d ready\n", queue_number);
    while (!stopping) {
        // Release what is due, earliest first (ties in arrival order).
        int64_t now = now_us();
        int64_t next_due = now + 10000;
        for (;;) {
            int earliest = -1;
            for (int i = 0; i < count; i++) {
                if (held[i].due <= now && (earliest < 0 || held[i].due < held[earliest].due)) earliest = i;
            }
            if (earliest < 0) break;
            nfq_set_verdict(queue, held[earliest].id, NF_ACCEPT, 0, NULL);
            held[earliest] = held[--count];
        }
        for (int i = 0; i < count; i++) {
            if (held[i].due < next_due) next_due = held[i].due;
        }
        int timeout_ms = (int)((next_due - now + 999) / 1000);
        struct pollfd descriptor = {.fd = fd, .events = POLLIN};
        int ready = poll(&descriptor, 1, timeout_ms < 0 ? 0 : timeout_ms);
        if (ready > 0) {
            ssize_t length = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
            if (length > 0) nfq_handle_packet(handle, buffer, (int)length);
        } else if (ready < 0 && errno != EINTR) {
            perror("poll");
            break;
        }
    }
    for (int i = 0; i < count; i++) nfq_set_verdict(queue, held[i].id, NF_ACCEPT, 0, NULL);
    nfq_destroy_queue(queue);
    nfq_close(handle);
    return 0;
}
