import Testing

@testable import VPNStatModel
@testable import VPNStatTestSupport

/// A writer books every interface at every sample into the sums of its buckets, through two fast
/// paths: the bucket starts of one time are worked out once (bookings of one sample share it),
/// and a name's bookings of one period are one sum until a booking falls in another. Whatever
/// the order of times and names, the rows must be those of booking each one into every bucket
/// that holds it.
struct UnsavedTrafficTests {
  /// 2027-01-31 23:58:30 UTC, 22:58:30 in the local calendar below (an hour behind): the next
  /// two minutes cross a 5-minute bucket's end and an hour's, the hour after them the day's
  /// and the month's.
  let origin: Int64 = 1_801_439_910
  let calendar = FixedOffsetCalendar(offsetSeconds: -3600)

  struct Booking {
    var name: String
    var interfaceClass: InterfaceClass
    var second: Int64
    var bytes: UInt64
  }

  /// The rows as one booking at a time into every bucket that holds its time makes them, with
  /// no fast path: the class of each bucket is the one last booked into it.
  func reference(_ bookings: [Booking]) -> [(granularity: TrafficGranularity, bucket: TrafficBucket)] {
    struct Key: Hashable {
      var granularity: TrafficGranularity
      var start: Int64
      var name: InterfaceName
    }
    var sums: [Key: TrafficBucket] = [:]
    for booking in bookings where booking.bytes > 0 {
      let wall = Timestamp(seconds: origin + booking.second)
      for granularity in TrafficGranularity.allCases {
        let key = Key(
          granularity: granularity, start: granularity.start(of: wall, in: calendar), name: InterfaceName(booking.name))
        var bucket =
          sums[key]
          ?? TrafficBucket(name: key.name, start: key.start, interfaceClass: booking.interfaceClass, traffic: .zero)
        bucket.interfaceClass = booking.interfaceClass
        bucket.traffic += traffic(booking.bytes)
        sums[key] = bucket
      }
    }
    return sums.sorted { a, b in
      (a.key.granularity.rawValue, a.key.start) != (b.key.granularity.rawValue, b.key.start)
        ? (a.key.granularity.rawValue, a.key.start) < (b.key.granularity.rawValue, b.key.start)
        : a.key.name < b.key.name
    }.map { ($0.key.granularity, $0.value) }
  }

  func traffic(_ bytes: UInt64) -> TrafficCounts {
    TrafficCounts(rxBytes: bytes, txBytes: bytes / 3, rxPackets: bytes / 100, txPackets: bytes > 0 ? 1 : 0)
  }

  /// Books `bookings` in order; returns the sums and what each booking's `add` returned.
  func book(_ bookings: [Booking], into sums: inout UnsavedTraffic) -> [TrafficCounts] {
    bookings.map {
      sums.add(
        traffic($0.bytes), of: InterfaceName($0.name), as: $0.interfaceClass,
        at: Timestamp(seconds: origin + $0.second),
        calendar: calendar)
    }
  }

  func expectSame(_ sums: UnsavedTraffic, _ bookings: [Booking], _ comment: Comment) {
    let expected = reference(bookings)
    let rows = sums.rows
    #expect(rows.map(\.granularity) == expected.map(\.granularity), comment)
    #expect(rows.map(\.bucket) == expected.map(\.bucket), comment)
    for granularity in TrafficGranularity.allCases {
      let wanted = expected.filter { $0.granularity == granularity }.map(\.bucket)
      let buckets = sums.buckets(granularity, since: 0)
      #expect(Set(buckets) == Set(wanted), "\(comment): \(granularity) buckets")
      #expect(buckets.count == wanted.count, "\(comment): \(granularity) buckets")
      for interfaceClass in InterfaceClass.allCases {
        let sum = wanted.filter { $0.interfaceClass == interfaceClass }.reduce(TrafficCounts.zero) { $0 + $1.traffic }
        #expect(sums.traffic(granularity, since: 0, of: interfaceClass, name: nil) == sum, "\(comment): \(granularity)")
      }
      let tunnel = wanted.filter { $0.name == InterfaceName("tun0") }.reduce(TrafficCounts.zero) { $0 + $1.traffic }
      #expect(sums.traffic(granularity, since: 0, of: nil, name: InterfaceName("tun0")) == tunnel, "\(comment)")
    }
  }

  @Test(
    "bookings of several names at times that cross a 5-minute bucket's, an hour's, a day's and a month's end between two names of one moment, go back (a clock set back) and change class: the rows of booking each into every bucket"
  )
  func fastPathsKeepTheBuckets() {
    let bookings: [Booking] = [
      Booking(name: "eth0", interfaceClass: .ethernet, second: 0, bytes: 1_000),
      Booking(name: "tun0", interfaceClass: .tunnel, second: 0, bytes: 2_000),
      Booking(name: "wlan0", interfaceClass: .wifi, second: 0, bytes: 3_000),
      // 23:59:59, then the next name at 00:00:00 of a new month: the boundary falls between two
      // names booked one after the other.
      Booking(name: "eth0", interfaceClass: .ethernet, second: 89, bytes: 10),
      Booking(name: "tun0", interfaceClass: .tunnel, second: 90, bytes: 20),
      Booking(name: "wlan0", interfaceClass: .wifi, second: 90, bytes: 30),
      Booking(name: "eth0", interfaceClass: .ethernet, second: 90, bytes: 40),
      // The same second again, and one more of the new period.
      Booking(name: "tun0", interfaceClass: .other, second: 90, bytes: 5),
      Booking(name: "tun0", interfaceClass: .tunnel, second: 150, bytes: 7),
      // The clock set back into the earlier period, then forward again; a class changed there.
      Booking(name: "tun0", interfaceClass: .other, second: 60, bytes: 300),
      Booking(name: "eth0", interfaceClass: .ethernet, second: 60, bytes: 0),
      Booking(name: "wlan0", interfaceClass: .wifi, second: 61, bytes: 400),
      Booking(name: "wlan0", interfaceClass: .cellular, second: 400, bytes: 500),
      // An hour later in the local calendar: its own day bucket, the month's too.
      Booking(name: "tun0", interfaceClass: .tunnel, second: 3_690, bytes: 600),
    ]
    var sums = UnsavedTraffic()
    let totals = book(bookings, into: &sums)
    expectSame(sums, bookings, "all at once")
    #expect(reference(bookings).count > 4 * 3, "the times must cross buckets for the test to mean anything")
    // What `add` returns: all the name booked so far.
    for (i, booking) in bookings.enumerated() {
      let before = bookings[...i].filter { $0.name == booking.name }.reduce(TrafficCounts.zero) {
        $0 + traffic($1.bytes)
      }
      #expect(totals[i] == before, "booking \(i)")
    }
    // Every prefix, so each fast path is checked where it is taken.
    for count in 1..<bookings.count {
      var prefix = UnsavedTraffic()
      _ = book(Array(bookings[..<count]), into: &prefix)
      expectSame(prefix, Array(bookings[..<count]), "the first \(count)")
    }
  }

  @Test("a name removed, or every sum emptied, starts again from nothing: the next bookings alone, periods and all")
  func removedStartsAgain() {
    let first: [Booking] = [
      Booking(name: "tun0", interfaceClass: .tunnel, second: 0, bytes: 100),
      Booking(name: "eth0", interfaceClass: .ethernet, second: 95, bytes: 200),
      Booking(name: "tun0", interfaceClass: .tunnel, second: 95, bytes: 300),
    ]
    var sums = UnsavedTraffic()
    _ = book(first, into: &sums)
    sums.remove(InterfaceName("tun0"))
    let after: [Booking] = [
      Booking(name: "tun0", interfaceClass: .other, second: 95, bytes: 7),
      Booking(name: "tun0", interfaceClass: .other, second: 400, bytes: 8),
    ]
    let totals = book(after, into: &sums)
    #expect(totals == [traffic(7), traffic(7) + traffic(8)])
    expectSame(sums, [first[1]] + after, "after removing tun0")
    sums.removeAll()
    #expect(sums.isEmpty && sums.rows.isEmpty)
    // Emptied: the periods of before are forgotten too, whatever time comes next.
    let later: [Booking] = [
      Booking(name: "eth0", interfaceClass: .ethernet, second: 400, bytes: 9),
      Booking(name: "eth0", interfaceClass: .ethernet, second: 0, bytes: 10),
    ]
    _ = book(later, into: &sums)
    expectSame(sums, later, "after emptying")
  }
}
