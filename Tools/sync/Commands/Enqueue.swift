import ArgumentParser
import Foundation
import HTTPCore
import OfflineQueue

/// What an entry does when one it waits for dies, as the command line spells it.
enum ParentDeathChoice: String, ExpressibleByArgument, CaseIterable {
    case die, wait, proceed

    var policy: ParentDeathPolicy {
        switch self {
        case .die: .die
        case .wait: .wait
        case .proceed: .proceed
        }
    }
}

struct Enqueue: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Store a request in the queue and print its id.",
        discussion: """
            Creates the database if needed. Secret headers (Authorization, Cookie, \
            Proxy-Authorization) are refused unless --store-secrets is given; a header template \
            resolved at send time keeps the secret out of the file:
              -H 'Authorization: Bearer ${env:API_TOKEN}'          (an environment variable of the sender)
              -H 'Authorization: Bearer ${credential:api-token}'   (a systemd credential)

            The entry keeps the trace context of the shell that enqueues it, from TRACEPARENT and \
            TRACESTATE (W3C values, as OpenTelemetry passes them to a command), and each delivery \
            continues that trace; a malformed value is left out with a warning.

            With --after ID (repeatable) the entry waits, blocked, until each of those entries is \
            delivered, by any drainer of any process; --when-parent-dies says what it does when \
            one of them dies instead: die too (the default), wait for an operator to retry it, or \
            proceed anyway. An id the queue does not hold is refused, nothing stored.

            Its URL (path and query), headers and --data body can take values from the response \
            a parent kept (enqueued with --keep-response), resolved when it is sent: \
            ${response:ID:/json/pointer} (a value of its JSON body), ${response:ID:header:NAME} \
            and ${response:ID:status}. In the URL a value is one percent-encoded segment; in a \
            JSON body a placeholder that is a whole string, or stands outside one, becomes the \
            JSON value (a number stays a number). ID must be one of --after. One that does not \
            resolve at send time makes the entry dead, naming it; nothing is sent with a \
            placeholder in it.

            With --replace KEY (a coalescing key) the request replaces the one still waiting under \
            that key: the waiting entry keeps its id, its place in its group and the entries that \
            wait for it, and takes this request (the printed id is its id); the old request is \
            kept as a superseded entry of its own, never sent. Behind one in flight under the \
            key, the new entry waits until it is settled. A hundred edits enqueued while offline \
            send one request.

            The entry's name labels the queue's metrics (endpoint="…") and its log lines. Without \
            --name it is the method and the origin (POST https://api.example.com), never the \
            path, whose ids would make a metric series per entry: name a route with --name.

            Examples:
              sync enqueue POST https://api.example.com/events -H 'Content-Type: application/json' --data '{"n":1}'
              sync enqueue PUT https://api.example.com/files/a.bin --data-file ./a.bin --group files
              sync enqueue POST https://api.example.com/orders/42/items --name 'POST /orders/{id}/items' --data '{"sku":7}'
              sync --json enqueue DELETE https://api.example.com/items/7 --idempotency-key delete-item-7
              sync enqueue POST https://api.example.com/notes/7/tags --data '{"tag":"x"}' --after 41 --after 42
              sync enqueue POST https://api.example.com/notes/'${response:41:/id}'/tags --data '{"tag":"x"}' --after 41
              sync enqueue PUT https://api.example.com/notes/7 --data '{"text":"draft 5"}' --replace note-7
              sync enqueue POST https://api.example.com/events --data '{"n":1}' --keyring /etc/courier/queue.keyring --sealing required
              TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 sync enqueue POST https://api.example.com/events
            """
    )

    @OptionGroup var options: QueueOptions

    @Argument(help: "The HTTP method, such as POST.")
    var method: String

    @Argument(help: "The absolute http or https URL.")
    var url: String

    @Option(name: [.customShort("H"), .customLong("header")], help: ArgumentHelp("A header, as 'Name: value'. Repeatable.", valueName: "header"))
    var headers: [String] = []

    @Option(name: .long, help: "The body, as given.")
    var data: String?

    @Option(name: .long, help: ArgumentHelp("The body, read from a file (streamed from disk when large).", valueName: "path"))
    var dataFile: String?

    @Option(name: .long, help: ArgumentHelp(
        "The entry's name in metrics and logs, such as a route ('POST /orders/{id}'); the method and origin unless given.",
        valueName: "name"
    ))
    var name: String?

    @Option(name: .long, help: "Entries of one group are delivered in order.")
    var group: String?

    @Option(name: .long, help: "Higher goes first across groups.")
    var priority: Int = 0

    @Option(name: .long, help: "A key of yours; enqueueing the same key twice stores one entry.")
    var idempotencyKey: String?

    @Option(name: .long, help: ArgumentHelp("An entry to wait for: this one is sent once it is delivered. Repeatable.", valueName: "id"))
    var after: [EntryID] = []

    @Option(name: .long, help: ArgumentHelp("When an entry it waits for dies: die, wait (for a retry of it) or proceed.", valueName: "policy"))
    var whenParentDies: ParentDeathChoice = .die

    @Flag(name: .long, help: "Keep the response of its delivery (status, location, etag, content-type, last-modified, the body up to 64 KiB), for `sync wait` and `sync show`.")
    var keepResponse = false

    @Option(name: .long, help: ArgumentHelp("A response header field to keep (instead of the four by default). Repeatable; implies --keep-response.", valueName: "name"))
    var keepHeader: [String] = []

    @Option(name: .long, help: ArgumentHelp("The most bytes of the response body to keep (0 to 1048576; default 65536). Implies --keep-response.", valueName: "bytes"))
    var keepBodyLimit: Int?

    @Option(name: .customLong("replace"), help: ArgumentHelp("Replace the entry still waiting under this coalescing key (it keeps its id and place; the old request is kept as superseded); behind one in flight, wait for it.", valueName: "key"))
    var coalescingKey: String?

    @Flag(name: .long, help: "Store secret headers as given (the database then holds the secret).")
    var storeSecrets = false

    @Option(name: .long, help: .hidden)
    var count: Int = 1

    func validate() throws {
        if data != nil && dataFile != nil { throw ValidationError("give --data or --data-file, not both") }
        if count < 1 { throw ValidationError("--count must be at least 1") }
        if count > 1 && idempotencyKey != nil { throw ValidationError("--count cannot be combined with --idempotency-key") }
        if !after.isEmpty && count > 1 { throw ValidationError("--count cannot be combined with --after") }
        if coalescingKey != nil && count > 1 { throw ValidationError("--count cannot be combined with --replace") }
        if let bad = after.first(where: { $0 <= 0 }) { throw ValidationError("--after \(bad) is not an entry id") }
        for header in headers where !header.contains(":") {
            throw ValidationError("header \(header.debugDescription) is not 'Name: value'")
        }
        if let name { try Self.check(name: name) }
        if let keepBodyLimit, !(0...ResponseKeeping.maxBodyLimit).contains(keepBodyLimit) {
            throw ValidationError("--keep-body-limit must be 0 to \(ResponseKeeping.maxBodyLimit)")
        }
    }

    /// What of the response to keep, from --keep-response, --keep-header and --keep-body-limit.
    var keeping: ResponseKeeping? {
        guard keepResponse || !keepHeader.isEmpty || keepBodyLimit != nil else { return nil }
        return ResponseKeeping(
            headers: keepHeader.isEmpty ? ResponseKeeping.defaultHeaders : keepHeader,
            bodyLimit: keepBodyLimit ?? ResponseKeeping.defaultBodyLimit
        )
    }

    /// The longest `--name`, in characters: a name is a metric label value and a column of
    /// `sync list`, both read by people.
    static let longestName = 128

    /// A `--name` is one line of visible text: a control or format character (a newline, an
    /// escape, a bidirectional override) would garble the metrics' text format, a log line or
    /// a terminal.
    static func check(name: String) throws {
        if name.allSatisfy(\.isWhitespace) { throw ValidationError("--name is empty") }
        if name.count > longestName { throw ValidationError("--name is longer than \(longestName) characters") }
        let unprintable = name.unicodeScalars.first { scalar in
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned: true
            default: false
            }
        }
        if let unprintable {
            throw ValidationError("--name holds the unprintable character \(String(format: "U+%04X", unprintable.value))")
        }
    }

    func run() async throws {
        let parsed = headers.map { header -> (name: String, value: String) in
            let colon = header.firstIndex(of: ":")!
            return (String(header[..<colon]).trimmingCharacters(in: .whitespaces), String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
        var body: RequestBody?
        if let data { body = .data(Data(data.utf8)) }
        if let dataFile {
            guard FileManager.default.isReadableFile(atPath: dataFile) else {
                complain("cannot read --data-file \(dataFile)")
                throw SysExit.noInput
            }
            do { body = try RequestBody.file(URL(fileURLWithPath: dataFile)) } catch {
                complain("cannot read --data-file \(dataFile): \(error)")
                throw SysExit.noInput
            }
        }
        let trace = Self.traceContext(ProcessInfo.processInfo.environment)
        try await Runner.run(options, QueueAccess(create: true, secrets: storeSecrets ? .store : .reject)) { queue in
            let options = EnqueueOptions(
                group: group, priority: priority, idempotencyKey: idempotencyKey, after: after, whenParentDies: whenParentDies.policy,
                keepResponse: keeping, coalescingKey: coalescingKey
            )
            if count > 1 { return try await enqueueMany(queue, headers: parsed, body: body, options: options, trace: trace) }
            var request = QueuedRequest(method: method, url: url, headers: parsed, body: body, name: name, options: options)
            request.traceContext = trace
            return EnqueueReport(try await queue.enqueue([request])[0], coalescingKey: coalescingKey)
        }
    }

    /// The caller's trace context, from `TRACEPARENT` and `TRACESTATE` as OpenTelemetry passes
    /// it to a child process; what is malformed is left out, with a warning, and the enqueue goes on.
    static func traceContext(_ environment: [String: String]) -> TraceContext? {
        let given = { (name: String) in environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let (context, problem) = TraceContext.lenient(traceparent: given("TRACEPARENT"), tracestate: given("TRACESTATE"))
        if let problem { complain("warning: ignoring \(problem.field.uppercased()): \(problem)") }
        return context
    }

    /// The hidden `--count N`: N copies in transactions of 1,000, for load tests.
    private func enqueueMany(
        _ queue: OfflineQueue, headers: [(name: String, value: String)], body: RequestBody?, options: EnqueueOptions, trace: TraceContext?
    ) async throws -> EnqueueManyReport {
        var first: EntryID?
        var last: EntryID?
        for start in stride(from: 0, to: count, by: 1000) {
            let batch = (start..<min(count, start + 1000)).map { _ in
                var request = QueuedRequest(method: method, url: url, headers: headers, body: body, name: name, options: options)
                request.traceContext = trace
                return request
            }
            let tickets = try await queue.enqueue(batch)
            first = first ?? tickets.first?.id
            last = tickets.last?.id
        }
        return EnqueueManyReport(firstID: first, lastID: last, count: count)
    }
}

/// What `sync enqueue` prints: the entry's id (all a script needs in text), its idempotency
/// key, whether an entry with that key was there already, and the entry it superseded.
struct EnqueueReport: Report {
    var id: EntryID
    var idempotencyKey: String
    var deduplicated: Bool
    var superseded: EntryID?
    /// `--replace`, for the message about the request it replaced.
    var coalescingKey: String?

    enum CodingKeys: String, CodingKey {
        case id, deduplicated, superseded, idempotencyKey = "idempotency_key"
    }

    init(_ ticket: Ticket, coalescingKey: String?) {
        id = ticket.id
        idempotencyKey = ticket.idempotencyKey
        deduplicated = ticket.deduplicated
        superseded = ticket.superseded
        self.coalescingKey = coalescingKey
    }

    func printText() {
        print(id)
        if deduplicated { complain("an entry with idempotency key \(idempotencyKey) was already queued; nothing new stored") }
        if let superseded {
            complain("replaced the request waiting under \(coalescingKey ?? ""); the old one is kept as entry \(superseded), superseded")
        }
    }
}

/// What the hidden `sync enqueue --count N` prints: the first and last ids, and how many.
struct EnqueueManyReport: Report {
    @OrNull var firstID: EntryID?
    @OrNull var lastID: EntryID?
    var count: Int

    enum CodingKeys: String, CodingKey {
        case count, firstID = "first_id", lastID = "last_id"
    }

    func printText() {
        print("\(count) entries, ids \(firstID ?? 0)…\(lastID ?? 0)")
    }
}
