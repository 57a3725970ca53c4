import VPNStatSystem
import VPNStatTLS

/// The web configuration of `record --listen` (`--web-config FILE`): the file Prometheus's
/// exporters read with `--web.config.file` (exporter-toolkit's format), so the one a
/// node_exporter on the host uses works unchanged. TLS, client certificates, basic auth and
/// response headers; a field vpnstat does not support is refused by name, never ignored.
package struct WebConfiguration: Sendable, Equatable {
  /// TLS, when the file gives a certificate and a key.
  package var tls: TLSServerContext.Settings?
  /// User → bcrypt hash; empty: no authentication.
  package var users: [String: String] = [:]
  /// Headers added to every response (exporter-toolkit's allowed set).
  package var headers: [(name: String, value: String)] = []

  package static func == (a: WebConfiguration, b: WebConfiguration) -> Bool {
    a.tls == b.tls && a.users == b.users
      && a.headers.map { "\($0.name): \($0.value)" }
        == b.headers.map {
          "\($0.name): \($0.value)"
        }
  }

  /// Why a web configuration is refused: the field and what is wrong with it.
  package struct Problem: Error, Equatable, CustomStringConvertible, Sendable {
    package var description: String
    init(_ description: String) { self.description = description }
  }

  /// Why a web configuration's file is not read: a file others could write (or a key others
  /// could read) is refused as the configuration file is, with 77.
  package enum LoadFailure: Error, Sendable {
    case untrusted(UntrustedFile)
    case invalid(path: String, Problem)
    case unreadable(path: String, String)
  }

  /// Reads, checks and parses the file at `path`, as `record --web-config` does: it and every
  /// file it names must be a regular file no one but root (or this user) could have written, in
  /// directories the same, and the TLS key readable by its owner alone.
  package static func load(_ path: String) throws(LoadFailure) -> WebConfiguration {
    let bytes: [UInt8]
    do {
      let fd = try FileDescriptor.openRegularFile(SystemPath(path))
      defer { fd.close() }
      if let problem = DirectoryTrust.fileProblem(path) {
        throw LoadFailure.untrusted(UntrustedFile(role: "web configuration", path: path, problem: problem))
      }
      bytes = try SmallFile.read(fd, limit: 1 << 20)
    } catch let failure as LoadFailure {
      throw failure
    } catch let error as NotARegularFile {
      throw .untrusted(UntrustedFile(role: "web configuration", path: path, problem: error.description))
    } catch {
      throw .unreadable(path: path, "\(error)")
    }
    let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
    let configuration: WebConfiguration
    do {
      configuration = try parse(String(decoding: bytes, as: UTF8.self), directory: directory.isEmpty ? "/" : directory)
    } catch {
      throw .invalid(path: path, error)
    }
    if let tls = configuration.tls {
      for (role, file) in [("TLS certificate", tls.certificateFile), ("TLS key", tls.keyFile)]
        + (tls.clientCAFile.map { [("client CA", $0)] } ?? [])
      {
        guard FileSystem.exists(file) else { throw .unreadable(path: file, "no such file (\(role))") }
        if let problem = DirectoryTrust.fileProblem(file) {
          throw .untrusted(UntrustedFile(role: role, path: file, problem: problem))
        }
      }
      if let status = FileStatus.of(tls.keyFile), status.permissions & 0o077 != 0 {
        throw .untrusted(
          UntrustedFile(
            role: "TLS key", path: tls.keyFile,
            problem: "\(tls.keyFile) is readable by others (mode \(String(status.permissions, radix: 8))); chmod 600 it"
          ))
      }
    }
    return configuration
  }

  /// The headers exporter-toolkit lets a configuration set.
  static let allowedHeaders = [
    "Strict-Transport-Security", "X-Content-Type-Options", "X-Frame-Options", "X-XSS-Protection",
    "Content-Security-Policy",
  ]

  /// Parses the file's text; `directory` is the file's, which relative paths are taken from.
  package static func parse(_ text: String, directory: String) throws(Problem) -> WebConfiguration {
    let root: YAMLNode
    do { root = try YAMLNode.parse(text) } catch { throw Problem(error.description) }
    var configuration = WebConfiguration()
    guard case .map(let top) = root else {
      if case .scalar(let value) = root, value.isEmpty { return configuration }
      throw Problem("the file is not a mapping of fields")
    }
    for (key, value) in top {
      switch key {
      case "tls_server_config": configuration.tls = try tls(value, directory: directory)
      case "http_server_config": configuration.headers = try headers(value)
      case "basic_auth_users":
        for (user, hash) in try map(value, "basic_auth_users") {
          guard case .scalar(let hash) = hash, !hash.isEmpty else {
            throw Problem("basic_auth_users: \(user): expected a bcrypt hash")
          }
          guard hash.hasPrefix("$2") else {
            throw Problem("basic_auth_users: \(user): not a bcrypt hash ($2a$, $2b$ or $2y$)")
          }
          configuration.users[user] = hash
        }
      case "rate_limit":
        throw Problem("rate_limit is not supported by vpnstat (its server bounds every client itself)")
      default: throw Problem("unknown field \(key)")
      }
    }
    return configuration
  }

  private static func map(_ node: YAMLNode, _ field: String) throws(Problem) -> [(String, YAMLNode)] {
    switch node {
    case .map(let entries): return entries
    case .scalar(let value) where value.isEmpty || value == "null" || value == "~": return []
    default: throw Problem("\(field): expected a mapping")
    }
  }

  private static func scalar(_ node: YAMLNode, _ field: String) throws(Problem) -> String {
    guard case .scalar(let value) = node else { throw Problem("\(field): expected a value") }
    return value
  }

  private static func tls(_ node: YAMLNode, directory: String) throws(Problem) -> TLSServerContext.Settings? {
    var certificate = ""
    var key = ""
    var ca: String?
    var authentication = TLSServerContext.ClientAuthentication.none
    var minimum = TLSServerContext.Version.tls12
    var maximum: TLSServerContext.Version?
    func path(_ value: String) -> String {
      value.isEmpty || value.hasPrefix("/") ? value : directory + "/" + value
    }
    for (field, value) in try map(node, "tls_server_config") {
      let name = "tls_server_config: \(field)"
      switch field {
      case "cert_file": certificate = path(try scalar(value, name))
      case "key_file": key = path(try scalar(value, name))
      case "client_ca_file":
        let file = try scalar(value, name)
        ca = file.isEmpty ? nil : path(file)
      case "client_auth_type":
        let text = try scalar(value, name)
        guard let parsed = TLSServerContext.ClientAuthentication(rawValue: text.isEmpty ? "NoClientCert" : text) else {
          throw Problem(
            "\(name): '\(text)' is none of \(TLSServerContext.ClientAuthentication.allCases.map(\.rawValue).joined(separator: ", "))"
          )
        }
        authentication = parsed
      case "min_version", "max_version":
        let text = try scalar(value, name)
        guard let version = TLSServerContext.Version(rawValue: text) else {
          throw Problem("\(name): '\(text)' is none of TLS10, TLS11, TLS12, TLS13")
        }
        if field == "min_version" { minimum = version } else { maximum = version }
      case "cipher_suites", "curve_preferences", "prefer_server_cipher_suites", "client_allowed_sans", "cert", "key",
        "client_ca":
        throw Problem("\(name) is not supported by vpnstat (OpenSSL's defaults choose ciphers and curves; files only)")
      default: throw Problem("unknown field \(name)")
      }
    }
    if certificate.isEmpty && key.isEmpty && ca == nil { return nil }
    guard !certificate.isEmpty, !key.isEmpty else {
      throw Problem("tls_server_config: cert_file and key_file go together")
    }
    if let maximum, maximum < minimum {
      throw Problem("tls_server_config: max_version \(maximum.rawValue) is below min_version \(minimum.rawValue)")
    }
    if authentication == .requireAndVerify || authentication == .verifyIfGiven, ca == nil {
      throw Problem("tls_server_config: client_auth_type \(authentication.rawValue) needs client_ca_file")
    }
    var settings = TLSServerContext.Settings(certificateFile: certificate, keyFile: key)
    settings.clientCAFile = ca
    settings.clientAuthentication = authentication
    settings.minimumVersion = minimum
    settings.maximumVersion = maximum
    return settings
  }

  private static func headers(_ node: YAMLNode) throws(Problem) -> [(name: String, value: String)] {
    var headers: [(name: String, value: String)] = []
    for (field, value) in try map(node, "http_server_config") {
      switch field {
      case "http2":
        // HTTP/2 may be offered; vpnstat speaks HTTP/1.1, which every scraper speaks too.
        _ = try scalar(value, "http_server_config: http2")
      case "headers":
        for (name, text) in try map(value, "http_server_config: headers") {
          guard let allowed = allowedHeaders.first(where: { $0.lowercased() == name.lowercased() }) else {
            throw Problem(
              "http_server_config: headers: \(name) may not be set (only \(allowedHeaders.joined(separator: ", ")))")
          }
          let value = try scalar(text, "http_server_config: headers: \(name)")
          guard value.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else {
            throw Problem("http_server_config: headers: \(name): a control character")
          }
          headers.append((allowed, value))
        }
      default: throw Problem("unknown field http_server_config: \(field)")
      }
    }
    return headers
  }
}
