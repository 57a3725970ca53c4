import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatSystem

/// The version `vpnstat --version` prints, with the commit of the build (`vpnstatCommit`, written
/// by the BuildCommit plugin); the Debian package takes its version from this line.
package let vpnstatVersion = "0.1.0"

/// What `vpnstat --version` prints: `vpnstat 0.1.0 (commit 9c96f2a1b2c3)`.
package var versionLine: String { "vpnstat \(vpnstatVersion) (commit \(vpnstatCommit))" }
