import Foundation
import Hummingbird
import Logging
import Metrics
import OfflineQueueCore

/// The actions: POST forms answered with 303 to a page (post/redirect/get), or with the
/// result as JSON when the client asked for JSON. Each checks ``ConsoleAction/states`` first
/// and writes an audit line whatever the result.
extension QueueConsole {
    func addActionRoutes(to router: Router<ConsoleContext>) {
        let routes = router.group(RouterPath(prefix))
        routes.post("/entries/:id/retry") { request, context in
            let id = try entryID(context)
            return try await act(.retry, ids: [id], back: path("/entries/\(id)"), request, context)
        }
        routes.post("/entries/:id/discard") { request, context in
            let id = try entryID(context)
            return try await act(.discard, ids: [id], back: path("/entries"), request, context)
        }
        routes.post("/entries/:id/release") { request, context in
            let id = try entryID(context)
            return try await act(.release, ids: [id], back: path("/entries/\(id)"), request, context)
        }
        routes.post("/bulk/retry") { request, context in
            try await act(.retry, ids: try await bulkIDs(request), back: path("/entries"), request, context)
        }
        routes.post("/bulk/discard") { request, context in
            try await act(.discard, ids: try await bulkIDs(request), back: path("/entries"), request, context)
        }
        routes.post("/bulk/retry-matching") { request, context in try await confirmMatching(.retry, request, context) }
        routes.post("/bulk/discard-matching") { request, context in try await confirmMatching(.discard, request, context) }
        routes.post("/bulk/retry-matching/confirm") { request, context in try await actOnMatching(.retry, request, context) }
        routes.post("/bulk/discard-matching/confirm") { request, context in try await actOnMatching(.discard, request, context) }
        routes.post("/purge-delivered") { request, context in
            let purged = try await queue.purge(.states([.delivered], finishedBefore: nil))
            let result = ActionResultView(action: ConsoleAction.purgeDelivered.rawValue, changed: [], skipped: [], message: "purged \(purged) delivered entries")
            return try finish(result, back: path("/"), request, context, changed: purged > 0)
        }
        routes.post("/pause") { request, context in try await pause(.pause, request, context) }
        routes.post("/resume") { request, context in try await pause(.resume, request, context) }
    }

    private func entryID(_ context: ConsoleContext) throws -> EntryID {
        guard let id = context.parameters.get("id", as: EntryID.self) else { throw HTTPError(.badRequest, message: "not an entry id") }
        return id
    }

    /// The posted `id` fields: at least one, at most ``bulkLimit``.
    private func bulkIDs(_ request: Request) async throws -> [EntryID] {
        let fields = try await request.formFields().filter { $0.name == "id" }
        guard fields.count <= Self.bulkLimit else { throw HTTPError(.contentTooLarge, message: "at most \(Self.bulkLimit) entries at once") }
        let ids = fields.compactMap { EntryID($0.value) }
        guard !ids.isEmpty, ids.count == fields.count else { throw HTTPError(.badRequest, message: "select entries by id") }
        return Array(Set(ids)).sorted()
    }

    /// Retries or discards `ids`: those whose state the action applies to; the rest (and
    /// those that do not exist) are skipped and reported.
    private func act(_ action: ConsoleAction, ids: [EntryID], back: String, _ request: Request, _ context: ConsoleContext) async throws -> Response {
        var allowed: [EntryID] = []
        var skipped: [EntryID] = []
        for id in ids {
            if let entry = try await queue.entry(id), action.applies(to: entry.state) { allowed.append(id) } else { skipped.append(id) }
        }
        var changed: [EntryID] = []
        let message: String
        do {
            if !allowed.isEmpty {
                switch action {
                case .retry: changed = try await queue.retry(allowed)
                case .release: changed = try await queue.release(allowed)
                default:
                    try await queue.purge(.ids(allowed))
                    changed = allowed
                }
            }
            let verb = switch action {
            case .retry: "retried"
            case .release: "released"
            default: "discarded"
            }
            message = "\(verb) \(changed.count)" + (skipped.isEmpty ? "" : ", skipped \(skipped.count) (\(action.rawValue) applies to \(action.states.map(\.rawValue).sorted().joined(separator: ", ")) entries)")
        } catch {
            // An entry moved (a drainer took it) between the check and the change: nothing changed.
            audit(action, context, ids: ids, result: "failed: \(error)", outcome: "failed")
            throw HTTPError(.conflict, message: "\(action.rawValue) failed, nothing changed: \(error)")
        }
        let result = ActionResultView(action: action.rawValue, changed: changed, skipped: skipped, message: message)
        // Nothing the action applies to: 409 for a JSON client (a browser sees the notice).
        return try finish(result, back: back, request, context, status: changed.isEmpty && !skipped.isEmpty ? .conflict : .ok, changed: !changed.isEmpty)
    }

    /// The first step of a bulk action on every entry a filter matches: a page (or JSON) with
    /// how many entries it would change now, among the states the action applies to, and a
    /// form that confirms it for those entries (up to the newest of them). Changes nothing.
    private func confirmMatching(_ action: ConsoleAction, _ request: Request, _ context: ConsoleContext) async throws -> Response {
        let filter = EntriesQuery(parameters: try await request.formFields())
        var found = SelectionCount()
        if let selection = filter.selection(states: action.states, through: nil) { found = try await queue.count(matching: selection) }
        let view = ConfirmView(action: action, filter: filter, found: found, confirm: path("/bulk/\(action.rawValue)-matching/confirm") + query([keptRefresh(request)]))
        if request.wantsJSON { return try ConsoleResponse.json(view, status: found.count == 0 ? .conflict : .ok) }
        let page = Page(title: "Confirm", prefix: prefix, user: context.user, notice: "", content: view, route: path("/entries"), query: [])
        return ConsoleResponse.html(ConsoleTemplates.render(page, "confirm"))
    }

    /// The confirmed bulk action: the entries the filter matches up to `through` (none
    /// enqueued since the count), changed ``bulkBatch`` at a time, each batch in one
    /// transaction; those a drainer holds are skipped. Audited with the filter and the counts.
    private func actOnMatching(_ action: ConsoleAction, _ request: Request, _ context: ConsoleContext) async throws -> Response {
        let fields = try await request.formFields()
        let filter = EntriesQuery(parameters: fields)
        guard let through = fields.last(where: { $0.name == "through" }).flatMap({ EntryID($0.value) }) else {
            throw HTTPError(.badRequest, message: "confirm from the confirmation page: through=ID is missing")
        }
        guard var selection = filter.selection(states: action.states, through: through) else {
            throw HTTPError(.conflict, message: "\(action.rawValue) applies to no entry in state \(filter.state)")
        }
        selection.limit = Self.bulkBatch
        var changed = 0
        var skipped = 0
        do {
            while true {
                let change = action == .retry ? try await queue.retry(matching: selection) : try await queue.purge(matching: selection)
                changed += change.ids.count
                skipped += change.skipped.count
                guard change.ids.count + change.skipped.count == Self.bulkBatch, let last = (change.ids + change.skipped).max() else { break }
                selection.after = last
            }
        } catch {
            let result = "failed after \(changed) changed: \(error)"
            audit(action, context, ids: [], result: result, filter: filter.filterQuery, outcome: "failed")
            throw HTTPError(.internalServerError, message: "\(action.rawValue) stopped: \(result)")
        }
        let message = "\(action == .retry ? "retried" : "discarded") \(changed) matching entries" + (skipped == 0 ? "" : ", skipped \(skipped) in flight")
        audit(action, context, ids: [], result: message, filter: filter.filterQuery, outcome: changed > 0 ? "changed" : "unchanged")
        let result = MatchingResultView(action: action.rawValue, changed: changed, skipped: skipped, message: message)
        if request.wantsJSON { return try ConsoleResponse.json(result) }
        return ConsoleResponse.seeOther(path("/entries") + query([filter.filterQuery, notices.fields(message), keptRefresh(request)]))
    }

    private func pause(_ action: ConsoleAction, _ request: Request, _ context: ConsoleContext) async throws -> Response {
        let fields = try await request.formFields()
        if action == .resume, let origin = fields.first(where: { $0.name == "origin" })?.value, !origin.isEmpty {
            // An origin's pause after a 429 or 503, and its shrunk concurrency (FlowControl).
            let changed = try await queue.resume(origin: origin)
            let message = changed ? "resumed origin \(origin)" : "origin \(origin) was not paused or slowed"
            return try finish(ActionResultView(action: action.rawValue, changed: [], skipped: [], message: message), back: path("/"), request, context, changed: changed)
        }
        let group = fields.first { $0.name == "group" }.map(\.value).flatMap { $0.isEmpty ? nil : $0 }
        let changed: Bool
        if action == .pause { changed = try await queue.pause(group: group) } else { changed = try await queue.resume(group: group) }
        let what = group.map { "group \($0)" } ?? "the queue"
        let message = action == .pause ? (changed ? "paused \(what)" : "\(what) was already paused") : (changed ? "resumed \(what)" : "\(what) was not paused")
        let result = ActionResultView(action: action.rawValue, changed: [], skipped: [], message: message)
        return try finish(result, back: path("/"), request, context, changed: changed)
    }

    /// Audits the result, then answers it: JSON, or 303 to `back` with the message as a notice.
    private func finish(_ result: ActionResultView, back: String, _ request: Request, _ context: ConsoleContext, status: HTTPResponse.Status = .ok, changed: Bool) throws -> Response {
        audit(ConsoleAction(rawValue: result.action) ?? .retry, context, ids: result.changed + result.skipped, result: result.message, outcome: changed ? "changed" : "unchanged")
        if request.wantsJSON { return try ConsoleResponse.json(result, status: status) }
        return ConsoleResponse.seeOther((back.isEmpty ? "/" : back) + query([notices.fields(result.message), keptRefresh(request)]))
    }

    /// `refresh=N` when the form was posted from a page that reloads every N seconds (its
    /// forms carry the interval in their action's query), so the page the action redirects to
    /// goes on reloading; "" otherwise.
    private func keptRefresh(_ request: Request) -> String {
        let seconds = Refresh.seconds(request.uri.queryParameters.get("refresh"))
        return seconds > 0 ? "refresh=\(seconds)" : ""
    }

    /// `?` and the non-empty `parts` joined by `&`; "" when all are empty.
    private func query(_ parts: [String]) -> String {
        let kept = parts.filter { !$0.isEmpty }
        return kept.isEmpty ? "" : "?" + kept.joined(separator: "&")
    }

    /// The audit line, and one more of `courier_console_actions_total{action, result}`, where
    /// `outcome` is `changed` (something changed), `unchanged` (nothing the action applies to,
    /// or nothing to do) or `failed`.
    private func audit(_ action: ConsoleAction, _ context: ConsoleContext, ids: [EntryID], result: String, filter: String? = nil, outcome: String) {
        Counter(label: "courier_console_actions_total", dimensions: [("action", action.rawValue), ("result", outcome)], factory: metricsFactory ?? MetricsSystem.factory)
            .increment()
        var metadata: Logger.Metadata = [
            "user": "\(context.user?.name ?? "-")",
            "action": "\(action.rawValue)",
            "ids": .array(ids.map { "\($0)" }),
            "result": "\(result)",
        ]
        if let filter { metadata["filter"] = "\(filter)" }
        logger.notice("console action", metadata: metadata)
    }
}
