import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// The machine's other processes as /proc shows them: which exist, who they are (name,
/// arguments, control group, when they started), what they hold open, and asking one to stop.
/// How a tunnel's manager is found (the process holding its tun) and how an OpenVPN client
/// without a management socket is stopped.
package enum ProcessTable {
  /// This process's id.
  package static var currentID: Int32 { getpid() }

  /// The ids of every process, from the numeric entries of `procRoot`.
  package static func ids(procRoot: SystemPath = "/proc") -> [Int32] {
    ((try? SmallFile.directoryEntries(procRoot)) ?? []).compactMap { name in
      guard !name.isEmpty, name.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
      return Int32(String(decoding: name, as: UTF8.self))
    }
  }

  /// `/proc/PID/stat` after the command: the state letter and the start time (clock ticks after
  /// boot). The command is in parentheses and may hold anything, so the fields are counted
  /// after its last `)`.
  static func stat(_ pid: Int32, procRoot: SystemPath) -> (state: UInt8, startTime: UInt64)? {
    guard let bytes = try? SmallFile.read(procRoot.appending(String(pid)).appending("stat")),
      let close = bytes.lastIndex(of: 0x29)
    else { return nil }
    let fields = bytes[(close + 1)...].split(separator: 0x20)
    // After ")": state is field 3 of stat(5), starttime field 22.
    guard fields.count > 19, let state = fields[0].first,
      let start = UInt64(String(decoding: fields[19], as: UTF8.self))
    else { return nil }
    return (state, start)
  }

  /// When the process started, in clock ticks after boot: with the pid, an identity that a
  /// reused pid does not share. Nil when there is no such process.
  package static func startTime(of pid: Int32, procRoot: SystemPath = "/proc") -> UInt64? {
    stat(pid, procRoot: procRoot)?.startTime
  }

  /// Whether the process exists and has not exited (a zombie has: it waits to be reaped).
  package static func isRunning(_ pid: Int32, procRoot: SystemPath = "/proc") -> Bool {
    guard let state = stat(pid, procRoot: procRoot)?.state else { return false }
    return state != 0x5A && state != 0x58  // Z, X
  }

  /// `/proc/PID/comm`: the name the kernel keeps (at most 15 bytes).
  package static func command(of pid: Int32, procRoot: SystemPath = "/proc") -> String? {
    SmallFile.trimmedText(procRoot.appending(String(pid)).appending("comm"))
  }

  /// `/proc/PID/cmdline`: the arguments, program first (empty for a kernel thread or a process
  /// that exited).
  package static func arguments(of pid: Int32, procRoot: SystemPath = "/proc") -> [String] {
    guard let bytes = try? SmallFile.read(procRoot.appending(String(pid)).appending("cmdline"), limit: 1 << 16)
    else { return [] }
    return bytes.split(separator: 0, omittingEmptySubsequences: false).dropLast(bytes.last == 0 ? 1 : 0).map {
      String(decoding: $0, as: UTF8.self)
    }
  }

  /// The process's control group in the unified hierarchy (`0::/system.slice/x.service`), or
  /// nil when it has none there.
  package static func controlGroup(of pid: Int32, procRoot: SystemPath = "/proc") -> String? {
    guard let bytes = try? SmallFile.read(procRoot.appending(String(pid)).appending("cgroup"), limit: 1 << 14)
    else { return nil }
    for line in bytes.split(separator: 0x0A) where line.starts(with: Array("0::".utf8)) {
      return String(decoding: line.dropFirst(3), as: UTF8.self)
    }
    return nil
  }

  /// The namespace of `type` (`net`, `mnt`) the process is in — this process's for nil — as
  /// `/proc/PID/ns/TYPE` names it (`net:[INODE]`).
  package static func namespace(_ type: String, of pid: Int32?, procRoot: SystemPath = "/proc") -> [UInt8]? {
    try? SmallFile.symbolicLink(procRoot.appending(pid.map { String($0) } ?? "self").appending("ns").appending(type))
  }

  /// The descriptors the process has open, with what each names (`/dev/net/tun`,
  /// `socket:[123]`); empty when they cannot be read (another user's process, or it exited).
  package static func openFiles(of pid: Int32, procRoot: SystemPath = "/proc") -> [(fd: Int32, target: [UInt8])] {
    let directory = procRoot.appending(String(pid)).appending("fd")
    return ((try? SmallFile.directoryEntries(directory)) ?? []).compactMap { name in
      guard let fd = Int32(String(decoding: name, as: UTF8.self)),
        let target = try? SmallFile.symbolicLink(SystemPath(bytes: directory.bytes + [0x2F] + name))
      else { return nil }
      return (fd, target)
    }
  }

  /// `/proc/PID/fdinfo/FD`: the kernel's lines about one open descriptor (a tun's has
  /// `iff:\tNAME`).
  package static func descriptorInfo(pid: Int32, fd: Int32, procRoot: SystemPath = "/proc") -> [UInt8]? {
    try? SmallFile.read(procRoot.appending(String(pid)).appending("fdinfo").appending(String(fd)))
  }

  /// What the kernel says of a process in `/proc/PID/status`: its parent and its user ids (real,
  /// effective, saved, file system). The kernel's word, not the process's: what root may believe
  /// about who runs it.
  package struct Status: Hashable, Sendable {
    package var parent: Int32
    package var userIDs: [UInt32]
    /// All four user ids are root's.
    package var isRoot: Bool { userIDs.count == 4 && userIDs.allSatisfy { $0 == 0 } }
  }

  /// The process's `Status`, or nil when it cannot be read (it exited).
  package static func status(of pid: Int32, procRoot: SystemPath = "/proc") -> Status? {
    guard let bytes = try? SmallFile.read(procRoot.appending(String(pid)).appending("status"), limit: 1 << 14)
    else { return nil }
    var parent: Int32?
    var userIDs: [UInt32]?
    func numbers(_ line: ArraySlice<UInt8>, after label: Int) -> [UInt32] {
      line.dropFirst(label).split(whereSeparator: { $0 == 0x09 || $0 == 0x20 }).compactMap {
        UInt32(String(decoding: $0, as: UTF8.self))
      }
    }
    for line in bytes.split(separator: 0x0A) {
      if line.starts(with: Array("PPid:".utf8)) {
        parent = numbers(line, after: 5).first.map { Int32(truncatingIfNeeded: $0) }
      } else if line.starts(with: Array("Uid:".utf8)) {
        userIDs = numbers(line, after: 4)
        break
      }
    }
    guard let parent, let userIDs, userIDs.count == 4 else { return nil }
    return Status(parent: parent, userIDs: userIDs)
  }

  /// The program the process runs (`/proc/PID/exe`), or nil.
  package static func executable(of pid: Int32, procRoot: SystemPath = "/proc") -> String? {
    (try? SmallFile.symbolicLink(procRoot.appending(String(pid)).appending("exe"), limit: 4096)).map {
      String(decoding: $0, as: UTF8.self)
    }
  }

  /// Asks the process to stop (SIGTERM), if it is still the one that started at `startTime`:
  /// through a pidfd opened before the start time is checked, so a pid reused in between is
  /// never signalled.
  package static func terminate(_ pid: Int32, startTime: UInt64?) throws {
    let pidfd = try retryingInterrupts { clinux_pidfd_open(pid) }
    defer { FileDescriptor(rawValue: pidfd).close() }
    if let startTime, Self.startTime(of: pid) != startTime { return }
    _ = try retryingInterrupts { clinux_pidfd_send_signal(pidfd, SIGTERM) }
  }

  /// A descriptor that becomes readable when the process exits (a pidfd), so a loop learns of
  /// the exit in its one wait instead of looking in /proc. Nil when it has exited already, or
  /// the pid is another process's now than the one that started at `startTime`: the pidfd is
  /// opened first, so the process it names cannot change after the check. The owner closes it.
  package static func exitNotice(of pid: Int32, startTime: UInt64?) -> FileDescriptor? {
    guard let pidfd = try? retryingInterrupts({ clinux_pidfd_open(pid) }) else { return nil }
    let notice = FileDescriptor(rawValue: pidfd)
    if let startTime, Self.startTime(of: pid) != startTime {
      notice.close()
      return nil
    }
    return notice
  }

  /// Whether the process an `exitNotice` watches has exited, without waiting.
  package static func hasExited(_ notice: FileDescriptor) -> Bool {
    (try? waitForReadable([notice], timeout: .zero))?.isEmpty == false
  }

  /// Whether this process has the capability `bit` (e.g. 12, CAP_NET_ADMIN) in its effective
  /// set, from `/proc/self/status`'s `CapEff:` line.
  package static func hasCapability(_ bit: Int, procRoot: SystemPath = "/proc") -> Bool {
    guard let bytes = try? SmallFile.read(procRoot.appending("self").appending("status"), limit: 1 << 14) else {
      return false
    }
    for line in bytes.split(separator: 0x0A) where line.starts(with: Array("CapEff:".utf8)) {
      let hex = String(decoding: Array(line.dropFirst(7)).trimmingASCIIWhitespace(), as: UTF8.self)
      guard let mask = UInt64(hex, radix: 16) else { return false }
      return mask & (1 << UInt64(bit)) != 0
    }
    return false
  }

  /// CAP_NET_ADMIN: configure network links (take one down, delete it).
  package static let netAdmin = 12
}
