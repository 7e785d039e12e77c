import Testing

/// The target exists to compile the docs' complete programs (see `Tools/doc-snippets`): the
/// build is the check. This test only looks at the list of programs; the programs themselves
/// are never called, since they would talk to real servers.
@Suite struct DocSnippetsTests {
    @Test("every ```swift program block of the docs is compiled here, under a name of its own")
    func everyProgramIsListedOnce() {
        #expect(!docSnippets.isEmpty)
        #expect(docSnippets.allSatisfy { $0.source == "README.md" || ($0.source.hasPrefix("Docs/") && $0.source.hasSuffix(".md")) })
        #expect(Set(docSnippets.map(\.name)).count == docSnippets.count)
    }
}
