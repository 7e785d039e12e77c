import CourierTesting
import ErrorMapping
import Foundation
import HTTPCore
import HTTPTypes
import Testing

@Suite struct DomainClientTests {
    @Test func typedThrowsCatchesTheDomainTypeWithoutCasts() async {
        let stub = StubTransport()
        stub.on(ShopAPI.order(id: 1), respond: .status(401))
        let shop = DomainClient(client: makeClient(stub), factory: ShopErrors())
        do {
            _ = try await shop.model(ShopAPI.order(id: 1), as: Order.self)
            Issue.record("expected a failure")
        } catch .signInRequired {
            // The pattern is a ShopError case: the compiler knows the thrown type.
        } catch {
            let typed: ShopError = error
            Issue.record("unexpected \(typed)")
        }
    }

    @Test func successPassesThrough() async throws {
        let stub = StubTransport()
        stub.on(ShopAPI.order(id: 7), respond: try .json(Order(id: 7, sku: "A1")))
        let shop = DomainClient(client: makeClient(stub), factory: ShopErrors())
        #expect(try await shop.model(ShopAPI.order(id: 7)) == Order(id: 7, sku: "A1"))
        #expect(try await shop.response(ShopAPI.order(id: 7), as: Order.self).status == .ok)
    }

    @Test func everyCallKindThrowsTheDomainError() async throws {
        struct OrderMapper: ModelMapper {
            func map(_ entity: Order) throws -> String { entity.sku }
        }
        let stub = StubTransport(fallback: .status(503))
        let shop = DomainClient(client: makeClient(stub), factory: ShopErrors())
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("courier-errormapping-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let upload = directory.appendingPathComponent("upload.bin")
        try Data("payload".utf8).write(to: upload)

        let calls: [(String, @Sendable () async throws(ShopError) -> Void)] = [
            ("send", { () async throws(ShopError) in try await shop.send(ShopAPI.order(id: 1)) }),
            ("data", { () async throws(ShopError) in _ = try await shop.data(ShopAPI.order(id: 1)) }),
            ("model", { () async throws(ShopError) in _ = try await shop.model(ShopAPI.order(id: 1), as: Order.self) }),
            ("response", { () async throws(ShopError) in _ = try await shop.response(ShopAPI.order(id: 1), as: Order.self) }),
            ("mapper", { () async throws(ShopError) in _ = try await shop.model(ShopAPI.order(id: 1), mapper: OrderMapper()) }),
            ("entity", { () async throws(ShopError) in _ = try await shop.model(ShopAPI.order(id: 1), entity: Order.self) { $0.id } }),
            ("abstraction", { () async throws(ShopError) in _ = try await shop.model(ShopAPI.order(id: 1), decoding: Order.self, as: (any Sendable).self) }),
            ("request model", { () async throws(ShopError) in try await shop.send(Request<Order>.get("/orders/1")) }),
            ("request data", { () async throws(ShopError) in try await shop.send(Request<Data>.get("/orders/1")) }),
            ("request void", { () async throws(ShopError) in try await shop.send(Request<Void>.delete("/orders/1")) }),
            ("download", { () async throws(ShopError) in try await shop.download(ShopAPI.file, to: directory.appendingPathComponent("out.bin")) }),
            ("upload", { () async throws(ShopError) in _ = try await shop.upload(ShopAPI.place(Order(id: 1, sku: "x")), fromFile: upload) }),
        ]
        for (name, call) in calls {
            do {
                try await call()
                Issue.record("\(name) should have failed")
            } catch {
                #expect(error == .unavailable(status: 503), "\(name)")
            }
        }
        #expect(stub.recordedRequests.count == calls.count)
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("out.bin").path))
        #expect(stub.recordedRequests.last?.body == Data("payload".utf8))
    }

    @Test func problemDetailsWithExtensionMembers() async throws {
        let stub = StubTransport()
        stub.on(ShopAPI.order(id: 12345), respond: problemStub(status: 403, """
        {"type": "https://example.com/probs/out-of-credit", "title": "You do not have enough credit.",
         "status": 403, "detail": "Your current balance is 30, but that costs 50.",
         "instance": "/account/12345/msgs/abc", "balance": 30,
         "accounts": ["/account/12345", "/account/67890"], "limits": {"daily": 100, "rate": 0.5}}
        """))
        let factory = ShopErrors()
        let shop = DomainClient(client: makeClient(stub), factory: factory)
        do {
            try await shop.send(ShopAPI.order(id: 12345))
            Issue.record("expected a failure")
        } catch {
            #expect(error == .forbidden(problemType: "https://example.com/probs/out-of-credit", balance: 30))
        }
        let problem = try #require(factory.seen.all.first?.1)
        #expect(problem.title == "You do not have enough credit.")
        #expect(problem.status == 403)
        #expect(problem.detail == "Your current balance is 30, but that costs 50.")
        #expect(problem.instance == "/account/12345/msgs/abc")
        #expect(Set(problem.extensions.keys) == ["balance", "accounts", "limits"])
        #expect(problem[extension: "accounts"] == .array([.string("/account/12345"), .string("/account/67890")]))
        struct Limits: Decodable, Equatable { var daily: Int; var rate: Double }
        #expect(try problem.extensionMember("limits", as: Limits.self) == Limits(daily: 100, rate: 0.5))
        #expect(String(decoding: try #require(problem[extension: "limits"]).jsonData(), as: UTF8.self) == #"{"daily":100,"rate":0.5}"#)
    }

    @Test func problemDetailsFromPlainJSONButNotFromHTML() async {
        let stub = StubTransport()
        stub.on(ShopAPI.order(id: 1), respond: problemStub(status: 409, #"{"type":"about:blank","sku":"A1"}"#, contentType: "application/json; charset=utf-8"))
        stub.on(ShopAPI.order(id: 2), respond: problemStub(status: 409, #"{"sku":"A1"}"#, contentType: "text/html"))
        let shop = DomainClient(client: makeClient(stub), factory: ShopErrors())
        await #expect(throws: ShopError.outOfStock(sku: "A1")) { try await shop.send(ShopAPI.order(id: 1)) }
        await #expect(throws: ShopError.outOfStock(sku: "?")) { try await shop.send(ShopAPI.order(id: 2)) }
    }

    @Test func standardMembersOfTheWrongTypeAreIgnored() throws {
        let problem = try JSONDecoder().decode(ProblemDetails.self, from: Data(#"{"type": 7, "status": "403", "title": "t"}"#.utf8))
        #expect(problem.type == "about:blank")
        #expect(problem.status == nil)
        #expect(problem.title == "t")
        let back = try JSONDecoder().decode(ProblemDetails.self, from: JSONEncoder().encode(problem))
        #expect(back == problem)
    }

    @Test func customErrorBody() async {
        let stub = StubTransport()
        stub.on(.post, "/charges", respond: .json(#"{"code":"card_declined","message":"The card was declined."}"#, status: 402))
        stub.on(.post, "/refunds", respond: .status(500))
        let billing = DomainClient(client: makeClient(stub), factory: BillingErrors())
        do {
            try await billing.send(Request<Void>.post("/charges", body: .json(["amount": 5])))
            Issue.record("expected a failure")
        } catch {
            #expect(error == .rejected(code: "card_declined", message: "The card was declined."))
        }
        await #expect(throws: BillingError.unexpected(.server(status: 500))) {
            try await billing.send(Request<Void>.post("/refunds"))
        }
    }

    @Test func decodingFailureBodyIsNotTakenForAnErrorBody() async {
        let stub = StubTransport()
        stub.on(ShopAPI.order(id: 1), respond: .json(#"{"title":"not an order"}"#))
        let factory = ShopErrors()
        let shop = DomainClient(client: makeClient(stub), factory: factory)
        await #expect(throws: ShopError.other(.decoding)) { _ = try await shop.model(ShopAPI.order(id: 1), as: Order.self) }
        #expect(factory.seen.all.first?.1 == nil)
    }

    @Test(arguments: TransportFailure.Kind.allCases)
    func transportFailureMapping(kind: TransportFailure.Kind) async {
        let stub = StubTransport(fallback: .failure(.transport(TransportFailure(kind, "simulated"))))
        let factory = ShopErrors()
        let shop = DomainClient(client: makeClient(stub), factory: factory)
        let expected = FailureCategory.transport(kind)
        do {
            try await shop.send(ShopAPI.order(id: 1))
            Issue.record("expected a failure")
        } catch {
            let connectivity: Set<TransportFailure.Kind> = [.notConnected, .cannotConnect, .dns]
            #expect(error == (connectivity.contains(kind) ? .offline : .other(expected)))
        }
        #expect(factory.seen.all.map(\.0) == [expected])
    }

    @Test(arguments: [
        (401, FailureCategory.unauthorized), (403, .forbidden), (404, .notFound), (400, .client(status: 400)),
        (408, .client(status: 408)), (429, .client(status: 429)), (500, .server(status: 500)),
        (503, .server(status: 503)), (304, .unacceptableStatus(304)),
    ])
    func statusTable(status: Int, expected: FailureCategory) async {
        let stub = StubTransport(fallback: .status(status))
        let factory = ShopErrors()
        let shop = DomainClient(client: makeClient(stub), factory: factory)
        _ = try? await shop.send(ShopAPI.order(id: 1))
        #expect(factory.seen.all.map(\.0) == [expected])
    }

    @Test func cancellationReachesTheFactory() async {
        let stub = StubTransport(fallback: StubTransport.Stub(delay: .seconds(600)))
        let shop = DomainClient(client: makeClient(stub), factory: ShopErrors())
        let task = Task { () async throws(ShopError) in try await shop.send(ShopAPI.order(id: 1)) }
        task.cancel()
        let result = await task.result
        #expect(throws: ShopError.cancelled) { try result.get() }
    }
}
