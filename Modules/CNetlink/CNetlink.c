// Namespace-aware socket creation for the Reachability module. Compiles to nothing outside
// Linux.
#define _GNU_SOURCE 1
#include "CNetlink.h"

#if defined(__linux__)

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#ifndef CLONE_NEWNET
#define CLONE_NEWNET 0x40000000
#endif

int setns(int fd, int nstype);

struct cnl_socket_request {
    const char *netns_path;
    int domain;
    int type;
    int protocol;
    int fd;
    int error;
};

static void *cnl_socket_thread(void *argument) {
    struct cnl_socket_request *request = argument;
    if (request->netns_path != NULL) {
        int ns = open(request->netns_path, O_RDONLY | O_CLOEXEC);
        if (ns < 0) {
            request->error = errno;
            return NULL;
        }
        if (setns(ns, CLONE_NEWNET) != 0) {
            request->error = errno;
            close(ns);
            return NULL;
        }
        close(ns);
    }
    request->fd = socket(request->domain, request->type | SOCK_CLOEXEC, request->protocol);
    if (request->fd < 0) request->error = errno;
    return NULL;
}

int cnl_socket_in_netns(const char *netns_path, int domain, int type, int protocol, int *error_out) {
    struct cnl_socket_request request = { netns_path, domain, type, protocol, -1, 0 };
    if (netns_path == NULL) {
        cnl_socket_thread(&request);
    } else {
        // setns(CLONE_NEWNET) changes only the calling thread, so a thread of our own joins the
        // namespace, creates the socket and ends; the caller's thread stays where it was.
        pthread_t thread;
        int status = pthread_create(&thread, NULL, cnl_socket_thread, &request);
        if (status != 0) {
            if (error_out) *error_out = status;
            return -1;
        }
        pthread_join(thread, NULL);
    }
    if (request.fd < 0 && error_out) *error_out = request.error;
    return request.fd;
}

int cnl_open_route_socket(const char *netns_path, uint32_t groups, int rcvbuf, int *error_out) {
    int fd = cnl_socket_in_netns(netns_path, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE, error_out);
    if (fd < 0) return -1;
    if (rcvbuf > 0) {
        // SO_RCVBUFFORCE lifts the rmem_max cap when we are privileged; fall back quietly.
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) != 0) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
        }
    }
    int one = 1;
    // Ask for extended acks so errors carry the kernel's message; harmless when unsupported.
    setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
    struct sockaddr_nl address;
    memset(&address, 0, sizeof address);
    address.nl_family = AF_NETLINK;
    address.nl_groups = groups;
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        if (error_out) *error_out = errno;
        close(fd);
        return -1;
    }
    return fd;
}

#endif // __linux__
