import Foundation
import OfflineQueueCore

/// The entries list's filter and page, as the query string (or a posted form) gives it:
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
    /// The page's reload interval (``Refresh``), kept by the next page's link; 0 for none.
    var refresh: Int = 0

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
            case "refresh": refresh = Refresh.seconds(value)
            default: break
            }
        }
    }

    /// The filter as the store takes it: state, group, name and origin are all matched there.
    var storeFilter: EntryFilter {
        EntryFilter(
            states: EntryState(rawValue: state).map { [$0] } ?? [], group: group.isEmpty ? nil : group, name: name.isEmpty ? nil : name,
            origin: origin.isEmpty ? nil : origin, limit: limit, after: after
        )
    }

    /// Whether `entry` passes the filter (for a lookup by id, which bypasses the listing).
    func matches(_ entry: QueueEntry) -> Bool {
        let filter = storeFilter
        if !filter.states.isEmpty && !filter.states.contains(entry.state) { return false }
        if let group = filter.group, entry.group != group { return false }
        if let name = filter.name, entry.name != name { return false }
        if let origin = filter.origin, !EntryFilter.matches(origin: origin, url: entry.url) { return false }
        return true
    }

    /// The selection of a bulk action on every entry this filter matches, among `states`
    /// (the action's), up to `through` (the newest id when the action was confirmed); `nil`
    /// when the filter's state is not one of them.
    func selection(states: Set<EntryState>, through: EntryID?) -> EntrySelection? {
        let filter = storeFilter
        let chosen = filter.states.isEmpty ? states : filter.states.intersection(states)
        guard !chosen.isEmpty else { return nil }
        return EntrySelection(states: chosen, group: filter.group, name: filter.name, origin: filter.origin, through: through)
    }

    /// The filter's fields as a query string (without the cursor), percent-encoded.
    var filterQuery: String {
        [("state", state), ("group", group), ("name", name), ("origin", origin)].filter { !$0.1.isEmpty }
            .map { "\($0)=\(formEncode($1))" }.joined(separator: "&")
    }

    /// The query string of this filter with `after` set to `cursor`, percent-encoded.
    func query(after cursor: EntryID) -> String {
        var pairs: [(String, String)] = []
        for (key, value) in [("state", state), ("group", group), ("name", name), ("origin", origin)] where !value.isEmpty {
            pairs.append((key, value))
        }
        pairs.append(("after", String(cursor)))
        if limit != Self.defaultLimit { pairs.append(("limit", String(limit))) }
        if refresh > 0 { pairs.append(("refresh", String(refresh))) }
        return pairs.map { "\($0)=\(formEncode($1))" }.joined(separator: "&")
    }
}

/// `value` percent-encoded for a query string: letters, digits and `-._~` as they are.
func formEncode(_ value: String) -> String {
    let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
    return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
}
