import Foundation
import HTTPCore
import HTTPTypes

/// An endpoint sent online with its templates resolved: the base endpoint but for its headers,
/// whose resolved fields are marked as credentials.
struct TemplatesResolved<Base: Endpoint>: Endpoint {
    let base: Base
    let headers: HTTPFields
    let credentials: Set<HTTPField.Name>

    var baseURL: URL? { base.baseURL }
    var path: String { base.path }
    var method: HTTPRequest.Method { base.method }
    var query: [URLQueryItem] { base.query }
    var timeout: Duration? { base.timeout }
    var validation: StatusValidation { base.validation }
    var scopes: Set<PluginScope> { base.scopes }
    var name: String { base.name }
    var body: RequestContent {
        let content = base.body
        let credentials = credentials
        return RequestContent { draft, context in
            try content.apply(to: &draft, context: context)
            draft.credentialFields.formUnion(credentials)
        }
    }
}
