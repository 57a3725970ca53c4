import VPNStatCommandLine
import VPNStatSystem

// A run piped into `head` ends on EPIPE, treated as success, instead of dying of SIGPIPE
// half-way through a line (and a live view gets to restore the terminal).
CurrentProcess.ignoreBrokenPipe()
CurrentProcess.exit(VPNStat.main(arguments: CurrentProcess.arguments, context: .process()).rawValue)
