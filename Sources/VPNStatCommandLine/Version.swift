import VPNStatCapture
import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// The version `vpnstat --version` prints.
public let vpnstatVersion = "0.1.0"
