import Foundation
import QueueModel
import QueueTestSupport
import Testing

/// The queue's model check: random programs over the storage contract, run on every store
/// beside the reference model (Tests/QueueModel), step by step; and a share through
/// `OfflineQueue` itself with several drainers at once. `Tools/test` runs a bounded share of
/// both here (about half a minute on this machine, alone); `Tools/model-check` runs as many
/// steps as asked, on the stores asked, from a seed (Docs/ModelCheck.md).
@Suite("Model check: every store against the reference model")
struct ModelCheckTests {
    /// Steps per store in a `Tools/test` run, unless `COURIER_MODEL_STEPS` says otherwise: a
    /// PostgreSQL step costs about twenty of the memory store's.
    static func defaults(_ kind: StoreKind) -> ModelCheck.Options {
        ModelCheck.Options(steps: [.memory: 5_000, .sqlite: 1_500, .postgres: 600][kind] ?? 600, jobs: 2)
    }

    @Test("random programs (enqueues, drains by several drainers, every outcome, deaths, clock steps, reboots, operators) agree with the model", arguments: StoreKind.allCases)
    func programs(_ kind: StoreKind) async throws {
        let options = ModelCheck.Options.fromEnvironment(Self.defaults(kind))
        guard options.kinds.contains(kind) else { return }
        if kind == .postgres && TestStore.postgresURL == nil { throw TestStoreError.noCluster }
        let report = await ModelCheck.run(kind, options)
        print("model check, \(kind.rawValue): \(report)")
        #expect(report.found.isEmpty, "\(report)")
    }

    @Test("through OfflineQueue, drainers draining at once: the origin never sees two of a group at once nor a child before its parent, nothing is lost, each entry ends as its answers allow", arguments: StoreKind.allCases)
    func engine(_ kind: StoreKind) async throws {
        let options = ModelCheck.Options.fromEnvironment(Self.defaults(kind))
        guard options.kinds.contains(kind) else { return }
        if kind == .postgres && TestStore.postgresURL == nil { throw TestStoreError.noCluster }
        let report = await EngineCheck.run(kind, steps: options.steps / 3, seed: options.seed, length: 40, drainers: options.drainers)
        print("model check, \(kind.rawValue): \(report)")
        #expect(report.found.isEmpty, "\(report)")
    }
}
