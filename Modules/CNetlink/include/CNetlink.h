// CNetlink: the netlink and rtnetlink macros of the Linux UAPI headers as static inline
// functions Swift can call, plus helpers for creating sockets inside another network
// namespace. On platforms other than Linux this header declares nothing.
#ifndef CNETLINK_H
#define CNETLINK_H

#if defined(__linux__)

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

// MARK: - nlmsghdr (NLMSG_*)

static inline uint32_t cnl_nlmsg_align(uint32_t len) { return NLMSG_ALIGN(len); }
static inline uint32_t cnl_nlmsg_hdrlen(void) { return NLMSG_HDRLEN; }
static inline uint32_t cnl_nlmsg_length(uint32_t len) { return NLMSG_LENGTH(len); }
static inline uint32_t cnl_nlmsg_space(uint32_t len) { return NLMSG_SPACE(len); }
static inline void *cnl_nlmsg_data(struct nlmsghdr *nlh) { return NLMSG_DATA(nlh); }
static inline int cnl_nlmsg_ok(const struct nlmsghdr *nlh, int len) { return NLMSG_OK(nlh, len); }
static inline struct nlmsghdr *cnl_nlmsg_next(struct nlmsghdr *nlh, int *len) {
    return NLMSG_NEXT(nlh, *len);
}
static inline int cnl_nlmsg_payload(const struct nlmsghdr *nlh, uint32_t len) {
    return (int)NLMSG_PAYLOAD(nlh, len);
}

// MARK: - rtattr (RTA_*)

static inline uint32_t cnl_rta_align(uint32_t len) { return RTA_ALIGN(len); }
static inline int cnl_rta_ok(const struct rtattr *rta, int len) { return RTA_OK(rta, len); }
static inline struct rtattr *cnl_rta_next(struct rtattr *rta, int *len) { return RTA_NEXT(rta, *len); }
static inline uint32_t cnl_rta_length(uint32_t len) { return RTA_LENGTH(len); }
static inline uint32_t cnl_rta_space(uint32_t len) { return RTA_SPACE(len); }
static inline void *cnl_rta_data(struct rtattr *rta) { return RTA_DATA(rta); }
static inline int cnl_rta_payload(const struct rtattr *rta) { return (int)RTA_PAYLOAD(rta); }

// MARK: - Per-message attribute areas (IFA_*, IFLA_*, RTM_*)

static inline struct rtattr *cnl_ifa_rta(struct ifaddrmsg *ifa) { return IFA_RTA(ifa); }
static inline int cnl_ifa_payload(const struct nlmsghdr *nlh) { return (int)IFA_PAYLOAD(nlh); }
static inline struct rtattr *cnl_ifla_rta(struct ifinfomsg *ifi) { return IFLA_RTA(ifi); }
static inline int cnl_ifla_payload(const struct nlmsghdr *nlh) { return (int)IFLA_PAYLOAD(nlh); }
static inline struct rtattr *cnl_rtm_rta(struct rtmsg *rtm) { return RTM_RTA(rtm); }
static inline int cnl_rtm_payload(const struct nlmsghdr *nlh) { return (int)RTM_PAYLOAD(nlh); }

// MARK: - Multipath next hops (RTNH_*)

static inline int cnl_rtnh_ok(const struct rtnexthop *rtnh, int len) { return RTNH_OK(rtnh, len); }
static inline struct rtnexthop *cnl_rtnh_next(struct rtnexthop *rtnh, int *len) {
    *len -= (int)RTNH_ALIGN(rtnh->rtnh_len);
    return RTNH_NEXT(rtnh);
}

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
