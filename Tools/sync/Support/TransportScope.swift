import AsyncHTTPClientTransport

/// Runs `body` with a new transport and awaits the transport's shutdown before returning or
/// rethrowing, so no connection outlives the command and nothing blocks a thread on the way out.
/// `connectionsPerHost`: the most HTTP/1.1 connections to one host (``SendOptions/connectionsPerHost``
/// for the commands that drain); HTTP/2, negotiated by ALPN where the server offers it, carries
/// the requests to a host as streams of one connection.
func withTransport<Result>(
    connectionsPerHost: Int = AsyncHTTPClientTransport.Configuration().maximumConnectionsPerHost,
    _ body: (AsyncHTTPClientTransport) async throws -> Result
) async throws -> Result {
    let transport = AsyncHTTPClientTransport(configuration: AsyncHTTPClientTransport.Configuration(maximumConnectionsPerHost: connectionsPerHost))
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
