import COpenSSL
import VPNStatModel
import VPNStatSystem

/// A TLS server's certificate, key and client-certificate rules, as OpenSSL holds them (Debian's
/// libssl: a well-kept library, never hand-written cryptography). Made once from the web
/// configuration, and again to reload the files; each connection gets a `TLSSession` of it.
package final class TLSServerContext: @unchecked Sendable {
  /// Whether and how a client certificate is asked for, as Go's `tls.ClientAuthType` (and so
  /// Prometheus's exporter-toolkit) names them.
  package enum ClientAuthentication: String, Sendable, CaseIterable {
    case none = "NoClientCert"
    case request = "RequestClientCert"
    case requireAny = "RequireAnyClientCert"
    case verifyIfGiven = "VerifyClientCertIfGiven"
    case requireAndVerify = "RequireAndVerifyClientCert"
  }

  /// A protocol version, as the web configuration names it.
  package enum Version: String, Sendable, CaseIterable, Comparable {
    case tls10 = "TLS10"
    case tls11 = "TLS11"
    case tls12 = "TLS12"
    case tls13 = "TLS13"

    var openSSL: Int32 {
      switch self {
      case .tls10: 0x0301
      case .tls11: 0x0302
      case .tls12: 0x0303
      case .tls13: 0x0304
      }
    }
    package static func < (a: Version, b: Version) -> Bool { a.openSSL < b.openSSL }
  }

  /// What the context is made of.
  package struct Settings: Sendable, Equatable {
    package var certificateFile: String
    package var keyFile: String
    package var clientCAFile: String?
    package var clientAuthentication: ClientAuthentication = .none
    package var minimumVersion: Version = .tls12
    package var maximumVersion: Version?

    package init(certificateFile: String, keyFile: String) {
      self.certificateFile = certificateFile
      self.keyFile = keyFile
    }
  }

  /// Why a context could not be made: the file and OpenSSL's words.
  package struct Failure: Error, CustomStringConvertible, Sendable {
    package var description: String
  }

  let context: OpaquePointer
  package let settings: Settings

  package init(_ settings: Settings) throws(Failure) {
    ERR_clear_error()
    guard let context = SSL_CTX_new(TLS_server_method()) else { throw Self.failure("cannot make a TLS context") }
    self.context = context
    self.settings = settings
    guard copenssl_set_min_version(context, settings.minimumVersion.openSSL) == 1,
      copenssl_set_max_version(context, settings.maximumVersion?.openSSL ?? 0) == 1
    else { throw Self.failure("TLS versions \(settings.minimumVersion.rawValue)…") }
    // Writes may take part of a response and go on from where the buffer now is.
    _ = copenssl_set_mode(context, 0x1 | 0x2)
    guard SSL_CTX_use_certificate_chain_file(context, settings.certificateFile) == 1 else {
      throw Self.failure("cert_file \(settings.certificateFile)")
    }
    guard SSL_CTX_use_PrivateKey_file(context, settings.keyFile, 1) == 1 else {
      throw Self.failure("key_file \(settings.keyFile)")
    }
    guard SSL_CTX_check_private_key(context) == 1 else {
      throw Self.failure("key_file \(settings.keyFile) does not match cert_file \(settings.certificateFile)")
    }
    if let ca = settings.clientCAFile {
      guard SSL_CTX_load_verify_locations(context, ca, nil) == 1, let names = SSL_load_client_CA_file(ca) else {
        throw Self.failure("client_ca_file \(ca)")
      }
      SSL_CTX_set_client_CA_list(context, names)
    }
    let peer: Int32 = 0x01
    let required: Int32 = 0x02
    switch settings.clientAuthentication {
    case .none: SSL_CTX_set_verify(context, 0, nil)
    case .request: SSL_CTX_set_verify(context, peer, { _, _ in 1 })
    case .requireAny: SSL_CTX_set_verify(context, peer | required, { _, _ in 1 })
    case .verifyIfGiven: SSL_CTX_set_verify(context, peer, nil)
    case .requireAndVerify: SSL_CTX_set_verify(context, peer | required, nil)
    }
  }

  deinit { SSL_CTX_free(context) }

  /// OpenSSL's last words, after `what`.
  static func failure(_ what: String) -> Failure {
    Failure(description: "\(what): \(TLSSession.errorText())")
  }
}
