public import Foundation
import HTTPCore
public import HTTPTypes
public import OfflineQueueCore
public import OpenAPIRuntime
public import OpenAPITransport

/// A `ClientTransport` that sends the operations you name through an `OfflineQueue.OfflineQueue`
/// (send-or-store) and every other operation through an `OpenAPITransport.APIClientTransport`.
///
/// A queued operation is sent at once when the network is there, and its response goes back
/// to the generated client as usual. When the network is gone (the queue's monitor says so,
/// or the send fails for that reason) the request is stored, keyed by its operation id, and
/// the call throws ``OperationQueued`` with the queue's ticket: never a silent success. The
/// generated client wraps it in a `ClientError`; `OpenAPIRuntime.ClientError.queued` reads it
/// back, and ``OperationOutcome/of(_:)`` turns a call into "sent, with its output" or "queued".
///
/// ```swift
/// let queue = try OfflineQueue(configuration: QueueConfiguration(path: "/var/lib/app/queue.db"),
///                              client: client, monitor: try NetlinkMonitor())
/// let notes = Client(serverURL: serverURL, transport: OfflineQueueTransport(
///     queue: queue, operations: ["createNote"], others: APIClientTransport(client: client)))
/// switch try await OperationOutcome.of({ try await notes.createNote(body: .json(draft)) }) {
/// case .sent(let output): print(try output.created.body.json)
/// case .queued(let queued): print("stored as entry", queued.ticket.id)
/// }
/// ```
///
/// The queue's drain (`OfflineQueue.OfflineQueue.drain()` or its service) sends the stored
/// request later through the queue's client, with the plugins of the operation's scopes run
/// again. Its response goes nowhere: watch `OfflineQueue.OfflineQueue.events(bufferingPolicy:)`
/// or look the entry up by the ticket.
///
/// A queued operation is sent through the queue's own client (the one the queue was opened
/// with), with the validation and scopes of `others`, and its response body is read into
/// memory (up to that client's `maxBodySize`). A request body the generated code can iterate
/// only once is read into memory first (up to ``maxBufferedBody``), since a send that finds
/// the network gone stores the body it could not send.
public struct OfflineQueueTransport: ClientTransport {
    /// The queue the named operations go through.
    public let queue: OfflineQueue
    /// The operation ids sent through the queue.
    public let operations: Set<String>
    /// The transport every other operation goes through; its validation and scopes apply to
    /// queued operations too.
    public let others: APIClientTransport
    /// Group, priority, idempotency key and earliest time of each stored operation, by
    /// operation id.
    public let options: @Sendable (_ operationID: String) -> EnqueueOptions
    /// The largest single-pass request body read into memory for a queued operation.
    public let maxBufferedBody: Int

    /// - Parameters:
    ///   - queue: the queue queued operations go through.
    ///   - operations: the operation ids to send through the queue.
    ///   - others: the transport for every other operation.
    ///   - maxBufferedBody: the largest single-pass request body read into memory (16 MiB).
    ///   - options: the enqueue options of an operation, given its id; by default none (a
    ///     fresh idempotency key per call, no group, priority 0).
    public init(
        queue: OfflineQueue,
        operations: Set<String>,
        others: APIClientTransport,
        maxBufferedBody: Int = 16 * 1024 * 1024,
        options: @escaping @Sendable (_ operationID: String) -> EnqueueOptions = { _ in EnqueueOptions() }
    ) {
        self.queue = queue
        self.operations = operations
        self.others = others
        self.maxBufferedBody = maxBufferedBody
        self.options = options
    }

    public func send(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String) async throws -> (HTTPResponse, HTTPBody?) {
        guard operations.contains(operationID) else {
            return try await others.send(request, body: body, baseURL: baseURL, operationID: operationID)
        }
        let operation = try await OperationEndpoint(
            request: request, body: body, baseURL: baseURL, operationID: operationID,
            scopes: others.scopes(operationID), validation: others.validation, maxBufferedBody: maxBufferedBody
        )
        let outcome: SendOutcome
        do {
            outcome = try await queue.send(operation, options: options(operationID))
        } catch {
            // A call that failed online throws as through `others`; the queue's own failures
            // (storing, templates) throw as they are.
            if case .network(let failure) = error { throw failure }
            throw error
        }
        switch outcome {
        case .sent(let response):
            return APIClientTransport.openAPIResponse(response.map { ByteStream(data: $0) }, method: request.method)
        case .queued(let ticket):
            throw OperationQueued(operationID: operationID, ticket: ticket)
        }
    }
}

/// What a queued operation throws when the network was gone: the request is stored in the
/// offline queue under ``ticket`` and will be sent when the network is back. Nothing reached
/// the server yet, and no response exists.
public struct OperationQueued: Error, Sendable, Hashable, CustomStringConvertible {
    /// The OpenAPI operation id of the stored call.
    public let operationID: String
    /// The stored entry's id and idempotency key.
    public let ticket: Ticket

    /// The error for the operation `operationID`, stored in the queue under `ticket`.
    public init(operationID: String, ticket: Ticket) {
        self.operationID = operationID
        self.ticket = ticket
    }

    public var description: String {
        "\(operationID) was queued as entry \(ticket.id) (idempotency key \(ticket.idempotencyKey)): the network was gone; it is sent when the network is back"
    }
}

/// The result of a call through an ``OfflineQueueTransport``: sent, with the generated
/// client's output, or stored in the queue.
public enum OperationOutcome<Output: Sendable>: Sendable {
    /// Sent now; the output of the generated client.
    case sent(Output)
    /// Stored in the queue, to be sent when the network is back.
    case queued(OperationQueued)

    /// Runs `call` (one generated operation) and says whether it was sent or queued. Every
    /// other error is thrown as `call` threw it.
    public static func of(_ call: () async throws -> Output) async throws -> OperationOutcome<Output> {
        do {
            return .sent(try await call())
        } catch let error as ClientError {
            guard let queued = error.queued else { throw error }
            return .queued(queued)
        }
    }

    /// The queued call, when the call was queued.
    public var queued: OperationQueued? {
        if case .queued(let queued) = self { return queued }
        return nil
    }
}

extension ClientError {
    /// The ``OperationQueued`` under this error, when the operation was stored in the offline
    /// queue instead of sent.
    public var queued: OperationQueued? { underlyingError as? OperationQueued }
}

/// A generated request as an ``HTTPCore/Endpoint``, the form the queue sends and stores: the
/// server URL, the generated path with its query and header fields, and the body.
struct OperationEndpoint: Endpoint {
    let baseURL: URL?
    let path: String
    let method: HTTPRequest.Method
    let headers: HTTPFields
    let body: RequestContent
    let validation: StatusValidation
    let scopes: Set<PluginScope>
    let name: String

    init(
        request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        scopes: Set<PluginScope>, validation: StatusValidation, maxBufferedBody: Int
    ) async throws {
        self.baseURL = baseURL
        path = request.path ?? "/"
        method = request.method
        headers = request.headerFields
        self.validation = validation
        self.scopes = scopes
        name = operationID
        guard let body else {
            self.body = .none
            return
        }
        let courierBody: RequestBody
        if body.iterationBehavior == .multiple {
            courierBody = APIClientTransport.requestBody(body)
        } else {
            var data = Data()
            for try await chunk in body {
                guard data.count + chunk.count <= maxBufferedBody else { throw NetworkError.bodyTooLarge(limit: maxBufferedBody) }
                data.append(contentsOf: chunk)
            }
            courierBody = .data(data)
        }
        self.body = RequestContent { draft, _ in draft.body = courierBody }
    }
}
