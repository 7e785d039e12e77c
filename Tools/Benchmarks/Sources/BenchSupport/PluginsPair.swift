import HTTPCore
import Logging
import Plugins

/// The plugins pair's stack: five plugins and two interceptors, as an application might run.
public enum PluginsPair {
    /// `configuration` with `HeadersPlugin`, `UserAgentPlugin`, `RequestIDPlugin`,
    /// `LoggingPlugin` (at a level that drops its lines) and `MetricsPlugin` (the default
    /// backend), and `AuthenticationInterceptor` (a bearer credential) and `TracingInterceptor`
    /// (the default tracer).
    public static func plugged(_ configuration: ClientConfiguration) -> ClientConfiguration {
        var quiet = Logger(label: "bench")
        quiet.logLevel = .warning
        var plugged = configuration
        plugged.plugins = [
            HeadersPlugin([.accept: "application/json"]),
            UserAgentPlugin(),
            RequestIDPlugin(),
            LoggingPlugin(logger: quiet),
            MetricsPlugin(),
        ]
        plugged.interceptors = [
            AuthenticationInterceptor(authenticator: BearerAuthenticator { $0 }, credential: BearerCredential(accessToken: "token")),
            TracingInterceptor(),
        ]
        return plugged
    }
}
