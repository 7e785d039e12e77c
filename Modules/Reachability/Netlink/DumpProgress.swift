#if os(Linux)
/// How one dump request (RTM_GETLINK, RTM_GETADDR or RTM_GETROUTE with `NLM_F_DUMP`) is going:
/// a pure state machine the dump loop feeds with each decoded message and each lost datagram,
/// so the rules are testable without a socket.
///
/// A dump is only as good as all of its replies. When the kernel flags one `NLM_F_DUMP_INTR`
/// (the tables changed between two chunks), when a reply is malformed, or when a datagram was
/// lost (ENOBUFS) or cut short (MSG_TRUNC), the entries collected may be missing some or hold
/// stale ones, so the whole dump is taken again. It is not restarted at once: the kernel runs
/// one dump per socket and answers EBUSY to a second, so the rest is read up to `NLMSG_DONE`.
///
/// ```swift
/// var progress = DumpProgress(sequence: sequence)
/// for message in NetlinkDecoder.decode(datagram) {
///     switch progress.read(message, into: &state) {
///     case .more: continue
///     case .finished: break reading
///     case .restart: continue attempts
///     case .failed(let errno): throw .kernel(request: name, errno: errno)
///     }
/// }
/// ```
struct DumpProgress: Sendable, Equatable {
    /// What the dump loop does next.
    enum Step: Sendable, Equatable {
        /// Read on.
        case more
        /// The dump is complete and consistent.
        case finished
        /// The dump ended but cannot be trusted: take it again from scratch.
        case restart
        /// The kernel refused the request with this errno.
        case failed(errno: Int32)
    }

    /// The sequence number of the request; replies to anything else are stale and ignored.
    let sequence: UInt32
    /// Whether the replies so far cannot be trusted, so the dump must be taken again once the
    /// kernel has finished sending it. When the wait for more replies then times out, the lost
    /// datagram held `NLMSG_DONE` and the dump is over: take it again rather than fail.
    private(set) var mustRestart = false

    init(sequence: UInt32) {
        self.sequence = sequence
    }

    /// Applies `message` to `state` when it is an entry of this dump, and says what next.
    mutating func read(_ message: NetlinkMessage, into state: inout RoutingState) -> Step {
        switch message {
        case .event(let event, let sequence) where sequence == self.sequence:
            state.apply(event)
        case .dumpInterrupted(let sequence) where sequence == self.sequence:
            mustRestart = true
        case .malformed, .overrun:
            // A malformed reply may be an entry we could not apply, and NLMSG_OVERRUN says
            // entries were dropped: either way the collected state may have holes.
            mustRestart = true
        case .done(let sequence) where sequence == self.sequence:
            return mustRestart ? .restart : .finished
        case .error(let sequence, let code) where sequence == self.sequence && code != 0:
            return .failed(errno: -code)
        default:
            break
        }
        return .more
    }

    /// A datagram was lost (ENOBUFS) or cut short (MSG_TRUNC): the state may have holes.
    mutating func lostReplies() {
        mustRestart = true
    }
}
#endif
