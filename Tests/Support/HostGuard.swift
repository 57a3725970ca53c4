import CHostGuard
import Foundation

/// The host's network links, as the suite-level guard (`Tests/HostGuard/host_guard.c`) records
/// them when the test process is loaded and compares them when it exits: a difference fails the
/// whole run. Tests read it here to compare mid-run.
enum HostLinks {
  /// The links when the process started; nil when the guard could not read them.
  static var atStart: String? { vpnstat_host_links_at_start().map { String(cString: $0) } }

  /// The links now.
  static func now() -> String? {
    guard let text = vpnstat_host_links_now() else { return nil }
    defer { free(text) }
    return String(cString: text)
  }
}

/// The vpnstat commands that may change a link: bring one up or take it down (`connect`,
/// `disconnect`), or follow one and disconnect it, also through a command of the user's
/// (`enforce`). A test never runs them in the host's network namespace: `ChildProcess` runs
/// every such command line in a namespace of its own, and `runInProcess` on a thread in one.
enum LinkChanging {
  static let commands: Set<String> = ["connect", "disconnect", "enforce"]

  /// True when `arguments` may run one of them (any word that names one counts: a false alarm
  /// only costs a namespace).
  static func mayChangeLinks(_ arguments: [String]) -> Bool { arguments.contains { commands.contains($0) } }

  /// `executable arguments…` run in a new network namespace that ends with it, with a sysfs of
  /// that namespace (as `ip netns exec` mounts one); `unshare` and the shell exec vpnstat, so its
  /// pid is the child's.
  static func isolated(_ executable: String, _ arguments: [String]) -> (String, [String]) {
    (
      "/usr/bin/unshare",
      [
        "--net", "--mount", "--propagation", "private", "/bin/sh", "-c",
        "mount -t sysfs sysfs /sys && exec \"$0\" \"$@\"", executable,
      ] + arguments
    )
  }
}

/// Runs `body` on a thread of its own in a new network namespace (a network namespace belongs to
/// a thread, and ends with it; the thread's children inherit it) when `isolated`, else here: a
/// command that may change a link never runs in the host's namespace, in-process either. The
/// thread still sees the host's /sys (a mount, not a network, namespace matter).
func inOwnNamespace<T>(if isolated: Bool, _ body: @escaping () -> T) throws -> T {
  guard isolated else { return body() }
  let run = NamespacedRun(body)
  let thread = Thread {
    defer { run.done.signal() }
    run.failure = vpnstat_enter_new_network_namespace()
    if run.failure == 0 { run.value = run.body() }
  }
  thread.start()
  run.done.wait()
  guard let value = run.value else { throw TestSetupError("unshare(CLONE_NEWNET): errno \(run.failure)") }
  return value
}

/// One body run on its own thread, handed over and back through the semaphore.
private final class NamespacedRun<T>: @unchecked Sendable {
  let body: () -> T
  var value: T?
  var failure: Int32 = 0
  let done = DispatchSemaphore(value: 0)
  init(_ body: @escaping () -> T) { self.body = body }
}

/// The test-process reaper (`Tests/HostGuard/test_process_reaper.c`): forked when the test
/// process loads, it waits for the test process to end — however it ends, SIGKILL included —
/// then kills every process whose environment carries `mark=<the test process's pid>` (what
/// every child inherits, and the daemons they fork: wireguard-go, dbus-daemon, a tmux server)
/// and removes the network namespaces the test process made.
enum TestProcessReaper {
  static let mark = "VPNSTAT_TEST_PROCESS"

  /// The reaper's pid; nil when it could not be started.
  static var pid: pid_t? {
    let pid = vpnstat_test_process_reaper()
    return pid > 0 ? pid_t(pid) : nil
  }
}
