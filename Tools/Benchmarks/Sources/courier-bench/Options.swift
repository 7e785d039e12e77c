import Foundation

/// Command-line options: `--requests N` per variant and round, `--rounds R`, `--concurrency C`,
/// `--warmup W`.
struct Options {
    var requests = 2_500
    var rounds = 8
    var concurrency = 16
    var warmup = 2_000

    init(arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            let value = iterator.next().flatMap(Int.init)
            switch (flag, value) {
            case ("--requests", let v?): requests = v
            case ("--rounds", let v?): rounds = v
            case ("--concurrency", let v?): concurrency = v
            case ("--warmup", let v?): warmup = v
            default:
                FileHandle.standardError.write(Data("usage: courier-bench [--requests N] [--rounds R] [--concurrency C] [--warmup W]; or --goals [same options; an even --rounds of at least 6], --sealed [the same], --queue, --postgres (needs COURIER_BENCH_POSTGRES_URL), --multipart, --overhead (Docs/Benchmarks.md)\n".utf8))
                exit(2)
            }
        }
    }
}
