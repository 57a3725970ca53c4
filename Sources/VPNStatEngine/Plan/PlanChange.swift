import VPNStatModel
import VPNStatStore

/// `vpnstat plan`: the plan and the data cap, shown or changed. Premium has no window, so
/// switching to it clears the window (a later downgrade starts clean) and records the reset; what
/// the change writes anew replaces a damaged value there, and says so.
package struct PlanChange: Sendable {
  /// The data cap as asked: set, removed, or (nil) left as it is.
  package enum CapChange: Sendable, Equatable {
    case set(DataCap)
    case remove
  }

  package var plan: Plan?
  package var cap: CapChange?

  package init(plan: Plan?, cap: CapChange?) {
    self.plan = plan
    self.cap = cap
  }

  /// What a change did: the record as stored after it, and whether switching cleared a window.
  package struct Outcome: Sendable {
    package var record: SessionRecord
    package var cleared: Bool
  }

  /// The plan and cap stored at `location`: free and no cap without a database.
  package static func current(at location: StoreLocation, calendar: any LocalCalendar) throws -> SessionRecord {
    try Store.open(location, intent: .read, calendar: calendar)?.sessionRecord() ?? SessionRecord()
  }

  /// Makes the change in the database at `location`; nil when it cannot be opened for writing.
  /// Each damaged value replaced is told to `warn` at once, before anything else can fail; a
  /// damaged window `plan free` keeps is still damage (65, naming session reset).
  package func apply(
    at location: StoreLocation, calendar: any LocalCalendar, clock: any TimeSource, warn: (String) -> Void
  ) throws -> Outcome? {
    guard let store = try Store.open(location, intent: .write, calendar: calendar) else { return nil }
    var replacing: Store.ReplacedParts = []
    if plan == .premium { replacing.insert(.window) }
    if cap != nil { replacing.insert(.dataCap) }
    let repaired = try store.clearDamaged(replacing)
    for damage in repaired { warn(damage.description) }
    let damagedWindow = repaired.contains { $0.part == .window }
    let now = try store.trustedNow(clock.now())
    let (cleared, record) = try store.updateSession { record -> (Bool, SessionRecord) in
      var cleared = false
      if let plan {
        let had = record.window != nil || damagedWindow
        record = record.switching(to: plan)
        cleared = had && record.window == nil
      }
      switch cap {
      case .set(let dataCap)?: record.dataCap = dataCap
      case .remove?: record.dataCap = nil
      case nil: break
      }
      return (cleared, record)
    }
    if cleared {
      try store.recordStop(StopRecord(at: now, interface: nil, reason: .reset, detail: "plan changed to premium"))
    }
    return Outcome(record: record, cleared: cleared)
  }
}
