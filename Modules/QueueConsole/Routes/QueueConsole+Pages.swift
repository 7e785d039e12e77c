import Foundation
import Hummingbird
import NIOCore
import OfflineQueueCore

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
        let overview = try await queue.recentOverview(maxAge: countsMaxAge, top: overviewTop, window: overviewWindow)
        var view = OverviewView(overview, now: Date())
        view.origins = try await queue.originFlows().map(OriginFlowView.init)
        view.hasOrigins = !view.origins.isEmpty
        view.activity = ActivityChart(try await queue.activity(minutes: 60))
        return try respond(request, context, view, title: "Overview", template: "overview", route: "/")
    }

    func entries(_ request: Request, _ context: ConsoleContext) async throws -> Response {
        let query = EntriesQuery(parameters: request.queryFields)
        let (found, next) = try await page(query)
        let view = EntriesView(filter: query, entries: found.map(EntrySummaryView.init), next: next)
        return try respond(request, context, view, title: "Entries", template: "entries", route: "/entries")
    }

    /// One page of entries for `query`, and the cursor of the next page. The store matches
    /// every field of the filter, examining at most ``scanLimit`` rows of the filter's state a
    /// request, so a rare name never makes an unbounded query: a page can then hold fewer
    /// entries than its limit and still have a next one.
    func page(_ query: EntriesQuery) async throws -> ([QueueEntry], EntryID?) {
        if !query.id.isEmpty {
            guard let id = EntryID(query.id), let entry = try await queue.entry(id), query.matches(entry) else { return ([], nil) }
            return ([entry], nil)
        }
        let page = try await queue.entryPage(query.storeFilter, scanLimit: Self.scanLimit)
        return (page.entries, page.next)
    }

    /// The most rows of the filter's state one entries request examines.
    static let scanLimit = 5_000

    func entry(_ request: Request, _ context: ConsoleContext) async throws -> Response {
        guard let id = context.parameters.get("id", as: EntryID.self) else { throw HTTPError(.badRequest, message: "not an entry id") }
        guard let entry = try await queue.entry(id) else { throw HTTPError(.notFound, message: "no entry \(id)") }
        var view = EntryDetailView(entry, now: queue.configuration.clock.now(), traceLink: traceLink)
        view.link(try await queue.dependencies(of: id))
        let kept: KeptResponseReading? = try await queue.keptResponse(of: entry)
        switch kept {
        case .kept(let response)?: view.keep(response)
        case .sealed?: view.responseSealed = true
        case nil: break
        }
        return try respond(request, context, view, title: "Entry \(id)", template: "entry", route: "/entries/\(id)")
    }

    /// The page as HTML, or its view as JSON when the client asked for it. `route` is the
    /// page's path under the prefix.
    func respond<Content: Encodable & Sendable>(_ request: Request, _ context: ConsoleContext, _ view: Content, title: String, template: String, route: String) throws -> Response {
        if request.wantsJSON { return try ConsoleResponse.json(view) }
        let query = request.queryFields
        let notice = notices.notice(in: query)
        let page = Page(title: title, prefix: prefix, user: context.user, notice: notice, content: view, route: path(route), query: query)
        return ConsoleResponse.html(ConsoleTemplates.render(page, template))
    }
}
