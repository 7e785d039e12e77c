import Foundation
import HTTPCore
import HTTPTypes

/// A stored entry as an endpoint, so the client sends it with its plugins, interceptors,
/// redirects and validation.
struct ReplayEndpoint: Endpoint {
    let path: String
    let method: HTTPRequest.Method
    let headers: HTTPFields
    let body: RequestContent
    let timeout: Duration?
    let scopes: Set<PluginScope>
    let name: String
    /// The values of resolved templates and credential fields, kept out of stored excerpts.
    let secrets: SecretScrubber

    init(entry: QueueEntry, queue: OfflineQueue) throws {
        guard let method = HTTPRequest.Method(entry.method) else { throw QueueError.invalidRequest("stored method \(entry.method) is invalid") }
        let origin = URL(string: entry.url).flatMap(Origin.init)
        var headers = HTTPFields()
        var credentials: Set<HTTPField.Name> = []
        var secrets = SecretScrubber()
        for header in entry.headers {
            guard let name = HTTPField.Name(header.name) else { throw QueueError.invalidRequest("stored header \(header.name) is invalid") }
            let value = try queue.configuration.templates.resolve(header.value, for: origin)
            if value != header.value || queue.configuration.secretHeaders.contains(name) {
                // A resolved template is a credential wherever it sits: dropped when a redirect
                // leaves the origin, and never stored in an excerpt.
                credentials.insert(name)
                secrets.add(value)
            }
            headers.append(HTTPField(name: name, value: value))
        }
        self.secrets = secrets
        headers[queue.configuration.idempotencyHeader] = entry.idempotencyKey
        var requestBody: RequestBody?
        switch entry.body {
        case .inline(let data): requestBody = .data(data)
        case .file(let name, _): requestBody = try RequestBody.file(queue.store.bodies.url(for: name))
        case nil: requestBody = nil
        }
        let body = requestBody
        let credentialFields = credentials
        self.path = entry.url
        self.method = method
        self.headers = headers
        self.body = RequestContent { draft, _ in
            draft.body = body
            draft.credentialFields.formUnion(credentialFields)
        }
        self.timeout = entry.timeout
        self.scopes = Set(entry.scopes.map { PluginScope($0) })
        self.name = entry.name
    }
}
