import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The raw calls Courier's are compared with, as an application would write them without it.
public enum RawCalls {
    /// A model GET through AsyncHTTPClient: execute, collect the body, decode the page.
    public static func modelGET(_ url: String, client: HTTPClient) async throws {
        let decoder = JSONDecoder()
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        let response = try await client.execute(request, timeout: .seconds(30))
        guard response.status == .ok else { throw BenchError("status \(response.status)") }
        let body = try await response.body.collect(upTo: 1 << 20)
        let page = try decoder.decode(Page.self, from: body)
        precondition(page.items.count == 8)
    }

    /// A model GET through URLSession: `data(for:)`, decode the page.
    public static func modelGET(_ url: URL, session: URLSession) async throws {
        let (body, response) = try await session.data(for: URLRequest(url: url))
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw BenchError("status") }
        let page = try JSONDecoder().decode(Page.self, from: body)
        precondition(page.items.count == 8)
    }

    /// A GET of `size` bytes collected into memory through AsyncHTTPClient.
    public static func collect(_ url: String, size: Int, client: HTTPClient) async throws {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        let response = try await client.execute(request, timeout: .seconds(30))
        guard response.status == .ok else { throw BenchError("status \(response.status)") }
        let body = try await response.body.collect(upTo: size + size / 2)
        precondition(body.readableBytes == size)
    }
}
