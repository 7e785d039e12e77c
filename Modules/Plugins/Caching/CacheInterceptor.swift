public import HTTPCore
public import Foundation
import HTTPTypes

/// A private HTTP cache in memory, honouring `Cache-Control` and revalidating with validators.
///
/// - GET responses with status 200 are stored unless `no-store` (in the request or the
///   response) forbids it, and only when they say how long they stay fresh (`max-age`,
///   `Expires`) or carry a validator (`ETag`, `Last-Modified`).
/// - A fresh entry is served without touching the network; `no-cache` (either side) or an
///   expired entry is revalidated with `If-None-Match` / `If-Modified-Since`, and a 304 is
///   answered with the stored body and the updated header fields.
/// - Unsafe methods (POST, PUT, PATCH, DELETE) invalidate the entry for their URL.
/// - A response to a request that carries `Authorization` or `Cookie` is stored only when it
///   says `Cache-Control: public` (RFC 9111 §3.5), and such a request is served only entries
///   that anyone may see: the cache keys by URL, so one user's private answer never reaches
///   another user of a shared client.
/// - Bodies larger than `maxEntryBytes` pass through unstored; the whole cache is bounded by
///   its ``ResponseCache/maxBytes``, evicting the least recently used.
///
/// ```swift
/// configuration.interceptors.append(CacheInterceptor(cache: ResponseCache(maxBytes: 4 << 20)))
/// ```
public struct CacheInterceptor: Interceptor {
    /// Where responses are kept.
    public let cache: ResponseCache
    /// The largest body stored.
    public var maxEntryBytes: Int
    /// The wall clock, injectable for tests.
    public var now: @Sendable () -> Date
    public var scope: PluginScope

    /// An interceptor that keeps responses in `cache` (a new 10 MiB cache unless given), bodies
    /// of up to `maxEntryBytes` (1 MiB), for endpoints in `scope`; `now` is the wall clock,
    /// replaceable in tests.
    public init(cache: ResponseCache = ResponseCache(), maxEntryBytes: Int = 1024 * 1024, scope: PluginScope = .universal, now: @escaping @Sendable () -> Date = { Date() }) {
        self.cache = cache
        self.maxEntryBytes = maxEntryBytes
        self.scope = scope
        self.now = now
    }

    public func intercept(_ request: PreparedRequest, context: CallContext, next: InterceptorNext) async throws -> TransportResponse {
        let head = request.head
        let key = "\(head.scheme ?? "")://\(head.authority ?? "")\(head.path ?? "")"
        guard head.method == .get else {
            if ![.head, .options, .trace].contains(head.method) { cache.remove(key) }
            return try await next(request)
        }
        let requestControl = CacheControl(head.headerFields)
        if requestControl.noStore { return try await next(request) }

        let credentialed = head.headerFields[.authorization] != nil || head.headerFields[.cookie] != nil
        let stored = cache.entry(for: key).flatMap { matchesVary($0, head.headerFields) ? $0 : nil }
            .flatMap { !credentialed || CacheControl($0.headers).isPublic ? $0 : nil }
        if let stored, !requestControl.noCache, isFresh(stored) {
            return serve(stored)
        }
        var outgoing = request
        if let stored {
            if let etag = stored.headers[.eTag] { outgoing.headers[.ifNoneMatch] = etag }
            if let modified = stored.headers[.lastModified] { outgoing.headers[.ifModifiedSince] = modified }
        }
        let response = try await next(outgoing)
        if response.head.status == .notModified, var stored {
            await response.body.discard()
            for field in response.head.headerFields where field.name != .contentLength {
                stored.headers[field.name] = field.value
            }
            stored.storedAt = now()
            cache.store(stored, for: key)
            return serve(stored)
        }
        return try await storeIfCacheable(response, key: key, request: head)
    }

    private func storeIfCacheable(_ response: TransportResponse, key: String, request: HTTPRequest) async throws -> TransportResponse {
        let fields = response.head.headerFields
        let control = CacheControl(fields)
        let hasLifetime = control.maxAge != nil || fields[.expires] != nil
        let hasValidator = fields[.eTag] != nil || fields[.lastModified] != nil
        let vary = varyNames(fields)
        let credentialed = request.headerFields[.authorization] != nil || request.headerFields[.cookie] != nil
        guard response.head.status == .ok, !control.noStore, hasLifetime || hasValidator, !vary.contains("*"),
              !credentialed || control.isPublic else {
            if response.head.status == .ok, control.noStore { cache.remove(key) }
            return response
        }
        if let length = fields[.contentLength].flatMap(Int.init), length > maxEntryBytes { return response }
        let buffered = try await response.body.buffered(upTo: maxEntryBytes)
        guard buffered.isComplete else { return TransportResponse(head: response.head, body: buffered.stream) }
        let body = buffered.bytes
        let varyValues = Dictionary(uniqueKeysWithValues: vary.map { ($0, request.headerFields[HTTPField.Name($0)!] ?? "") })
        cache.store(ResponseCache.Entry(status: .ok, headers: fields, body: body, storedAt: now(), varyValues: varyValues), for: key)
        return TransportResponse(head: response.head, body: ByteStream(data: body))
    }

    private func isFresh(_ entry: ResponseCache.Entry) -> Bool {
        let control = CacheControl(entry.headers)
        if control.noCache { return false }
        let age = now().timeIntervalSince(entry.storedAt)
        if let maxAge = control.maxAge { return age < Double(maxAge) }
        if let expires = entry.headers[.expires].flatMap(HTTPDate.parse) {
            let date = entry.headers[.date].flatMap(HTTPDate.parse) ?? entry.storedAt
            return age < expires.timeIntervalSince(date)
        }
        return false
    }

    private func serve(_ entry: ResponseCache.Entry) -> TransportResponse {
        var fields = entry.headers
        fields[.age] = String(max(0, Int(now().timeIntervalSince(entry.storedAt))))
        fields[.contentLength] = String(entry.body.count)
        return TransportResponse(head: HTTPResponse(status: entry.status, headerFields: fields), body: ByteStream(data: entry.body))
    }

    private func varyNames(_ fields: HTTPFields) -> [String] {
        fields[values: .vary].flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && ($0 == "*" || HTTPField.Name($0) != nil) }
    }

    private func matchesVary(_ entry: ResponseCache.Entry, _ fields: HTTPFields) -> Bool {
        entry.varyValues.allSatisfy { name, value in (HTTPField.Name(name).flatMap { fields[$0] } ?? "") == value }
    }
}
