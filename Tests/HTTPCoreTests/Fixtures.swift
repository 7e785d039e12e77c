import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes

/// An endpoint enum in the style users write.
enum UserAPI: Endpoint {
    case user(id: Int)
    case search(String)
    case create(User)
    case remove(id: Int)
    case teapot

    var path: String {
        switch self {
        case .user(let id), .remove(let id): "/users/\(id)"
        case .search: "/users"
        case .create: "/users"
        case .teapot: "/teapot"
        }
    }

    var method: HTTPRequest.Method {
        switch self {
        case .user, .search, .teapot: .get
        case .create: .post
        case .remove: .delete
        }
    }

    var query: [URLQueryItem] {
        if case .search(let text) = self { return [URLQueryItem(name: "q", value: text)] }
        return []
    }

    var body: RequestContent {
        if case .create(let user) = self { return .json(user) }
        return .none
    }

    var scopes: Set<PluginScope> {
        if case .user = self { return ["users"] }
        return []
    }

    var validation: StatusValidation {
        if case .teapot = self { return .codes([418]) }
        return .successful
    }
}

/// A client over a stub at `https://api.test/v1`.
func makeClient(_ stub: StubTransport, configure: (inout ClientConfiguration) -> Void = { _ in }) -> APIClient {
    var configuration = ClientConfiguration(baseURL: URL(string: "https://api.test/v1")!)
    configure(&configuration)
    return APIClient(configuration: configuration, transport: stub)
}

/// A clock that records requested sleeps and returns at once.
final class RecordingSleeper: Sendable {
    private let sleeps = LockedBox<[Duration]>([])
    var recorded: [Duration] { sleeps.current }

    var clock: RetryClock {
        RetryClock(sleep: { [sleeps] duration in sleeps.withLock { $0.append(duration) } }, now: { Date(timeIntervalSince1970: 1_000_000) })
    }
}
