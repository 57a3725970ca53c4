/// `/` of `record --listen`: a small page that says what this is and links to the metrics.
package enum MetricsPage {
  package static let html = """
    <!DOCTYPE html>
    <html lang="en"><head><meta charset="utf-8"><title>vpnstat</title></head>
    <body><h1>vpnstat</h1>
    <p>Traffic per interface class (estimates) and the VPN session window, recorded by <code>vpnstat record</code>.</p>
    <p><a href="/metrics">/metrics</a>: OpenMetrics 1.0 when asked for with <code>Accept: application/openmetrics-text</code>, the Prometheus text format otherwise.</p>
    </body></html>

    """
}
