/// Something a test makes and must take down again (a queue's folder and schema, a store under
/// test): ``removing(_:after:)`` takes it down when the test is done with it, and waits for that.
public protocol RemovableTestResource: Sendable {
    /// Takes the resource down; called once, when the test is done with it.
    func remove() async
}

/// Runs `body`, then removes `resource` however `body` ended, and waits for the removal: a
/// test's clean-up that is over when the test is, where `defer { Task { await … } }` outlives
/// the test and runs beside the next one.
///
/// ```swift
/// let store = try TestStore(kind)
/// try await removing(store) {
///     let queue = try await makeQueue(on: store, server: server)
///     …
/// }
/// ```
public func removing<Resource: RemovableTestResource, Value>(
    _ resource: Resource, after body: () async throws -> Value
) async rethrows -> Value {
    let value: Value
    do {
        value = try await body()
    } catch {
        await resource.remove()
        throw error
    }
    await resource.remove()
    return value
}
