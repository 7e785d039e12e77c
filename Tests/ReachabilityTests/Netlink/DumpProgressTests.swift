#if os(Linux)
import CNetlink
import Glibc
@testable import Reachability
import Testing

/// When a dump can be trusted, and when it must be taken again, without a socket: the replies
/// are crafted datagrams run through the real decoder.
@Suite("DumpProgress")
struct DumpProgressTests {
    private typealias B = NetlinkBytes

    /// Feeds each datagram's messages to `progress`; returns the steps that were not `.more`.
    private func feed(_ datagrams: [[UInt8]], to progress: inout DumpProgress, state: inout RoutingState) -> [DumpProgress.Step] {
        var steps: [DumpProgress.Step] = []
        for datagram in datagrams {
            for message in NetlinkDecoder.decode(datagram) {
                let step = progress.read(message, into: &state)
                if step != .more { steps.append(step) }
            }
        }
        return steps
    }

    @Test("a clean dump finishes with every entry applied")
    func clean() {
        var progress = DumpProgress(sequence: 5)
        var state = RoutingState()
        let steps = feed([B.link(index: 2, name: "eth0", sequence: 5), B.address([10, 0, 0, 1], index: 2, sequence: 5) + B.done(sequence: 5)], to: &progress, state: &state)
        #expect(steps == [.finished])
        #expect(state.links[2]?.name == "eth0")
        #expect(state.addresses.count == 1)
    }

    @Test("NLM_F_DUMP_INTR on an entry makes the dump restart at NLMSG_DONE, not before")
    func interruptedEntry() {
        var progress = DumpProgress(sequence: 5)
        var state = RoutingState()
        let interrupted = NetlinkBytes.message(
            type: Int(RTM_NEWLINK), flags: NLM_F_MULTI | NLM_F_DUMP_INTR, sequence: 5, payload: B.linkHeader(index: 3, flags: 1)
        )
        let steps = feed([B.link(index: 2, name: "eth0", sequence: 5) + interrupted, B.done(sequence: 5)], to: &progress, state: &state)
        #expect(steps == [.restart])
    }

    @Test("NLM_F_DUMP_INTR on NLMSG_DONE alone (where the kernel puts it) restarts the dump")
    func interruptedDone() {
        var progress = DumpProgress(sequence: 5)
        var state = RoutingState()
        let steps = feed([B.link(index: 2, name: "eth0", sequence: 5), B.done(sequence: 5, flags: NLM_F_MULTI | NLM_F_DUMP_INTR)], to: &progress, state: &state)
        #expect(steps == [.restart])
    }

    @Test("a malformed reply or a lost datagram restarts the dump")
    func malformedOrLost() {
        var progress = DumpProgress(sequence: 5)
        var state = RoutingState()
        let bad = B.message(type: Int(RTM_NEWLINK), sequence: 5, payload: [], length: 16)
        #expect(feed([bad, B.done(sequence: 5)], to: &progress, state: &state) == [.restart])

        var lost = DumpProgress(sequence: 6)
        lost.lostReplies()
        #expect(lost.mustRestart)
        #expect(feed([B.done(sequence: 6)], to: &lost, state: &state) == [.restart])
    }

    @Test("replies to another sequence number are stale: not applied, and their DONE does not end this dump")
    func staleReplies() {
        var progress = DumpProgress(sequence: 5)
        var state = RoutingState()
        let steps = feed([B.link(index: 9, name: "old0", sequence: 4) + B.done(sequence: 4, flags: NLM_F_MULTI | NLM_F_DUMP_INTR), B.done(sequence: 5)], to: &progress, state: &state)
        #expect(steps == [.finished])
        #expect(state.links.isEmpty)
    }

    @Test("an error for the request fails the dump with its errno; an acknowledgement does not")
    func kernelError() {
        var progress = DumpProgress(sequence: 5)
        var state = RoutingState()
        let original = B.le(UInt32(16)) + B.le(UInt16(RTM_GETLINK)) + B.le(UInt16(0)) + B.le(UInt32(5)) + B.le(UInt32(0))
        let error = B.message(type: Int(NLMSG_ERROR), sequence: 5, payload: B.le(Int32(-EBUSY)) + original)
        #expect(feed([error], to: &progress, state: &state) == [.failed(errno: EBUSY)])
        let ack = B.message(type: Int(NLMSG_ERROR), sequence: 5, payload: B.le(Int32(0)) + original)
        #expect(feed([ack], to: &progress, state: &state) == [])
    }
}
#endif
