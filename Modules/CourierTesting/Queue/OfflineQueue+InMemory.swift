public import HTTPCore
public import OfflineQueueCore
public import Reachability

extension OfflineQueue {
    /// A queue whose entries live in `store`, in this process's memory: for tests of code that
    /// enqueues and drains, without a file or a database.
    ///
    /// ```swift
    /// import CourierTesting
    /// import OfflineQueue
    ///
    /// let stub = StubTransport(fallback: .status(200))
    /// let client = APIClient(baseURL: URL(string: "https://api.example.com")!, transport: stub)
    /// let queue = OfflineQueue.inMemory(client: client)
    /// _ = try await queue.enqueue(method: "POST", url: "https://api.example.com/events")
    /// let summary = try await queue.drain()   // summary.delivered == 1
    /// ```
    ///
    /// Queues opened over one ``MemoryQueueStore`` share its entries, each as a drainer of its
    /// own. The configuration's policy, concurrency, clock, headers and limits apply as for a
    /// file; what is about a file (`QueueConfiguration.path`, `QueueConfiguration.durability`,
    /// `QueueConfiguration.createIfMissing`, `QueueConfiguration.readOnly`) does not.
    /// `close()` ends this queue's hold on the entries it claimed; the entries stay in `store`.
    public static func inMemory(
        _ store: MemoryQueueStore = MemoryQueueStore(),
        configuration: QueueConfiguration = QueueConfiguration(path: "memory"),
        client: APIClient,
        monitor: (any NetworkMonitor)? = nil
    ) -> OfflineQueue {
        let session = MemoryQueueSession(store: store)
        return OfflineQueue(storage: session, location: session.location, configuration: configuration, client: client, monitor: monitor)
    }
}
