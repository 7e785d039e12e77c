import Foundation
public import HTTPTypes

/// The `Cache-Control` directives a private client cache acts on (RFC 9111 §5.2).
public struct CacheControl: Sendable, Hashable {
    /// `max-age`, in seconds.
    public var maxAge: Int?
    /// `no-store`: never stored.
    public var noStore = false
    /// `no-cache`: stored, but revalidated before every use.
    public var noCache = false
    /// `must-revalidate`: never served stale.
    public var mustRevalidate = false
    /// `public`: may be stored even for a request that carried credentials (RFC 9111 §3.5).
    public var isPublic = false

    /// Directives given as values; `isPublic` starts as `false`.
    public init(maxAge: Int? = nil, noStore: Bool = false, noCache: Bool = false, mustRevalidate: Bool = false) {
        self.maxAge = maxAge
        self.noStore = noStore
        self.noCache = noCache
        self.mustRevalidate = mustRevalidate
    }

    /// The directives in `fields`' `Cache-Control` values (and `Pragma: no-cache`).
    public init(_ fields: HTTPFields) {
        for value in fields[values: .cacheControl] {
            for directive in value.split(separator: ",") {
                let parts = directive.split(separator: "=", maxSplits: 1).map {
                    $0.trimmingCharacters(in: .whitespaces).lowercased()
                }
                switch parts[0] {
                case "max-age":
                    maxAge = parts.count == 2 ? Int(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))) : nil
                case "no-store": noStore = true
                case "no-cache": noCache = true
                case "must-revalidate": mustRevalidate = true
                case "public": isPublic = true
                default: break
                }
            }
        }
        if fields[HTTPField.Name("Pragma")!]?.lowercased().contains("no-cache") == true, fields[.cacheControl] == nil { noCache = true }
    }
}
