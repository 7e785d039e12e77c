// CNetlink: the length macros of the Linux netlink UAPI headers as static inline functions
// Swift can call, plus helpers for creating sockets inside another network
// namespace. On platforms other than Linux this header declares nothing.
#ifndef CNETLINK_H
#define CNETLINK_H

#if defined(__linux__)

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

// MARK: - Lengths for building requests (NLMSG_*, RTA_*)
//
// Only the arithmetic for messages we build. Received messages are walked in Swift
// (NetlinkFraming), not with NLMSG_OK/NLMSG_NEXT, RTA_OK/RTA_NEXT or IFLA_RTA and friends: those
// trust nlmsg_len and read the family header without checking that the message covers it.

static inline uint32_t cnl_nlmsg_align(uint32_t len) { return NLMSG_ALIGN(len); }
static inline uint32_t cnl_nlmsg_hdrlen(void) { return NLMSG_HDRLEN; }
static inline uint32_t cnl_nlmsg_length(uint32_t len) { return NLMSG_LENGTH(len); }
static inline uint32_t cnl_rta_align(uint32_t len) { return RTA_ALIGN(len); }
static inline uint32_t cnl_rta_length(uint32_t len) { return RTA_LENGTH(len); }

// MARK: - Network namespaces

/// Creates a socket(domain, type, protocol) inside the network namespace at `netns_path`
/// (for example /var/run/netns/NAME), or in the caller's namespace when `netns_path` is NULL.
///
/// The work happens on a short-lived thread that joins the namespace with setns(2), so the
/// calling thread never changes namespace. A socket stays bound to the namespace it was created
/// in. Returns the descriptor, or -1 with the errno value in `*error_out`.
int cnl_socket_in_netns(const char *netns_path, int domain, int type, int protocol, int *error_out);

/// Opens a NETLINK_ROUTE socket (close-on-exec) bound to the multicast `groups` inside the
/// namespace at `netns_path` (NULL for the caller's), with a receive buffer of `rcvbuf` bytes.
/// Returns the descriptor, or -1 with the errno value in `*error_out`.
int cnl_open_route_socket(const char *netns_path, uint32_t groups, int rcvbuf, int *error_out);

#endif // __linux__

#endif // CNETLINK_H
