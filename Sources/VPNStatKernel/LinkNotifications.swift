import VPNStatModel
import VPNStatSystem

/// The kernel's link notifications (`RTNLGRP_LINK`): links that appear, change, go away.
/// A `RTM_DELLINK` carries the dying link's final counters, a `RTM_NEWLINK` a new one's — what
/// lets a long-running sampler book the traffic of a tunnel that lived between two polls.
package final class LinkNotifications {
  let socket: NetlinkSocket

  /// One notification.
  package struct Change: Sendable {
    package var record: LinkRecord
    package var deleted: Bool
    package init(record: LinkRecord, deleted: Bool) {
      self.record = record
      self.deleted = deleted
    }
  }

  /// The receive buffer asked for: about 2.3 KiB per notification, so the default holds some
  /// 14,000 (the kernel doubles it) — a reader stalled while thousands of tunnels come and go.
  /// Memory is used only while notifications wait.
  package static let defaultReceiveBuffer: Int32 = 32 << 20

  package init(receiveBuffer: Int32 = LinkNotifications.defaultReceiveBuffer) throws {
    socket = try NetlinkSocket(groups: NetlinkSocket.linkGroup, nonBlocking: true, receiveBuffer: receiveBuffer)
  }

  package var descriptor: FileDescriptor { socket.descriptor }

  /// The notifications queued now, in order. `overflowed` is true when the kernel dropped some
  /// (ENOBUFS): the caller must then resynchronise from a full sample.
  package func drain() -> (changes: [Change], overflowed: Bool) {
    var changes: [Change] = []
    while let batch = next() {
      changes += batch.changes
      if batch.overflowed { return (changes, true) }
    }
    return (changes, false)
  }

  /// The notifications of one receive (one or more the kernel queued together), without
  /// waiting; nil when none is queued. A reactor handles each batch before it receives the next,
  /// so that between a notification and what it does about it there is no other system call.
  /// `seeing` is told each new or changed link's ifindex and flags from the message's first
  /// bytes, before anything is parsed or allocated: an answer decided in advance (the enforcer's
  /// `TakedownReflex`) goes out before the rest of the batch is read.
  package func next(
    seeing look: (_ index: Int32, _ flags: UInt32) -> Void = { _, _ in }
  ) -> (changes: [Change], overflowed: Bool)? {
    var changes: [Change] = []
    do {
      let received = try socket.receiveNotifications { message in
        if message.type == RouteLinkMessages.newLink, message.payload.count >= RouteLinkMessages.interfaceInfoLength {
          look(
            message.payload.loadUnaligned(fromByteOffset: 4, as: Int32.self),
            message.payload.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        }
        guard message.type == RouteLinkMessages.newLink || message.type == RouteLinkMessages.deleteLink,
          let record = RouteLinkMessages.parseLink(message.payload)
        else { return }
        changes.append(Change(record: record, deleted: message.type == RouteLinkMessages.deleteLink))
      }
      return received ? (changes, false) : nil
    } catch {
      // ENOBUFS (or a socket that failed): resynchronise from a full sample.
      return (changes, true)
    }
  }
}
