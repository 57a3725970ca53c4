import Foundation
import Testing

@testable import VPNStatTestSupport

/// `record --listen --web-config` for real, in a namespace of its own: TLS with a client
/// certificate and basic auth, as a fleet's Prometheus scrapes it; the refusals as curl meets
/// them. Certificates are made by the openssl command for each test.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct MetricsTLSKernelTests {
  static let openssl = "/usr/bin/openssl"
  static let curl = "/usr/bin/curl"
  static let prometheus = "/usr/bin/prometheus"
  /// bcrypt (cost 10) of "s3cret pass", and of "new pass".
  static let hash = "$2b$10$..lkAcbT1toohgCSCfJQTeKZlxYWrRzuYGK8crjbEv8NTbIyNiWkG"
  static let newHash = "$2b$10$ymGnuu4MUqmD/Gmy/UPeYu0KyqrI3lB7sJgFatlOdribOsz7eDsZK"

  /// A fleet's web configuration: TLS with a required, verified client certificate and one user.
  static let fleetConfiguration = """
    tls_server_config:
      cert_file: server.crt
      key_file: server.key
      client_ca_file: ca.crt
      client_auth_type: RequireAndVerifyClientCert
    basic_auth_users:
      prometheus: \(hash)

    """

  /// A CA, a server certificate for 127.0.0.1 and a client certificate it signed, in `directory`.
  static func makeCertificates(in directory: TemporaryDirectory) throws {
    let script = """
      set -e
      cd \(directory.path)
      key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1" 2>/dev/null; }
      key ca.key; key server.key; key client.key
      openssl req -x509 -new -key ca.key -out ca.crt -days 2 -subj /CN=vpnstat-test-ca
      openssl req -new -key server.key -out server.csr -subj /CN=127.0.0.1
      printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n' > server.ext
      openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 \\
        -extfile server.ext 2>/dev/null
      openssl req -new -key client.key -out client.csr -subj /CN=prometheus
      printf 'extendedKeyUsage=clientAuth\\n' > client.ext
      openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 2 \\
        -extfile client.ext 2>/dev/null
      chmod 600 ca.key server.key client.key
      """
    let made = try run("/bin/sh", ["-c", script])
    if made.status != 0 { throw TestSetupError("openssl: \(made.errors)") }
  }

  @Test(
    "TLS with a required client certificate and basic auth: the right client gets the metrics; a wrong password 401, no certificate or TLS 1.1 a refused handshake, plain HTTP nothing; a real Prometheus scrapes it with tls_config and basic_auth"
  )
  func tlsAndBasicAuth() throws {
    for tool in [Self.openssl, Self.curl, Self.prometheus] { try Tool.require(tool) }
    let ns = try TestNamespace("tls")
    let directory = try TemporaryDirectory("tls")
    try Self.makeCertificates(in: directory)
    let config = directory.file("web.yml")
    try (Self.fleetConfiguration + "http_server_config:\n  headers:\n    Strict-Transport-Security: max-age=31536000\n")
      .write(toFile: config, atomically: true, encoding: .utf8)
    let db = directory.file("v.db")
    let recorder = try ns.startRecorder(
      db, ["--interval", "1s", "--listen", "127.0.0.1:9586", "--web-config", config])
    defer { recorder.stop() }
    try recorder.waitForError("serving metrics on https://127.0.0.1:9586/metrics")
    let url = "https://127.0.0.1:9586/metrics"
    let client = [
      "--cacert", directory.file("ca.crt"), "--cert", directory.file("client.crt"),
      "--key", directory.file("client.key"),
    ]
    func curl(_ arguments: [String]) throws -> CommandResult {
      try ns.run(Self.curl, ["-s", "-S", "-i", "--max-time", "5"] + arguments)
    }
    var answer = CommandResult(status: -1, stdout: Data(), stderr: Data())
    let served = try waitUntil(timeout: 20, every: 0.2) {
      answer = try curl(client + ["-u", "prometheus:s3cret pass", url])
      return answer.output.hasPrefix("HTTP/1.1 200")
    }
    #expect(served != nil, "\(answer.output.prefix(300)) \(answer.errors) \(recorder.errors)")
    #expect(answer.output.contains("vpnstat_scrape_timestamp_seconds"))
    #expect(answer.output.contains("Strict-Transport-Security: max-age=31536000"))

    let wrong = try curl(client + ["-u", "prometheus:wrong", url])
    #expect(wrong.output.hasPrefix("HTTP/1.1 401"), "\(wrong.output.prefix(200))")
    #expect(wrong.output.contains("WWW-Authenticate: Basic realm=\"vpnstat\""))
    #expect(!wrong.output.contains("vpnstat_scrape_timestamp_seconds"))
    let none = try curl(client + [url])
    #expect(none.output.hasPrefix("HTTP/1.1 401"), "\(none.output.prefix(200))")

    // No client certificate: the handshake refuses it, nothing is answered.
    let anonymous = try curl(["--cacert", directory.file("ca.crt"), "-u", "prometheus:s3cret pass", url])
    #expect(anonymous.status != 0 && !anonymous.output.contains("HTTP/1.1"), "\(anonymous.output) \(anonymous.errors)")
    // TLS 1.1 at most: below the minimum (TLS 1.2).
    let old = try curl(client + ["--tlsv1.1", "--tls-max", "1.1", "-u", "prometheus:s3cret pass", url])
    #expect(old.status != 0 && !old.output.contains("HTTP/1.1"), "\(old.output) \(old.errors)")
    // Plain HTTP to the TLS port gets no metrics.
    let plain = try curl(["http://127.0.0.1:9586/metrics"])
    #expect(!plain.output.contains("vpnstat_scrape_timestamp_seconds"), "\(plain.output.prefix(200))")
    #expect(recorder.isRunning, "\(recorder.errors)")

    // SIGHUP reloads the file: a new password takes over, the listener stays.
    let original = try String(contentsOfFile: config, encoding: .utf8)
    try original.replacingOccurrences(of: Self.hash, with: Self.newHash)
      .write(toFile: config, atomically: true, encoding: .utf8)
    kill(recorder.pid, SIGHUP)
    try recorder.waitForError("reloaded the web configuration")
    let renewed = try curl(client + ["-u", "prometheus:new pass", url])
    #expect(renewed.output.hasPrefix("HTTP/1.1 200"), "\(renewed.output.prefix(200)) \(renewed.errors)")
    let stale = try curl(client + ["-u", "prometheus:s3cret pass", url])
    #expect(stale.output.hasPrefix("HTTP/1.1 401"), "\(stale.output.prefix(200))")
    // A file that no longer loads: said, and the running settings kept.
    try "tls_server_config:\n  cert_file: server.crt\n".write(toFile: config, atomically: true, encoding: .utf8)
    kill(recorder.pid, SIGHUP)
    try recorder.waitForError("the running one is kept")
    #expect(try curl(client + ["-u", "prometheus:new pass", url]).output.hasPrefix("HTTP/1.1 200"))
    #expect(recorder.isRunning, "\(recorder.errors)")
    try original.write(toFile: config, atomically: true, encoding: .utf8)
    kill(recorder.pid, SIGHUP)
    let reloadedTwice = waitUntil(timeout: 10) {
      recorder.errors.components(separatedBy: "reloaded the web configuration").count == 3
    }
    #expect(reloadedTwice != nil, "\(recorder.errors)")

    // A real Prometheus with the fleet's settings: the target is up and its samples are vpnstat's.
    let plan = try ns.vpnstat("plan", "free", "--data-cap", "3GiB", "--db", db)
    #expect(plan.status == 0, "\(plan.errors)")
    // One job with the right password, one with a wrong one: only the first is up.
    func job(_ name: String, password: String) -> String {
      """
        - job_name: \(name)
          scheme: https
          tls_config:
            ca_file: \(directory.file("ca.crt"))
            cert_file: \(directory.file("client.crt"))
            key_file: \(directory.file("client.key"))
          basic_auth:
            username: prometheus
            password: \(password)
          static_configs:
            - targets: ['127.0.0.1:9586']

      """
    }
    let server = try ns.startPrometheus(
      scrapeConfigs: job("vpnstat", password: "s3cret pass") + job("wrong-password", password: "wrong"), in: directory)
    defer { server.stop() }
    func query(_ expression: String) throws -> String? { try ns.prometheusQuery(expression) }
    var up: String?
    var down: String?
    let scraped = try waitUntil(timeout: 40, every: 0.25) {
      up = try query("up{job=\"vpnstat\"}")
      down = try query("up{job=\"wrong-password\"}")
      return up == "1" && down == "0"
    }
    #expect(scraped != nil, "up \(up ?? "-"), wrong password up \(down ?? "-"): \(server.errors)")
    // A sample that holds still, as export writes it and as Prometheus stored it over TLS.
    let exported = try ns.vpnstat("export", "--format", "prometheus", "--db", db)
    let line = exported.output.split(separator: "\n").first { $0.hasPrefix("vpnstat_data_cap_limit_bytes{") }
    let limit = line?.split(separator: " ").last.map(String.init)
    #expect(limit == "3221225472", "\(exported.output.prefix(300))")
    var stored: String?
    let caughtUp = try waitUntil(timeout: 20, every: 0.25) {
      stored = try query("vpnstat_data_cap_limit_bytes")
      return stored == limit
    }
    #expect(caughtUp != nil, "Prometheus stored \(stored ?? "nothing"), export says \(limit ?? "nothing")")
  }

  @Test(
    "a web configuration others could write, or a TLS key others could read, is refused with 77 before anything is served; an unknown field with 64"
  )
  func untrustedFilesRefused() throws {
    try Tool.require(Self.openssl)
    let ns = try TestNamespace("tlstrust")
    let directory = try TemporaryDirectory("tlstrust")
    try Self.makeCertificates(in: directory)
    let config = directory.file("web.yml")
    try "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
      .write(toFile: config, atomically: true, encoding: .utf8)
    func record() throws -> CommandResult {
      try ns.vpnstat(
        "record", "--db", directory.file("v.db"), "--count", "1", "--listen", "127.0.0.1:9586", "--web-config", config)
    }
    let trusted = try record()
    #expect(trusted.status == 0, "\(trusted.errors)")
    chmod(directory.file("server.key"), 0o644)
    let readableKey = try record()
    #expect(readableKey.status == 77, "\(readableKey.status) \(readableKey.errors)")
    #expect(readableKey.errors.contains("readable by others"), "\(readableKey.errors)")
    chmod(directory.file("server.key"), 0o600)
    chmod(config, 0o666)
    let writable = try record()
    #expect(writable.status == 77, "\(writable.status) \(writable.errors)")
    #expect(writable.errors.contains("web configuration"), "\(writable.errors)")
    chmod(config, 0o644)
    try "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  cipher_suites: [x]\n"
      .write(toFile: config, atomically: true, encoding: .utf8)
    let unsupported = try record()
    #expect(unsupported.status == 64, "\(unsupported.status) \(unsupported.errors)")
    #expect(unsupported.errors.contains("cipher_suites"), "\(unsupported.errors)")
  }

  @Test(
    "600 clients leaving their TLS handshake half-done (a byte a second) while a scraper scrapes over TLS with a client certificate and basic auth every 100 ms: every scrape answered"
  )
  func halfDoneHandshakesStarveNoScrape() throws {
    for tool in [Self.openssl, "/usr/bin/python3"] { try Tool.require(tool) }
    let ns = try TestNamespace("tlsslow")
    let directory = try TemporaryDirectory("tlsslow")
    try Self.makeCertificates(in: directory)
    let config = directory.file("web.yml")
    try Self.fleetConfiguration.write(toFile: config, atomically: true, encoding: .utf8)
    let recorder = try ns.startRecorder(
      directory.file("v.db"), ["--interval", "1s", "--listen", "127.0.0.1:9586", "--web-config", config])
    defer { recorder.stop() }
    try recorder.waitForError("serving metrics on https://")
    let (seconds, scrapes, answered, summary) = try MetricsHTTPKernelTests.slowAttack(
      in: ns,
      tls: [
        directory.file("ca.crt"), directory.file("client.crt"), directory.file("client.key"), "prometheus:s3cret pass",
      ])
    #expect(scrapes >= 10, "\(summary)")
    #expect(answered == scrapes, "TLS scrapes failed under half-done handshakes: \(summary)")
    #expect(recorder.isRunning)
    print("600 half-done TLS handshakes for \(seconds) s: \(summary)")
  }
}
