/// One way of making the call, run by `concurrency` callers until `requests` calls are done.
struct Variant: Sendable {
    let name: String
    let call: @Sendable () async throws -> Void

    init(name: String, call: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.call = call
    }

    /// Runs `requests` calls split over `concurrency` tasks; returns the wall time.
    @discardableResult
    func run(requests: Int, concurrency: Int) async throws -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<concurrency {
                let share = requests / concurrency + (worker < requests % concurrency ? 1 : 0)
                group.addTask {
                    for _ in 0..<share { try await call() }
                }
            }
            try await group.waitForAll()
        }
        return clock.now - start
    }
}
