/* bootstrap.c - see bootstrap.h.
 *
 * TCP messages (little-endian fixed-size fields):
 *   hello  (rank k -> rank 0): u32 magic "ZBBS", u32 version, u32 rank,
 *                              u32 world, u64 n
 *   answer (rank 0 -> rank k): u32 magic, u32 verdict (0 ok, 1 refused),
 *                              u32 world, u64 n, then n bytes if ok
 * Every read, write, connect and accept waits with poll(2) until the one
 * deadline of the call.
 */
#include "executor/comm/bootstrap.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "executor/comm/transport_mpi.h"

#define BS_MAGIC 0x5342425au   /* "ZBBS" */
#define BS_VERSION 1u
#define BS_HELLO 24
#define BS_ANSWER 20

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Milliseconds left until deadline (0 if passed). */
static int left_ms(double deadline) {
    double ms = (deadline - now_s()) * 1e3;
    return ms <= 0 ? 0 : ms > 1e9 ? 1000000000 : (int)ms + 1;
}

static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
    return v;
}
static uint64_t get64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Wait until fd is ready for `events`; false at the deadline. */
static bool wait_fd(int fd, short events, double deadline) {
    struct pollfd p = {.fd = fd, .events = events};
    for (;;) {
        int ms = left_ms(deadline);
        if (ms == 0) return false;
        int r = poll(&p, 1, ms);
        if (r > 0) return true;
        if (r < 0 && errno != EINTR) return false;
    }
}

/* All n bytes, or false (peer closed, error or deadline). */
static bool io_full(int fd, void *buf, size_t n, bool rd, double deadline) {
    unsigned char *p = buf;
    while (n > 0) {
        if (!wait_fd(fd, rd ? POLLIN : POLLOUT, deadline)) return false;
        ssize_t k = rd ? recv(fd, p, n, 0) : send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k <= 0) return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

static int nonblocking(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* ---- rank 0 ---- */

/* A listening socket on `port`, IPv6 accepting IPv4 too, else IPv4. */
static int listen_on(int port, int backlog, int *why) {
    int one = 1, zero = 0;
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    if (fd >= 0) {
        struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
                                 .sin6_addr = IN6ADDR_ANY_INIT};
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, backlog) == 0 &&
            nonblocking(fd) == 0)
            return fd;
        *why = errno;
        close(fd);
        if (*why == EADDRINUSE) return -1;
    }
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        *why = errno;
        return -1;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr = {htonl(INADDR_ANY)}};
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, backlog) == 0 &&
        nonblocking(fd) == 0)
        return fd;
    *why = errno;
    close(fd);
    return -1;
}

/* One connection: read the hello, answer. *peer: the rank that said hello
 * (-1 if unreadable). A refusal is an error on both sides. */
static zb_status serve_one(int fd, int world, const void *blob, size_t n,
                           double deadline, unsigned char *seen, int *peer,
                           zb_err *err) {
    unsigned char h[BS_HELLO], a[BS_ANSWER];
    *peer = -1;
    if (!io_full(fd, h, sizeof h, true, deadline) || get32(h) != BS_MAGIC ||
        get32(h + 4) != BS_VERSION)
        return ZB_OK;   /* not one of ours (a port scan, a late client): ignore */
    uint32_t rank = get32(h + 8), their_world = get32(h + 12);
    uint64_t their_n = get64(h + 16);
    bool ok = their_world == (uint32_t)world && their_n == (uint64_t)n &&
              rank >= 1 && rank < (uint32_t)world && !seen[rank];
    put32(a, BS_MAGIC);
    put32(a + 4, ok ? 0 : 1);
    put32(a + 8, (uint32_t)world);
    put64(a + 12, (uint64_t)n);
    bool sent = io_full(fd, a, sizeof a, false, deadline) &&
                (!ok || io_full(fd, (void *)blob, n, false, deadline));
    if (!ok)
        return zb_fail(err, ZB_ERUNTIME, "rank 0: bootstrap: a process says it "
                       "is rank %u of %u with %llu bytes; rank 0 has world %d, "
                       "%zu bytes%s", rank, their_world,
                       (unsigned long long)their_n, world, n,
                       rank < (uint32_t)world && rank >= 1 && seen[rank]
                           ? " (that rank connected twice)" : "");
    if (!sent)
        return zb_fail(err, ZB_ERUNTIME, "rank 0: bootstrap: rank %u hung up "
                       "before it got the %zu bytes", rank, n);
    seen[rank] = 1;
    *peer = (int)rank;
    return ZB_OK;
}

static zb_status serve(int lfd, int port, int world, const void *blob,
                       size_t n, double deadline, double timeout_s,
                       zb_err *err) {
    unsigned char *seen = zb_calloc((size_t)world, 1, err);
    if (!seen) return ZB_ENOMEM;
    int got = 0;
    zb_status s = ZB_OK;
    while (s == ZB_OK && got < world - 1) {
        if (!wait_fd(lfd, POLLIN, deadline)) {
            s = zb_fail(err, ZB_ERUNTIME, "rank 0: bootstrap: only %d of %d "
                        "ranks connected to port %d within %g s (are they "
                        "running, with MASTER_ADDR naming this host? "
                        "ZB_BOOTSTRAP_TIMEOUT_S)", got + 1, world, port, timeout_s);
            break;
        }
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) continue;   /* the client gave up meanwhile */
        int peer;
        s = serve_one(fd, world, blob, n, deadline, seen, &peer, err);
        close(fd);
        if (peer >= 0) got++;
    }
    free(seen);
    return s;
}

/* ---- the other ranks ---- */

/* Connect to addr:port before the deadline, retrying while refused. */
static int dial(const char *addr, int port, int rank, double deadline,
                zb_err *err) {
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(addr, ps, &hints, &ai);
    if (rc != 0) {
        zb_fail(err, ZB_ERUNTIME, "rank %d: bootstrap: cannot resolve "
                "MASTER_ADDR '%s': %s", rank, addr, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    while (fd < 0 && left_ms(deadline) > 0) {
        for (struct addrinfo *p = ai; p && fd < 0; p = p->ai_next) {
            fd = socket(p->ai_family, p->ai_socktype, p->ai_protocol);
            if (fd < 0 || nonblocking(fd) != 0) goto next;
            if (connect(fd, p->ai_addr, p->ai_addrlen) == 0) break;
            if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline)) {
                int e = 0;
                socklen_t len = sizeof e;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) == 0 && e == 0) break;
            }
        next:
            if (fd >= 0) close(fd);
            fd = -1;
        }
        if (fd < 0) {
            struct timespec ts = {0, 100000000};   /* rank 0 not listening yet */
            nanosleep(&ts, NULL);
        }
    }
    freeaddrinfo(ai);
    if (fd < 0)
        zb_fail(err, ZB_ERUNTIME, "rank %d: bootstrap: cannot connect to rank 0 "
                "at %s:%d", rank, addr, port);
    return fd;
}

static zb_status ask(int fd, const char *addr, int port, int rank, int world,
                     void *blob, size_t n, double deadline, double timeout_s,
                     zb_err *err) {
    unsigned char h[BS_HELLO], a[BS_ANSWER];
    put32(h, BS_MAGIC);
    put32(h + 4, BS_VERSION);
    put32(h + 8, (uint32_t)rank);
    put32(h + 12, (uint32_t)world);
    put64(h + 16, (uint64_t)n);
    if (!io_full(fd, h, sizeof h, false, deadline) ||
        !io_full(fd, a, sizeof a, true, deadline) || get32(a) != BS_MAGIC)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: bootstrap: no answer from "
                       "rank 0 at %s:%d within %g s (ZB_BOOTSTRAP_TIMEOUT_S)",
                       rank, addr, port, timeout_s);
    if (get32(a + 4) != 0)
        return zb_fail(err, ZB_ERUNTIME, "rank %d: bootstrap: rank 0 at %s:%d "
                       "refused rank %d of %d with %zu bytes: it has world %u "
                       "and %llu bytes", rank, addr, port, rank, world, n,
                       get32(a + 8), (unsigned long long)get64(a + 12));
    if (!io_full(fd, blob, n, true, deadline))
        return zb_fail(err, ZB_ERUNTIME, "rank %d: bootstrap: rank 0 at %s:%d "
                       "hung up before sending %zu bytes", rank, addr, port, n);
    return ZB_OK;
}

zb_status zb_tcp_bcast(const char *addr, int port, int rank, int world,
                       void *blob, size_t n, double timeout_s, zb_err *err) {
    if (world < 1 || rank < 0 || rank >= world || port < 1 || port > 65535)
        return zb_fail(err, ZB_ERUNTIME, "bootstrap: rank %d of %d at port %d "
                       "is not a valid exchange", rank, world, port);
    if (world == 1) return ZB_OK;
    double deadline = now_s() + timeout_s;
    if (rank == 0) {
        int why = 0, lfd = listen_on(port, world, &why);
        if (lfd < 0)
            return zb_fail(err, ZB_ERUNTIME, "rank 0: bootstrap: cannot listen "
                           "on port %d: %s (MASTER_PORT)", port, strerror(why));
        zb_status s = serve(lfd, port, world, blob, n, deadline, timeout_s, err);
        close(lfd);
        return s;
    }
    int fd = dial(addr, port, rank, deadline, err);
    if (fd < 0) {
        if (left_ms(deadline) == 0)
            zb_fail(err, ZB_ERUNTIME, "rank %d: bootstrap: rank 0 did not listen "
                    "at %s:%d within %g s (is it running? MASTER_ADDR, "
                    "MASTER_PORT, ZB_BOOTSTRAP_TIMEOUT_S)", rank, addr, port,
                    timeout_s);
        return ZB_ERUNTIME;
    }
    zb_status s = ask(fd, addr, port, rank, world, blob, n, deadline, timeout_s, err);
    close(fd);
    return s;
}

zb_status zb_bootstrap_bcast(const zb_launch *l, void *blob, size_t n,
                             zb_err *err) {
    if (l->kind == ZB_LAUNCH_NONE || l->world <= 1) return ZB_OK;
    if (l->kind == ZB_LAUNCH_TORCHRUN)
        return zb_tcp_bcast(l->master_addr, l->master_port, l->rank, l->world,
                            blob, n, l->bootstrap_timeout_s, err);
    if (!zb_mpi_initialized()) ZB_TRY(zb_mpi_init(l->rank, l->world, err));
    return zb_mpi_bcast(blob, n, l->bootstrap_timeout_s, err);
}
