/// The content type for a file name's extension, from a built-in table of common types.
public enum MediaTypes {
    /// `application/octet-stream`, for anything not in the table.
    public static let fallback = "application/octet-stream"

    private static let table: [String: String] = [
        "txt": "text/plain", "text": "text/plain", "csv": "text/csv", "tsv": "text/tab-separated-values",
        "html": "text/html", "htm": "text/html", "css": "text/css", "md": "text/markdown",
        "xml": "application/xml", "json": "application/json", "js": "text/javascript", "mjs": "text/javascript",
        "yaml": "application/yaml", "yml": "application/yaml", "pdf": "application/pdf",
        "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip", "tar": "application/x-tar",
        "bz2": "application/x-bzip2", "xz": "application/x-xz", "7z": "application/x-7z-compressed",
        "wasm": "application/wasm", "bin": "application/octet-stream",
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "svg": "image/svg+xml", "heic": "image/heic", "heif": "image/heif", "bmp": "image/bmp", "ico": "image/vnd.microsoft.icon",
        "tif": "image/tiff", "tiff": "image/tiff", "avif": "image/avif",
        "mp3": "audio/mpeg", "wav": "audio/wav", "ogg": "audio/ogg", "m4a": "audio/mp4", "flac": "audio/flac",
        "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "webm": "video/webm", "mkv": "video/x-matroska",
        "doc": "application/msword", "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls": "application/vnd.ms-excel", "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt": "application/vnd.ms-powerpoint", "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt": "application/vnd.oasis.opendocument.text", "rtf": "application/rtf", "epub": "application/epub+zip",
        "sqlite": "application/vnd.sqlite3", "db": "application/vnd.sqlite3",
    ]

    /// The content type for `fileName`'s extension (case-insensitive), or ``fallback``.
    public static func contentType(forFileName fileName: String) -> String {
        guard let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex else { return fallback }
        let ext = fileName[fileName.index(after: dot)...].lowercased()
        return table[ext] ?? fallback
    }
}
