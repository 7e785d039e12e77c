import AsyncHTTPClientTransport

/// Runs `body` with a new transport and awaits the transport's shutdown before returning or
/// rethrowing, so no connection outlives the command and nothing blocks a thread on the way out.
/// `configuration`: the defaults, or for the commands that drain ``ConnectionOptions`` (proxy,
/// trust, client certificate) with ``SendOptions/connectionsPerHost`` HTTP/1.1 connections to one
/// host; HTTP/2, negotiated by ALPN where the server offers it, carries the requests to a host as
/// streams of one connection.
func withTransport<Result>(
    configuration: AsyncHTTPClientTransport.Configuration = AsyncHTTPClientTransport.Configuration(),
    _ body: (AsyncHTTPClientTransport) async throws -> Result
) async throws -> Result {
    let transport = AsyncHTTPClientTransport(configuration: configuration)
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
