// The floor of `vpnstat status --json --db` when nothing is published beside the database: a
// plain C program that makes netlink-floor's dump, then the reads vpnstat's SQLite reader makes,
// on a connection opened the same way (read-only, `vfs=unix-none`, exclusive locking mode: its
// WAL index in its own memory, built from the log) with SQLite configured as vpnstat configures
// it (no memory statistics, no page-cache block). The same statements in the same order, each
// row's columns read; the ledger snapshot's bytes are read through the blob API and summed, not
// decoded. It prints the interface count first, as netlink-floor does.
//
// Usage: sqlite-floor DATABASE

#include <CNetlinkFloor.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/// Runs `sql` and reads every column of every row; returns how many rows, or -1.
static long read_rows(sqlite3 *db, const char *sql) {
  sqlite3_stmt *statement;
  if (sqlite3_prepare_v3(db, sql, -1, 0, &statement, 0) != SQLITE_OK) return -1;
  long rows = 0;
  int rc;
  while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
    for (int i = 0; i < sqlite3_column_count(statement); i++) {
      if (sqlite3_column_type(statement, i) == SQLITE_INTEGER) {
        (void)sqlite3_column_int64(statement, i);
      } else {
        (void)sqlite3_column_blob(statement, i);
        (void)sqlite3_column_bytes(statement, i);
      }
    }
    rows++;
  }
  sqlite3_finalize(statement);
  return rc == SQLITE_DONE ? rows : -1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: sqlite-floor DATABASE\n");
    return 64;
  }
  int fd = netlink_floor_open();
  if (fd < 0) {
    fprintf(stderr, "sqlite-floor: socket: %s\n", strerror(-fd));
    return 69;
  }
  uint64_t bytes = 0;
  long counted = netlink_floor_links(fd, &bytes);
  close(fd);
  if (counted < 0) {
    fprintf(stderr, "sqlite-floor: dump failed\n");
    return 69;
  }

  sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  char uri[4200];
  if (snprintf(uri, sizeof uri, "file:%s?mode=ro&vfs=unix-none", argv[1]) >= (int)sizeof uri) return 64;
  sqlite3 *db;
  if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, 0) != SQLITE_OK) {
    fprintf(stderr, "sqlite-floor: %s\n", sqlite3_errmsg(db));
    return 66;
  }
  // What vpnstat's reader runs, in its order (a status report with nothing published).
  static const char *const statements[] = {
      "PRAGMA locking_mode=EXCLUSIVE",
      "BEGIN",
      "PRAGMA application_id",
      "PRAGMA user_version",
      "COMMIT",
      "BEGIN",
      "SELECT token FROM ledger_snapshot_current WHERE id = 1",
  };
  static const char *const after_snapshot[] = {
      "SELECT count, last_at FROM incidents WHERE kind = 'notification-overflow'",
      "SELECT plan, opened_at, session_ends_at, pause_ends_at, session_length, pause_length, tunnel, "
      "usage_rx_base, usage_tx_base, data_cap_bytes, data_cap_period, month_start_day FROM session "
      "WHERE id = 1",
      "SELECT wall, boottime, boot_id FROM trusted_clock WHERE id = 1",
      "SELECT at, interface, reason, detail FROM stops ORDER BY id DESC LIMIT 1",
      "SELECT at, interface, by, reason, until FROM refusals ORDER BY id DESC LIMIT 1",
      "COMMIT",
  };
  for (size_t i = 0; i < sizeof statements / sizeof *statements; i++) {
    if (read_rows(db, statements[i]) < 0) goto failed;
  }
  sqlite3_blob *blob;
  uint64_t snapshot_sum = 0;
  int snapshot_bytes = 0;
  if (sqlite3_blob_open(db, "main", "ledger_snapshot", "data", 1, 0, &blob) == SQLITE_OK) {
    snapshot_bytes = sqlite3_blob_bytes(blob);
    unsigned char piece[4096];
    for (int offset = 0; offset < snapshot_bytes; offset += (int)sizeof piece) {
      int n = snapshot_bytes - offset < (int)sizeof piece ? snapshot_bytes - offset : (int)sizeof piece;
      if (sqlite3_blob_read(blob, piece, n, offset) != SQLITE_OK) break;
      for (int i = 0; i < n; i++) snapshot_sum += piece[i];
    }
    sqlite3_blob_close(blob);
  }
  for (size_t i = 0; i < sizeof after_snapshot / sizeof *after_snapshot; i++) {
    if (read_rows(db, after_snapshot[i]) < 0) goto failed;
  }
  sqlite3_close(db);
  printf("%ld interfaces, %" PRIu64 " bytes, a %d-byte snapshot (%" PRIu64 ")\n", counted, bytes,
         snapshot_bytes, snapshot_sum);
  return 0;

failed:
  fprintf(stderr, "sqlite-floor: %s\n", sqlite3_errmsg(db));
  sqlite3_close(db);
  return 65;
}
