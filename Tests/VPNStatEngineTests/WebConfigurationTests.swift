import Foundation
import Testing

@testable import VPNStatHTTP
@testable import VPNStatTLS
@testable import VPNStatTestSupport

/// `record --web-config`: Prometheus's web configuration file as vpnstat reads it, basic auth
/// against its bcrypt hashes, and the headers it sets.
struct WebConfigurationTests {
  /// exporter-toolkit's documentation example (docs/web-configuration.md), with its comments.
  static let toolkitExample = """
    # Minimal TLS configuration example. Additionally, a certificate and a key file
    # are needed.
    tls_server_config:
      cert_file: server.crt
      key_file: server.key

    # Usernames and hashed passwords that have full access to the web
    # server via basic authentication. If empty, no basic authentication is
    # required. Passwords are hashed with bcrypt.
    basic_auth_users:
      alice: $2y$10$mDwo.lAisC94iLAyP81MCesa29IzH.YGy6nHaRrtPzu8e8J4oORxy
      bob: $2y$10$hLqFl9jSjoAAy95Z/zw8Ye8wkdMBM8c5Bn1ptYqP/AXyV0.oy0S8m
    """

  /// bcrypt (cost 10) of "s3cret pass", made with Python's crypt (libxcrypt).
  static let hash = "$2b$10$..lkAcbT1toohgCSCfJQTeKZlxYWrRzuYGK8crjbEv8NTbIyNiWkG"

  @Test("exporter-toolkit's own example: TLS files relative to the file's directory, two users")
  func toolkitExample() throws {
    let configuration = try WebConfiguration.parse(Self.toolkitExample, directory: "/etc/vpnstat")
    #expect(configuration.tls?.certificateFile == "/etc/vpnstat/server.crt")
    #expect(configuration.tls?.keyFile == "/etc/vpnstat/server.key")
    #expect(configuration.tls?.minimumVersion == .tls12)
    #expect(configuration.tls?.clientAuthentication == TLSServerContext.ClientAuthentication.none)
    #expect(configuration.users.keys.sorted() == ["alice", "bob"])
    #expect(configuration.users["alice"] == "$2y$10$mDwo.lAisC94iLAyP81MCesa29IzH.YGy6nHaRrtPzu8e8J4oORxy")
  }

  @Test("every supported field: client certificates, versions, quoted values, headers")
  func everyField() throws {
    let text = """
      tls_server_config:
        cert_file: "/etc/ssl/a.crt"
        key_file: '/etc/ssl/a.key'
        client_ca_file: /etc/ssl/ca.crt   # the fleet's CA
        client_auth_type: RequireAndVerifyClientCert
        min_version: TLS13
      http_server_config:
        http2: false
        headers:
          Strict-Transport-Security: max-age=31536000
          X-Frame-Options: deny
      basic_auth_users:
        "prometheus": \(Self.hash)
      """
    let configuration = try WebConfiguration.parse(text, directory: "/x")
    let tls = try #require(configuration.tls)
    #expect(tls.certificateFile == "/etc/ssl/a.crt" && tls.keyFile == "/etc/ssl/a.key")
    #expect(tls.clientCAFile == "/etc/ssl/ca.crt")
    #expect(tls.clientAuthentication == .requireAndVerify)
    #expect(tls.minimumVersion == .tls13)
    #expect(configuration.headers.map(\.name) == ["Strict-Transport-Security", "X-Frame-Options"])
    #expect(configuration.users["prometheus"] == Self.hash)
  }

  @Test(
    "what vpnstat does not support is refused by name, never ignored",
    arguments: [
      (
        "tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
        "cipher_suites"
      ),
      ("tls_server_config:\n  cert_file: a\n  key_file: b\n  curve_preferences:\n    - X25519\n", "curve_preferences"),
      ("tls_server_config:\n  cert_file: a\n  key_fle: b\n", "key_fle"),
      ("basic_auth_user:\n  a: $2y$x\n", "basic_auth_user"),
      ("http_server_config:\n  headers:\n    Server: vpnstat\n", "Server"),
      ("rate_limit:\n  interval: 1s\n", "rate_limit"),
      ("tls_server_config:\n  cert_file: a\n", "go together"),
      (
        "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n",
        "client_ca_file"
      ),
      ("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS14\n", "TLS14"),
      ("basic_auth_users:\n  a: plain-text\n", "bcrypt"),
      ("basic_auth_users: &users\n  a: b\n", "anchors"),
      ("tls_server_config: {cert_file: a}\n", "flow mappings"),
      ("basic_auth_users:\n  a: $2y$1\n  a: $2y$2\n", "twice"),
      ("basic_auth_users:\n\ta: $2y$1\n", "tab"),
    ])
  func refused(_ text: String, _ named: String) {
    #expect {
      _ = try WebConfiguration.parse(text, directory: "/x")
    } throws: { error in
      "\(error)".contains(named)
    }
  }

  @Test("an empty file (or only comments) asks for nothing: plain HTTP, no authentication")
  func empty() throws {
    #expect(try WebConfiguration.parse("", directory: "/") == WebConfiguration())
    #expect(try WebConfiguration.parse("# nothing\n---\n", directory: "/") == WebConfiguration())
  }

  @Test("basic auth: the right password passes; a wrong one, an unknown user, garbage and none do not")
  func basicAuthentication() {
    let access = HTTPAccess(users: ["prometheus": Self.hash])
    func basic(_ text: String) -> String { "Basic " + Data(text.utf8).base64EncodedString() }
    #expect(access.allows(basic("prometheus:s3cret pass")))
    #expect(!access.allows(basic("prometheus:s3cret pas")))
    #expect(!access.allows(basic("alice:s3cret pass")))
    #expect(!access.allows(nil))
    #expect(!access.allows("Bearer x"))
    #expect(!access.allows("Basic !!!"))
    #expect(HTTPAccess().allows(nil), "no users: no authentication")
    // A password with a colon: only the first colon separates the user.
    #expect(HTTPAccess.credentials(basic("u:a:b"))?.1 == Array("a:b".utf8))
  }

  @Test("a failed check costs the same for a known and an unknown user (both run bcrypt)")
  func unknownUserCostsTheSame() {
    let access = HTTPAccess(users: ["prometheus": Self.hash])
    func basic(_ text: String) -> String { "Basic " + Data(text.utf8).base64EncodedString() }
    func seconds(_ header: String) -> Double {
      let started = Date()
      for _ in 0..<3 { _ = access.allows(header) }
      return Date().timeIntervalSince(started)
    }
    let known = seconds(basic("prometheus:wrong"))
    let unknown = seconds(basic("nobody:wrong"))
    // bcrypt of cost 10 takes tens of milliseconds; skipping it for an unknown user would not.
    #expect(unknown > known / 3, "known \(known) s, unknown \(unknown) s")
    #expect(PasswordHash.matches(Array("x".utf8), hash: HTTPAccess.unknownUserHash) == false)
  }

  @Test(
    "checked credentials are remembered (a scraper does not pay bcrypt every scrape); a wrong password still fails after a right one"
  )
  func verifiedCredentialsRemembered() {
    let access = HTTPAccess(users: ["prometheus": Self.hash])
    func basic(_ text: String) -> String { "Basic " + Data(text.utf8).base64EncodedString() }
    func seconds(_ header: String) -> (Bool, Double) {
      let started = Date()
      let allowed = access.allows(header)
      return (allowed, Date().timeIntervalSince(started))
    }
    let (first, bcrypt) = seconds(basic("prometheus:s3cret pass"))
    let (again, remembered) = seconds(basic("prometheus:s3cret pass"))
    #expect(first && again)
    #expect(remembered < bcrypt / 5, "first \(bcrypt) s, again \(remembered) s")
    #expect(!access.allows(basic("prometheus:s3cret pass ")))
    #expect(!access.allows(basic("prometheus:wrong")))
    // A key depends on the hash too: the same password against a changed hash is checked anew.
    let changed = HTTPAccess(users: ["prometheus": HTTPAccess.unknownUserHash])
    #expect(!changed.allows(basic("prometheus:s3cret pass")))
  }

  @Test("the configured headers replace the server's own of the same name; the rest is kept")
  func headers() {
    let access = HTTPAccess(headers: [("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "deny")])
    let response = HTTPResponse.render(
      status: 200, reason: "OK", body: Array("hi".utf8), headers: [("x-content-type-options", "other")])
    let text = String(decoding: access.decorate(response), as: UTF8.self)
    #expect(!text.contains("other"))
    #expect(text.contains("\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: deny\r\n\r\nhi"), "\(text)")
  }
}
