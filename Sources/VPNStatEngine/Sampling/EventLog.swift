/// Where the engine's lines go: one per event worth a person's attention (stderr under a
/// terminal, the journal under systemd, an array in a test).
package protocol EventLog {
  func event(_ line: String)
}
