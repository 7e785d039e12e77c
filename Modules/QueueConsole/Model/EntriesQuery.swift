import Foundation
import OfflineQueue

/// The entries list's filter and page, as the query string gives it:
/// `state`, `group`, `name`, `origin` (scheme, host and port of the URL), `id`, `after` (the
/// keyset cursor: entries with a greater id) and `limit` (at most ``maxLimit``).
struct EntriesQuery: Encodable, Sendable, Hashable {
    static let maxLimit = 500
    static let defaultLimit = 100

    var state: String = ""
    var group: String = ""
    var name: String = ""
    var origin: String = ""
    var id: String = ""
    var after: EntryID?
    var limit: Int = Self.defaultLimit

    init(parameters: [(name: String, value: String)]) {
        for (key, value) in parameters {
            switch key {
            case "state": state = EntryState(rawValue: value) == nil ? "" : value
            case "group": group = value
            case "name": name = value
            case "origin": origin = value
            case "id": id = value.trimmingCharacters(in: .whitespaces)
            case "after": after = EntryID(value)
            case "limit": limit = min(Self.maxLimit, max(1, Int(value) ?? Self.defaultLimit))
            default: break
            }
        }
    }

    /// The store's part of the filter: state and group (name and origin are matched here).
    var storeFilter: EntryFilter {
        EntryFilter(states: EntryState(rawValue: state).map { [$0] } ?? [], group: group.isEmpty ? nil : group, limit: limit, after: after)
    }

    func matches(_ entry: QueueEntry) -> Bool {
        if !name.isEmpty && entry.name != name { return false }
        if !origin.isEmpty && !(entry.url == origin || entry.url.hasPrefix(origin + "/") || entry.url.hasPrefix(origin + "?")) { return false }
        return true
    }

    /// The query string of this filter with `after` set to `cursor`, percent-encoded.
    func query(after cursor: EntryID) -> String {
        var pairs: [(String, String)] = []
        for (key, value) in [("state", state), ("group", group), ("name", name), ("origin", origin)] where !value.isEmpty {
            pairs.append((key, value))
        }
        pairs.append(("after", String(cursor)))
        if limit != Self.defaultLimit { pairs.append(("limit", String(limit))) }
        return pairs.map { "\($0)=\(formEncode($1))" }.joined(separator: "&")
    }
}

/// `value` percent-encoded for a query string: letters, digits and `-._~` as they are.
func formEncode(_ value: String) -> String {
    let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
    return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
}
