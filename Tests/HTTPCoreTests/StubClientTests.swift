import CourierTesting
import Foundation
import HTTPCore
import HTTPTypes
import Testing

struct User: Codable, Equatable, Sendable {
    var id: Int
    var name: String
}

@Test func modelCallThroughStub() async throws {
    let stub = StubTransport()
    stub.on(.get, "/users/42", respond: try .json(User(id: 42, name: "Ada")))
    let client = APIClient(baseURL: URL(string: "https://api.test/v1")!, transport: stub)
    let user: User = try await client.model(Request<User>.get("/users/42"))
    #expect(user == User(id: 42, name: "Ada"))
    #expect(stub.recordedRequests.first?.head.path == "/v1/users/42")
}
