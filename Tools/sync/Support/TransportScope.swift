import AsyncHTTPClientTransport

/// Runs `body` with a new transport and awaits the transport's shutdown before returning or
/// rethrowing, so no connection outlives the command and nothing blocks a thread on the way out.
func withTransport<Result>(_ body: (AsyncHTTPClientTransport) async throws -> Result) async throws -> Result {
    let transport = AsyncHTTPClientTransport()
    let result: Result
    do {
        result = try await body(transport)
    } catch {
        try? await transport.shutdown()
        throw error
    }
    try? await transport.shutdown()
    return result
}
