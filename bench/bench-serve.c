/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reference for the /metrics bench: the bare limit of answering HTTP/1.1
 * GETs with a fixed body over loopback. One thread, epoll, keep-alive, the
 * whole response prepared once and written with send() — nothing a metrics
 * server could do with less. bench-metrics.sh serves the operator's own
 * /metrics/hooks body with it and compares scrape times and wrk rates.
 *
 * Usage: bench-serve BODY_FILE PORT_FILE
 * Listens on 127.0.0.1 on an ephemeral port, writes the port to PORT_FILE,
 * serves until killed.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

struct conn {
        int fd;
        size_t sent;  /* bytes of the current response already sent */
        int pending;  /* responses still owed (pipelined requests) */
        char tail[4]; /* the last bytes read, to find "\r\n\r\n" across reads */
        size_t n_tail;
};

static char *response;
static size_t response_len;

static void load_response(const char *path)
{
        FILE *f = fopen(path, "r");
        if (!f) {
                perror(path);
                exit(1);
        }
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fseek(f, 0, SEEK_SET);
        char header[256];
        int n = snprintf(
            header, sizeof(header),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: %ld\r\n\r\n",
            size);
        response = malloc((size_t) n + (size_t) size);
        memcpy(response, header, (size_t) n);
        if (fread(response + n, 1, (size_t) size, f) != (size_t) size) {
                perror(path);
                exit(1);
        }
        fclose(f);
        response_len = (size_t) n + (size_t) size;
}

/* Count the request ends ("\r\n\r\n") in what arrived, carrying the last three bytes over. */
static int count_requests(struct conn *c, const char *data, size_t n)
{
        int found = 0;
        for (size_t i = 0; i < n; i++) {
                if (c->n_tail == 4)
                        memmove(c->tail, c->tail + 1, 3), c->n_tail = 3;
                c->tail[c->n_tail++] = data[i];
                if (c->n_tail == 4 && memcmp(c->tail, "\r\n\r\n", 4) == 0) {
                        found++;
                        c->n_tail = 0;
                }
        }
        return found;
}

/* Send what is owed; false when the connection is gone. */
static bool flush(struct conn *c, int ep)
{
        while (c->pending > 0) {
                ssize_t n = send(c->fd, response + c->sent, response_len - c->sent, MSG_NOSIGNAL);
                if (n < 0 && errno == EAGAIN) {
                        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
                        (void) epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                        return true;
                }
                if (n <= 0)
                        return false;
                c->sent += (size_t) n;
                if (c->sent == response_len) {
                        c->sent = 0;
                        c->pending--;
                }
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        (void) epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        return true;
}

static void serve(int ep, struct conn *c, uint32_t events)
{
        char buf[16384];
        if (events & EPOLLIN) {
                ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
                if (n == 0 || (n < 0 && errno != EAGAIN))
                        goto gone;
                if (n > 0)
                        c->pending += count_requests(c, buf, (size_t) n);
        }
        if (flush(c, ep))
                return;
gone:
        close(c->fd);
        free(c);
}

int main(int argc, char **argv)
{
        if (argc != 3) {
                fprintf(stderr, "Usage: bench-serve BODY_FILE PORT_FILE\n");
                return 2;
        }
        signal(SIGPIPE, SIG_IGN);
        load_response(argv[1]);
        int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(addr);
        if (bind(ls, (struct sockaddr *) &addr, sizeof(addr)) < 0 || listen(ls, 128) < 0 ||
            getsockname(ls, (struct sockaddr *) &addr, &len) < 0) {
                perror("bench-serve: listen");
                return 1;
        }
        FILE *pf = fopen(argv[2], "w");
        if (!pf || fprintf(pf, "%d\n", ntohs(addr.sin_port)) < 0 || fclose(pf) != 0) {
                perror(argv[2]);
                return 1;
        }
        int ep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
        (void) epoll_ctl(ep, EPOLL_CTL_ADD, ls, &lev);
        for (;;) {
                struct epoll_event evs[64];
                int n = epoll_wait(ep, evs, 64, -1);
                for (int i = 0; i < n; i++) {
                        if (evs[i].data.ptr) {
                                serve(ep, evs[i].data.ptr, evs[i].events);
                                continue;
                        }
                        int fd;
                        while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                                struct conn *c = calloc(1, sizeof(*c));
                                c->fd = fd;
                                struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                                (void) epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                        }
                }
        }
}
