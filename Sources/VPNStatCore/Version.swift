/// The version `vpnstat --version` prints.
public let vpnstatVersion = "0.1.0"
