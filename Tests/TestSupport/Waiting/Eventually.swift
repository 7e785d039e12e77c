/// Waits until `condition` holds, checking every 10 ms, for at most `limit`: a guard against
/// hangs (``Swift/Duration/hangGuard`` unless told), never a timing check. Returns whether it
/// held; the caller's expectation names the step that did not happen.
public func eventually(_ limit: Duration = .hangGuard, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}
