import Foundation
import Hummingbird
import NIOCore
import OfflineQueue

/// The pages: overview, entries, entry; each with its JSON twin.
extension QueueConsole {
    func addPageRoutes(to router: Router<ConsoleContext>) {
        let routes = router.group(RouterPath(prefix))
        routes.get("/healthz") { _, _ in ConsoleResponse.plain(.ok, "ok\n") }
        routes.get("/console.css") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/css; charset=utf-8", .cacheControl: "max-age=3600"],
                     body: .init(byteBuffer: ByteBuffer(string: ConsoleTemplates.stylesheet)))
        }
        routes.get("/") { request, context in try await overview(request, context) }
        routes.get("/entries") { request, context in try await entries(request, context) }
        routes.get("/entries/:id") { request, context in try await entry(request, context) }
    }

    func overview(_ request: Request, _ context: ConsoleContext) async throws -> Response {
        let counts = try await queue.recentCounts(maxAge: countsMaxAge)
        let pauses = try await queue.pauses()
        let view = OverviewView(counts: counts, pauses: pauses, now: Date())
        return try respond(request, context, view, title: "Overview", template: "overview")
    }

    func entries(_ request: Request, _ context: ConsoleContext) async throws -> Response {
        let query = EntriesQuery(parameters: request.queryFields)
        let (found, next) = try await page(query)
        let view = EntriesView(filter: query, entries: found.map(EntrySummaryView.init), next: next)
        return try respond(request, context, view, title: "Entries", template: "entries")
    }

    /// One page of entries for `query`, and the cursor of the next page. The store filters by
    /// state and group with keyset paging; name and origin are matched here, over at most
    /// ``scanLimit`` rows a request, so a rare name never makes an unbounded query: a page
    /// can then hold fewer entries than its limit and still have a next one.
    func page(_ query: EntriesQuery) async throws -> ([QueueEntry], EntryID?) {
        if !query.id.isEmpty {
            guard let id = EntryID(query.id), let entry = try await queue.entry(id), query.matches(entry),
                  query.state.isEmpty || entry.state.rawValue == query.state, query.group.isEmpty || entry.group == query.group
            else { return ([], nil) }
            return ([entry], nil)
        }
        var filter = query.storeFilter
        var found: [QueueEntry] = []
        var scanned = 0
        while true {
            let batch = try await queue.entries(filter)
            scanned += batch.count
            for entry in batch where query.matches(entry) {
                found.append(entry)
                if found.count == query.limit { return (found, entry.id) }
            }
            guard batch.count == filter.limit, let last = batch.last else { return (found, nil) }
            if scanned >= Self.scanLimit { return (found, last.id) }
            filter.after = last.id
        }
    }

    /// The most rows one entries request reads when name or origin filter them.
    static let scanLimit = 5_000

    func entry(_ request: Request, _ context: ConsoleContext) async throws -> Response {
        guard let id = context.parameters.get("id", as: EntryID.self) else { throw HTTPError(.badRequest, message: "not an entry id") }
        guard let entry = try await queue.entry(id) else { throw HTTPError(.notFound, message: "no entry \(id)") }
        let view = EntryDetailView(entry, now: queue.configuration.clock.now())
        return try respond(request, context, view, title: "Entry \(id)", template: "entry")
    }

    /// The page as HTML, or its view as JSON when the client asked for it.
    func respond<Content: Encodable & Sendable>(_ request: Request, _ context: ConsoleContext, _ view: Content, title: String, template: String) throws -> Response {
        if request.wantsJSON { return try ConsoleResponse.json(view) }
        let notice = request.queryFields.first { $0.name == "notice" }?.value ?? ""
        let page = Page(title: title, prefix: prefix, user: context.user, notice: notice, content: view)
        return ConsoleResponse.html(ConsoleTemplates.render(page, template))
    }
}
