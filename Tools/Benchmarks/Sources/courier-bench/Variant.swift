import Glibc

/// One way of making the call, run by `concurrency` callers until `requests` calls are done.
struct Variant: Sendable {
    let name: String
    let call: @Sendable () async throws -> Void

    init(name: String, call: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.call = call
    }

    /// Wall time and this process's CPU time (user + system) for one run.
    struct Measurement {
        var wall: Duration
        var cpu: Duration
    }

    /// Runs `requests` calls split over `concurrency` tasks; returns the wall and CPU time.
    @discardableResult
    func run(requests: Int, concurrency: Int) async throws -> Measurement {
        let clock = ContinuousClock()
        let cpuStart = Self.processCPUTime()
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
        return Measurement(wall: clock.now - start, cpu: Self.processCPUTime() - cpuStart)
    }

    /// User plus system CPU time of this process so far (the server is another process).
    static func processCPUTime() -> Duration {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let micros = (Int64(usage.ru_utime.tv_sec) + Int64(usage.ru_stime.tv_sec)) * 1_000_000
            + Int64(usage.ru_utime.tv_usec) + Int64(usage.ru_stime.tv_usec)
        return .microseconds(micros)
    }

    /// This process's context switches so far, voluntary (a thread that waits: a wake-up to
    /// come) and not, every thread's, those that ended included (`getrusage`).
    static func processContextSwitches() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_nvcsw + usage.ru_nivcsw
    }
}
