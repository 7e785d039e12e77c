import Foundation
import OfflineQueueCore

/// The overview's chart of the last hour, per minute: deliveries and failures as stacked bars
/// (solid, and hatched), the backlog as lines (pending solid, due dashed), drawn on the server
/// as SVG. No script and no style attribute (the Content-Security-Policy allows neither): only
/// SVG's own attributes. Every mark has a word too (the legend, each minute's `<title>`), so
/// nothing depends on colour.
///
/// In the page's JSON twin it is the minutes themselves (`activity`: one object per minute,
/// `pending` and `due` absent where nobody counted them).
struct ActivityChart: Encodable, Sendable {
    struct Minute: Encodable, Sendable {
        /// When the minute began, as the pages write times (`2026-11-30 06:07:00Z`).
        var minute: String
        var delivered: Int
        var failed: Int
        var pending: Int?
        var due: Int?
    }

    var minutes: [Minute]
    /// The SVG, for the HTML page only (`{{{activity.svg}}}`): made of numbers and fixed words.
    var svg: String
    /// Sums over the hour, for the text beside the chart.
    var delivered: Int
    var failed: Int

    init(_ activity: [ActivityMinute]) {
        minutes = activity.map { Minute(minute: wallTime($0.minute), delivered: $0.delivered, failed: $0.failed, pending: $0.pending, due: $0.due) }
        delivered = activity.reduce(0) { $0 + $1.delivered }
        failed = activity.reduce(0) { $0 + $1.failed }
        svg = Self.draw(activity)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(minutes)
    }

    // The drawing: a 640 × 250 view box that scales to the page's width.
    private static let left = 48.0, right = 592.0, top = 16.0, bottom = 176.0

    static func draw(_ activity: [ActivityMinute]) -> String {
        let count = max(activity.count, 1)
        let slot = (right - left) / Double(count)
        let attempts = max(activity.map { $0.delivered + $0.failed }.max() ?? 0, 1)
        let backlog = max(activity.compactMap { m in [m.pending, m.due].compactMap { $0 }.max() }.max() ?? 0, 1)
        let height = bottom - top
        func y(_ value: Int, of scale: Int) -> Double { bottom - height * Double(value) / Double(scale) }
        func n(_ value: Double) -> String { String(format: "%.1f", value) }

        var svg = """
        <svg class="activity" viewBox="0 0 640 250" role="img" aria-labelledby="activity-title activity-desc" xmlns="http://www.w3.org/2000/svg">
        <title id="activity-title">The last hour, per minute</title>
        <desc id="activity-desc">Bars: attempts per minute, delivered solid and failed hatched, on the left scale (up to \(attempts)). Lines: the backlog, pending solid and due dashed, on the right scale (up to \(backlog)).</desc>
        <defs><pattern id="activity-hatch" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="4" height="4" fill="#fff"/><line x1="0" y1="0" x2="0" y2="4" stroke="#b00" stroke-width="2"/></pattern></defs>
        <g class="axes" stroke="#888" stroke-width="1"><line x1="\(n(left))" y1="\(n(bottom))" x2="\(n(right))" y2="\(n(bottom))"/><line x1="\(n(left))" y1="\(n(top))" x2="\(n(left))" y2="\(n(bottom))"/><line x1="\(n(right))" y1="\(n(top))" x2="\(n(right))" y2="\(n(bottom))"/></g>
        <g class="scale" font-size="11" fill="#333"><text x="\(n(left - 4))" y="\(n(top + 4))" text-anchor="end">\(attempts)</text><text x="\(n(left - 4))" y="\(n(bottom))" text-anchor="end">0</text><text x="\(n(right + 4))" y="\(n(top + 4))">\(backlog)</text><text x="\(n(right + 4))" y="\(n(bottom))">0</text></g>

        """
        // A group per minute: its bars, and a title that says every number of the minute.
        for (index, minute) in activity.enumerated() {
            let x = left + Double(index) * slot
            let width = max(slot - 1, 1)
            var title = "\(clockTime(minute.minute)): \(minute.delivered) delivered, \(minute.failed) failed"
            if let pending = minute.pending { title += ", \(pending) pending" }
            if let due = minute.due { title += ", \(due) due" }
            svg += "<g class=\"minute\" data-delivered=\"\(minute.delivered)\" data-failed=\"\(minute.failed)\"><title>\(title)</title>"
            svg += "<rect x=\"\(n(x))\" y=\"\(n(top))\" width=\"\(n(slot))\" height=\"\(n(height))\" fill=\"transparent\"/>"
            if minute.delivered > 0 {
                let y0 = y(minute.delivered, of: attempts)
                svg += "<rect class=\"delivered\" x=\"\(n(x))\" y=\"\(n(y0))\" width=\"\(n(width))\" height=\"\(n(bottom - y0))\" fill=\"#070\"/>"
            }
            if minute.failed > 0 {
                let base = y(minute.delivered, of: attempts)
                let y1 = y(minute.delivered + minute.failed, of: attempts)
                svg += "<rect class=\"failed\" x=\"\(n(x))\" y=\"\(n(y1))\" width=\"\(n(width))\" height=\"\(n(base - y1))\" fill=\"url(#activity-hatch)\" stroke=\"#b00\" stroke-width=\"0.5\"/>"
            }
            svg += "</g>\n"
        }
        // The backlog's lines, broken where a minute has no count.
        for (key, stroke, dash) in [(\ActivityMinute.pending, "#225", ""), (\ActivityMinute.due, "#a60", " stroke-dasharray=\"5 3\"")] {
            var runs: [[String]] = [[]]
            for (index, minute) in activity.enumerated() {
                if let value = minute[keyPath: key] {
                    runs[runs.count - 1].append("\(n(left + (Double(index) + 0.5) * slot)),\(n(y(value, of: backlog)))")
                } else if !runs[runs.count - 1].isEmpty {
                    runs.append([])
                }
            }
            let name = key == \ActivityMinute.pending ? "pending" : "due"
            for run in runs where !run.isEmpty {
                let points = run.count == 1 ? [run[0], run[0]] : run
                svg += "<polyline class=\"\(name)\" points=\"\(points.joined(separator: " "))\" fill=\"none\" stroke=\"\(stroke)\" stroke-width=\"2\"\(dash)\(run.count == 1 ? " stroke-linecap=\"round\"" : "")/>\n"
            }
        }
        // The time axis: the hour's first minute, its middle and now; then the legend.
        if let first = activity.first, let last = activity.last {
            let middle = activity[activity.count / 2]
            svg += """
            <g class="times" font-size="11" fill="#333"><text x="\(n(left))" y="\(n(bottom + 14))">\(clockTime(first.minute))</text><text x="\(n((left + right) / 2))" y="\(n(bottom + 14))" text-anchor="middle">\(clockTime(middle.minute))</text><text x="\(n(right))" y="\(n(bottom + 14))" text-anchor="end">\(clockTime(last.minute)) UTC</text></g>

            """
        }
        svg += """
        <g class="legend" font-size="12" fill="#222"><rect x="48" y="212" width="12" height="12" fill="#070"/><text x="64" y="222">delivered</text><rect x="140" y="212" width="12" height="12" fill="url(#activity-hatch)" stroke="#b00"/><text x="156" y="222">failed</text><line x1="220" y1="218" x2="244" y2="218" stroke="#225" stroke-width="2"/><text x="248" y="222">pending</text><line x1="320" y1="218" x2="344" y2="218" stroke="#a60" stroke-width="2" stroke-dasharray="5 3"/><text x="348" y="222">due</text><text x="48" y="244">bars: attempts a minute (left scale); lines: the backlog (right scale)</text></g>
        </svg>
        """
        return svg
    }

    /// `HH:MM` in UTC.
    static func clockTime(_ date: Date) -> String {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let minutes = ((seconds / 60) % 1_440 + 1_440) % 1_440
        return String(format: "%02d:%02d", minutes / 60, minutes % 60)
    }
}
