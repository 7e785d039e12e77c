import ArgumentParser

/// `--json`: shared by every command, the `sync keys` commands included, which have no queue.
///
/// Its own group so that a command may declare it without `--db`: swift-argument-parser
/// decodes a group once, in the first command of `sync … COMMAND` that declares it (`Sync`,
/// through `QueueOptions`), and hands that value to every later command that declares it too.
/// So `--json` works before or after the command name.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print one JSON document (an object, or an array for lists) and nothing else on standard output.")
    var json = false
}
