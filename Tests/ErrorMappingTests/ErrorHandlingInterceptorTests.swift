import CourierTesting
import ErrorMapping
import Foundation
import HTTPCore
import HTTPTypes
import Testing

@Suite struct ErrorHandlingInterceptorTests {
    @Test func retriesOnceThenSucceeds() async throws {
        let stub = StubTransport()
        stub.on(.post, "/orders", respond: .status(409), try .json(Order(id: 1, sku: "A1")))
        let delays = LockedList<Duration>()
        let retries = LockedList<Int>()
        let handler = ErrorHandlingInterceptor(maxRetries: 1, clock: recordingClock(delays)) { outcome, _, retry, _ in
            retries.append(retry)
            return outcome.status?.code == 409 ? .retry(after: .seconds(5)) : .proceed
        }
        let client = makeClient(stub, interceptors: [handler])
        let order: Order = try await client.model(ShopAPI.place(Order(id: 1, sku: "A1")))
        #expect(order == Order(id: 1, sku: "A1"))
        #expect(stub.recordedRequests.count == 2)
        let bodies = try stub.recordedRequests.map { try JSONDecoder().decode(Order.self, from: #require($0.body)) }
        #expect(bodies == Array(repeating: Order(id: 1, sku: "A1"), count: 2), "the body is replayed on the retry")
        #expect(retries.all == [0, 1])
        #expect(delays.all == [.seconds(5)])
    }

    @Test func retriesAreBounded() async {
        let stub = StubTransport(fallback: .status(409))
        let handler = ErrorHandlingInterceptor(maxRetries: 2, clock: recordingClock(LockedList())) { _, _, _, _ in .retry() }
        let shop = DomainClient(client: makeClient(stub, interceptors: [handler]), factory: ShopErrors())
        await #expect(throws: ShopError.outOfStock(sku: "?")) { try await shop.send(ShopAPI.order(id: 1)) }
        #expect(stub.recordedRequests.count == 3)
    }

    @Test func convertsA418ToADomainError() async {
        let stub = StubTransport(fallback: .status(418))
        let handler = ErrorHandlingInterceptor { outcome, _, _, _ in
            outcome.status?.code == 418 ? .fail(ShopError.teapot) : .proceed
        }
        let factory = ShopErrors()
        let shop = DomainClient(client: makeClient(stub, interceptors: [handler]), factory: factory)
        await #expect(throws: ShopError.teapot) { try await shop.send(ShopAPI.order(id: 1)) }
        #expect(factory.seen.all.isEmpty, "a domain error from the handler does not go through the factory")

        do {
            try await makeClient(stub, interceptors: [handler]).send(ShopAPI.order(id: 1))
            Issue.record("expected a failure")
        } catch {
            guard case .underlying(let inner) = error else { Issue.record("got \(error)"); return }
            #expect(inner as? ShopError == .teapot)
        }
    }

    @Test func handlerSeesAnExcerptAndTheWholeBodyStillArrives() async throws {
        let long = String(repeating: "x", count: 5_000)
        let stub = StubTransport()
        stub.on(ShopAPI.order(id: 1), respond: problemStub(status: 409, #"{"sku":"\#(long)"}"#))
        let excerpts = LockedList<Data?>()
        let handler = ErrorHandlingInterceptor(bodyExcerptLimit: 10) { outcome, _, _, _ in
            if case .response(_, let body) = outcome { excerpts.append(body) }
            return .proceed
        }
        let shop = DomainClient(client: makeClient(stub, interceptors: [handler]), factory: ShopErrors())
        await #expect(throws: ShopError.outOfStock(sku: long)) { try await shop.send(ShopAPI.order(id: 1)) }
        #expect(excerpts.all == [Data(#"{"sku":"xx"#.utf8)])
    }

    @Test func successBodiesAreNotBuffered() async throws {
        let stub = StubTransport()
        stub.on(ShopAPI.order(id: 1), respond: try .json(Order(id: 1, sku: "A1")))
        let outcomes = LockedList<ExchangeOutcome>()
        let handler = ErrorHandlingInterceptor { outcome, _, _, _ in
            outcomes.append(outcome)
            return .proceed
        }
        let order: Order = try await makeClient(stub, interceptors: [handler]).model(ShopAPI.order(id: 1))
        #expect(order.sku == "A1")
        guard case .response(let head, let body)? = outcomes.all.first else { Issue.record("no outcome"); return }
        #expect(head.status == .ok)
        #expect(body == nil)
    }

    @Test func transportFailureRetriedThenSucceeds() async throws {
        let stub = StubTransport()
        stub.on(ShopAPI.order(id: 1), respond: .failure(.transport(TransportFailure(.timedOut, "slow"))), try .json(Order(id: 1, sku: "A1")))
        let seen = LockedList<FailureCategory>()
        let handler = ErrorHandlingInterceptor(clock: recordingClock(LockedList())) { outcome, _, _, _ in
            guard case .failure(let error) = outcome else { return .proceed }
            seen.append(FailureCategory(error))
            return .retry()
        }
        let shop = DomainClient(client: makeClient(stub, interceptors: [handler]), factory: ShopErrors())
        #expect(try await shop.model(ShopAPI.order(id: 1), as: Order.self).id == 1)
        #expect(seen.all == [.transport(.timedOut)])
    }

    @Test func transportFailureConvertedToDomainError() async {
        let stub = StubTransport(fallback: .failure(.transport(TransportFailure(.tls, "untrusted certificate"))))
        let handler = ErrorHandlingInterceptor { outcome, _, _, _ in
            if case .failure(.transport(let failure)) = outcome, failure.kind == .tls { return .fail(ShopError.offline) }
            return .proceed
        }
        let shop = DomainClient(client: makeClient(stub, interceptors: [handler]), factory: ShopErrors())
        await #expect(throws: ShopError.offline) { try await shop.send(ShopAPI.order(id: 1)) }
    }

    @Test func scopedHandlerLeavesOtherEndpointsAlone() async {
        let stub = StubTransport(fallback: .status(418))
        let handler = ErrorHandlingInterceptor(scope: "kitchen") { _, _, _, _ in .fail(ShopError.teapot) }
        let shop = DomainClient(client: makeClient(stub, interceptors: [handler]), factory: ShopErrors())
        await #expect(throws: ShopError.other(.client(status: 418))) { try await shop.send(ShopAPI.order(id: 1)) }
    }
}
