import CourierTesting
import ErrorMapping
import Foundation
import HTTPCore
import HTTPTypes

struct Order: Codable, Sendable, Equatable {
    var id: Int
    var sku: String
}

/// The error type of the shop domain.
enum ShopError: Error, Equatable {
    case signInRequired
    case forbidden(problemType: String, balance: Int?)
    case missing
    case outOfStock(sku: String)
    case unavailable(status: Int?)
    case offline
    case teapot
    case cancelled
    case other(FailureCategory)
}

/// The shop's factory: problem details in, shop errors out.
struct ShopErrors: DomainErrorFactory {
    /// Every (error, body) pair the factory was asked about.
    let seen = LockedList<(FailureCategory, ProblemDetails?)>()

    func make(from error: NetworkError, body: ProblemDetails?) -> ShopError {
        let category = FailureCategory(error)
        seen.append((category, body))
        switch category {
        case .unauthorized: return .signInRequired
        case .forbidden: return .forbidden(problemType: body?.type ?? "none", balance: body?[extension: "balance"]?.intValue)
        case .notFound: return .missing
        case .client(409): return .outOfStock(sku: body?[extension: "sku"]?.stringValue ?? "?")
        case .server(let status): return .unavailable(status: status)
        case .transport(.notConnected), .transport(.cannotConnect), .transport(.dns), .offline: return .offline
        case .cancelled: return .cancelled
        default: return .other(category)
        }
    }
}

/// An API's own error body.
struct BillingErrorBody: Decodable, Sendable, Equatable {
    var code: String
    var message: String
}

enum BillingError: Error, Equatable {
    case rejected(code: String, message: String)
    case unexpected(FailureCategory)
}

/// A factory with a custom error body.
struct BillingErrors: DomainErrorFactory {
    var errorBody: ErrorBodyDecoder<BillingErrorBody> { .json() }

    func make(from error: NetworkError, body: BillingErrorBody?) -> BillingError {
        body.map { .rejected(code: $0.code, message: $0.message) } ?? .unexpected(FailureCategory(error))
    }
}

enum ShopAPI: Endpoint {
    case order(id: Int)
    case place(Order)
    case file

    var path: String {
        switch self {
        case .order(let id): "/orders/\(id)"
        case .place: "/orders"
        case .file: "/files/report"
        }
    }

    var method: HTTPRequest.Method {
        switch self {
        case .order, .file: .get
        case .place: .post
        }
    }

    var body: RequestContent {
        switch self {
        case .place(let order): .json(order)
        case .order, .file: .none
        }
    }
}

/// A thread-safe list for recording from `Sendable` closures.
final class LockedList<Element: Sendable>: Sendable {
    private let items = LockedBox<[Element]>([])
    func append(_ item: Element) { items.withLock { $0.append(item) } }
    var all: [Element] { items.current }
}

/// A retry clock that records the delays asked for and never sleeps.
func recordingClock(_ delays: LockedList<Duration>) -> RetryClock {
    RetryClock(sleep: { delays.append($0) }, now: { Date(timeIntervalSince1970: 0) })
}

func makeClient(_ stub: StubTransport, interceptors: [any Interceptor] = []) -> APIClient {
    var configuration = ClientConfiguration(baseURL: URL(string: "https://shop.test/api")!)
    configuration.interceptors = interceptors
    return APIClient(configuration: configuration, transport: stub)
}

func problemStub(status: Int, _ json: String, contentType: String = "application/problem+json") -> StubTransport.Stub {
    StubTransport.Stub(status: HTTPResponse.Status(code: status), headers: [.contentType: contentType], body: Data(json.utf8))
}
