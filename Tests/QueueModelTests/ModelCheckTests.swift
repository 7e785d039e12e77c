import Foundation
import QueueModel
import QueueTestSupport
import Testing

/// The queue's model check: random programs over the storage contract, run on every store
/// beside the reference model (Tests/QueueModel), step by step. `Tools/test` runs a bounded
/// share of it here; `Tools/model-check` runs as many steps as asked, on the stores asked, from
/// a seed (Docs/ModelCheck.md).
@Suite("Model check: every store against the reference model")
struct ModelCheckTests {
    /// Steps per store in a `Tools/test` run, unless `COURIER_MODEL_STEPS` says otherwise.
    static let defaults = ModelCheck.Options(steps: 1_500)

    @Test("random programs (enqueues, drains by several drainers, every outcome, deaths, clock steps, reboots, operators) agree with the model", arguments: StoreKind.allCases)
    func programs(_ kind: StoreKind) async throws {
        let options = ModelCheck.Options.fromEnvironment(Self.defaults)
        guard options.kinds.contains(kind) else { return }
        if kind == .postgres && TestStore.postgresURL == nil { throw TestStoreError.noCluster }
        let report = await ModelCheck.run(kind, options)
        print("model check, \(kind.rawValue): \(report)")
        #expect(report.found.isEmpty, "\(report)")
    }
}
