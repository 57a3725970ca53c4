import VPNStatCommandLine
import VPNStatSystem

// A run piped into `head` ends on EPIPE, treated as success, instead of dying of SIGPIPE
// half-way through a line (and a live view gets to restore the terminal).
ProcessIdentity.ignoreBrokenPipe()
ProcessIdentity.exit(VPNStat.main(arguments: ProcessIdentity.arguments, context: .process()).rawValue)
