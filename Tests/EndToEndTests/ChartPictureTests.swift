import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatSimulation
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// `history --svg` as people see it: the SVG of a simulated month, drawn by a real browser
/// (Debian's headless Chromium) to a PNG whose plot areas must hold bars and whose axes labels.
struct ChartPictureTests {
  static let chromium = "/usr/bin/chromium"

  /// Decodes an 8-bit RGB or RGBA PNG with Python's zlib (no imaging library needed) and counts,
  /// in each rectangle given as x0,y0,x1,y1, the pixels of a colour (bars: saturated) and the
  /// dark ones (text, axes). Prints one line "coloured dark" per rectangle.
  static let pixelCounter = """
    import sys, zlib, struct
    data = open(sys.argv[1], 'rb').read()
    assert data[:8] == b'\\x89PNG\\r\\n\\x1a\\n', 'not a PNG'
    pos, idat = 8, b''
    while pos < len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b'IHDR':
            width, height, depth, colour = struct.unpack('>IIBB', body[:10])
        elif kind == b'IDAT':
            idat += body
        pos += 12 + length
    assert depth == 8 and colour in (2, 6), (depth, colour)
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1: line[i] = (line[i] + a) & 255
            elif kind == 2: line[i] = (line[i] + b) & 255
            elif kind == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    print(width, height)
    for rect in sys.argv[2:]:
        x0, y0, x1, y1 = map(int, rect.split(','))
        coloured = dark = 0
        for y in range(y0, min(y1, height)):
            for x in range(x0, min(x1, width)):
                r, g, b = rows[y][x * bpp:x * bpp + 3]
                if max(r, g, b) - min(r, g, b) > 40: coloured += 1
                if max(r, g, b) < 100: dark += 1
        print(coloured, dark)
    """

  @Test("the SVG of a simulated month renders in headless Chromium with bars in every plot and labels on every axis")
  func rendersInABrowser() throws {
    try Tool.require(Self.chromium)
    try Tool.require("/usr/bin/python3")
    let directory = try TemporaryDirectory("picture")
    let db = directory.file("v.db")
    // A month up to now, in the machine's time zone (the command reads it in that one), from
    // the benchmark's generator: hourly steps, quieter at night.
    let store = try #require(try Store.open(StoreLocation(path: db), intent: .write))
    var simulation = SimulatedHistory()
    simulation.fineSpan = 0
    simulation.step = 3600
    simulation.rate = { time in (time / 3600 % 24) < 7 ? 5_000 : 60_000 + UInt64(time / 86_400 % 7) * 15_000 }
    let now = Timestamp(seconds: Int64(Date().timeIntervalSince1970))
    try simulation.record(into: store, from: now - .seconds(30 * 86_400), duration: 30 * 86_400)
    let svg = directory.file("history.svg")
    let drawn = try run(
      Built.vpnstat, ["history", "--svg", svg, "--db", db], environment: ["VPNSTAT_CONFIG": "/nonexistent/config"])
    try #require(drawn.status == 0, "history --svg: \(drawn.errors)")
    let png = directory.file("history.png")
    let shot = try run(
      Self.chromium,
      [
        "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
        "--user-data-dir=" + directory.file("chromium"),
        "--screenshot=" + png, "--window-size=1280,720", "file://" + svg,
      ], environment: ["HOME": directory.path], timeout: 60)
    try #require(FileManager.default.fileExists(atPath: png), "chromium wrote no picture: \(shot.errors)")
    // Each panel: its plot area (bars) and the strip of y-axis labels left of it — all three
    // inside a 1280 × 720 window, a laptop's.
    var rectangles: [String] = []
    let (plotTop, plotBottom) = (HistorySVG.plotTop, HistorySVG.plotBottom)
    for panel in 0..<3 {
      let top = HistorySVG.headerHeight + panel * HistorySVG.panelHeight
      rectangles.append("97,\(top + plotTop + 1),930,\(top + plotBottom)")
      rectangles.append("0,\(top + plotTop - 4),94,\(top + plotBottom + 6)")
    }
    rectangles.append("0,0,960,60")  // the title
    let counted = try python(Self.pixelCounter, [png] + rectangles)
    try #require(counted.status == 0, "\(counted.errors)")
    let lines = counted.output.split(separator: "\n").map { $0.split(separator: " ").compactMap { Int($0) } }
    #expect(lines.first == [1280, 720])
    for panel in 0..<3 {
      let plot = lines[1 + panel * 2]
      let axis = lines[2 + panel * 2]
      // Hours and days are full of bars; the months panel has one or two (a month of data).
      let least = panel < 2 ? (930 - 97) * (plotBottom - plotTop - 1) / 10 : 1500
      #expect(plot[0] > least, "panel \(panel): only \(plot[0]) coloured pixels in the plot")
      #expect(axis[1] > 200, "panel \(panel): no y-axis labels (\(axis[1]) dark pixels)")
    }
    #expect(lines[7][1] > 500, "no title")
  }
}
