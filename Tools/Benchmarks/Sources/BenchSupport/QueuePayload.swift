import Foundation

/// The request every queue benchmark enqueues, drains or posts raw: its headers and a ~130-byte
/// JSON body that differs per entry.
public enum QueuePayload {
    public static let headers: [(name: String, value: String)] = [("Content-Type", "application/json"), ("X-Client", "courier-bench")]

    public static func body(_ index: Int) -> Data {
        Data(#"{"event":"click","n":\#(index),"at":"2026-11-23T00:00:00Z","payload":"\#(String(repeating: "x", count: 64))"}"#.utf8)
    }
}
