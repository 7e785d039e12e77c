import OfflineQueue
import QueueTestSupport
import Testing

@Suite("VerifiedBodyMemory: the budget of plaintext kept for sends")
struct VerifiedBodyMemoryTests {
    @Test("a hold takes its bytes until it goes away; what does not fit in what is left is refused")
    func holds() {
        let memory = VerifiedBodyMemory(limit: 100)
        var first: VerifiedBodyMemory.Hold? = memory.reserve(60)
        #expect(first?.size == 60)
        #expect(memory.reserve(41) == nil, "60 + 41 is over 100")
        do {
            let second = memory.reserve(40)
            #expect(second != nil)
            #expect(memory.held == 100)
            #expect(memory.reserve(1) == nil)
        }
        #expect(memory.held == 60, "the second hold went away with its scope")
        first = nil
        #expect(memory.held == 0)
        #expect(memory.reserve(101) == nil, "larger than the whole budget")
        #expect(memory.reserve(-1) == nil)
        #expect(first == nil)
    }

    @Test("a budget of 0 holds nothing: every body is opened again as it is sent")
    func zero() {
        let memory = VerifiedBodyMemory(limit: 0)
        #expect(memory.reserve(1) == nil)
        #expect(memory.reserve(0) != nil, "an empty body costs nothing")
        #expect(VerifiedBodyMemory(limit: -5).limit == 0)
    }
}
