/// The version `sync --version` prints, and the Debian package's upstream version
/// (Tools/package): raised with each release.
let syncVersion = "0.9.0"
