import ArgumentParser
import Foundation
import OfflineQueue

/// Which origins each header template may be sent to: shared by `drain` and `run`, the
/// commands that send. Whoever can enqueue names the URL; only the sending process decides
/// where its secrets may go.
struct SecretOptions: ParsableArguments {
    @Option(name: .customLong("allow-secret"), help: ArgumentHelp(
        "Let the template NAME (${env:NAME} or ${credential:NAME}) resolve for ORIGIN, e.g. API_TOKEN=https://api.example.com. Repeatable; also $SYNC_ALLOW_SECRETS, comma-separated. http only on loopback.",
        valueName: "NAME=ORIGIN"
    ))
    var allowSecret: [String] = []

    /// The templates of the process: its environment and credentials, allowed per origin.
    func templates(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> HeaderTemplates {
        var templates = HeaderTemplates()
        let fromEnvironment = (environment["SYNC_ALLOW_SECRETS"] ?? "").split(separator: ",").map(String.init)
        do {
            try templates.allow(fromEnvironment + allowSecret)
        } catch {
            throw ValidationError("\(error)")
        }
        return templates
    }

    func validate() throws {
        _ = try templates()
    }
}
