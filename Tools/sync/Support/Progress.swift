import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A one-line progress bar on standard error when it is a terminal; nothing otherwise.
final class ProgressBar: @unchecked Sendable {
    // Touched only from the task that owns the bar.
    private let total: Int
    private var done = 0
    private var failed = 0
    private var dead = 0
    private let enabled: Bool
    private var lastDraw = ContinuousClock.now - .seconds(1)

    init(total: Int, enabled: Bool = isatty(STDERR_FILENO) == 1) {
        self.total = max(total, 1)
        self.enabled = enabled
    }

    func delivered() { done += 1; draw() }
    func retried() { failed += 1; draw() }
    func deadLettered() { dead += 1; done += 1; draw() }

    private func draw(force: Bool = false) {
        guard enabled else { return }
        let now = ContinuousClock.now
        guard force || now - lastDraw > .milliseconds(50) else { return }
        lastDraw = now
        let width = 30
        let fraction = min(1, Double(done) / Double(total))
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let line = "\r\(bar) \(done)/\(total) sent, \(failed) to retry, \(dead) dead"
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Draws the final state and ends the line.
    func finish() {
        guard enabled else { return }
        draw(force: true)
        FileHandle.standardError.write(Data("\n".utf8))
    }
}
