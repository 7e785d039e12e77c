import Foundation
import HTTPCore

/// A child that takes values from its parents' kept responses (``ResponseReference``): the
/// values read and put in at each attempt, from what the parents' deliveries stored.
extension QueueDrainer {
    /// Puts the values of `entry`'s references into it (opened) and `body`. Returns `nil`
    /// when they are in, or the outcome that ends the attempt, unsent, with a reason naming the
    /// reference that does not resolve.
    ///
    /// - Throws: only what stops the drain: a store that fails, or a sealed response that does
    ///   not open (``QueueError/Kind/keyUnavailable``, ``QueueError/Kind/sealBroken``).
    func takeValues(into entry: inout QueueEntry, body: inout RequestBody?, sealing: EntrySealing) async throws(QueueError) -> EntryLifecycle.AttemptOutcome? {
        let kept = try await store.keptResponses(of: entry.responseSources, now: configuration.clock.now())
        var responses: [EntryID: KeptResponse] = [:]
        for (id, parent) in kept { responses[id] = try sealing.open(parent.response, of: parent.entry) }
        let values = ResponseValues(responses: responses)
        do throws(ResponseValues.Unresolved) {
            entry.url = try values.url(entry.url)
            for index in entry.headers.indices {
                entry.headers[index].value = try values.header(entry.headers[index].value)
            }
            if entry.bodyTakesValues, let whole = body {
                let data: Data
                do { data = try await whole.collect(upTo: ResponseReference.maxBodyLength) } catch {
                    return .invalid(message: "its body could not be read to take values from responses: \(error)")
                }
                body = .data(try values.body(data))
            }
        } catch {
            return .invalid(message: error.description)
        }
        return nil
    }
}
