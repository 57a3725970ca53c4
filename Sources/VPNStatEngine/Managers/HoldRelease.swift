import VPNStatModel

/// Gives back what a manager held for a pause (`TunnelControl.holdForPause`), whoever held it:
/// this enforcer, or one before it that died holding it (its presence file says what). False when
/// the manager refused or is gone: the hold is kept and tried again.
package protocol HoldRelease {
  func release(_ hold: ManagerHold) -> Bool
}

/// Through the managers' own programs: `nmcli` gives NetworkManager's autoconnect back. No other
/// manager holds anything: a hold of another kind has nothing to give back.
package struct ManagerHoldRelease: HoldRelease {
  let runner: any ProgramRunner

  package init(runner: any ProgramRunner = ChildProgramRunner()) {
    self.runner = runner
  }

  package func release(_ hold: ManagerHold) -> Bool {
    guard hold.kind == .networkManager else { return true }
    return NetworkManagerControl.release(hold, runner: runner)
  }
}
