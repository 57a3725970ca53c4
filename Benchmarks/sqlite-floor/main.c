// The floor of `vpnstat status --json --db` when nothing is published beside the database: a
// plain C program that makes netlink-floor's dump, then the reads vpnstat's SQLite reader makes,
// on a connection opened the same way (read-only, `vfs=unix-none`, exclusive locking mode: its
// WAL index in its own memory, built from the log) with SQLite configured as vpnstat configures
// it (no memory statistics, no page-cache block). The same statements in the same order, each
// row's columns read; the ledger snapshot's bytes are read through the blob API and summed, not
// decoded. It prints the interface count first, as netlink-floor does.
//
// With `--record`, it is instead the plainest recorder that keeps what vpnstat's keeps: the link
// table once, then netlink-floor --every-second's RTM_GETSTATS dump every second into it, and
// every minute the save `record` makes, on a connection configured as its writer's — one
// transaction with the trusted clock's row, every moved link's `interfaces` row (19 columns,
// INSERT OR REPLACE), its 5-minute bucket (the upsert), a ledger snapshot of 138 bytes a link and
// its mark — then a published file of the same size written beside it and renamed into place,
// and SQLite's cache and the heap's free pages handed back. No ledger rules, no classes, no
// session: the floor of the recorder's CPU with its storage work, on a database vpnstat made
// (its schema and rows).
//
// Usage: sqlite-floor DATABASE
//        sqlite-floor --record DATABASE PUBLISHING_DIRECTORY

#include <CNetlinkFloor.h>
#include <inttypes.h>
#include <fcntl.h>
#include <malloc.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

enum { most_links = 8192, snapshot_bytes_per_link = 138 };
static struct floor_link links[most_links];
static uint64_t saved[most_links][4];
static uint64_t totals[most_links][4];
static uint64_t deltas[most_links][4];
static unsigned char snapshot[most_links * snapshot_bytes_per_link];
/// The kernel's counters are packets first; the rows take rx_bytes, tx_bytes, rx_packets,
/// tx_packets: the counter each column takes.
static const int column_order[4] = {2, 3, 0, 1};

/// The statements of a save, prepared once, in the order `save` names them.
enum { begin, trusted, row, stale, through, bucket, snapshot_row, mark, commit, statement_count };
static const char *const save_sql[statement_count] = {
    [begin] = "BEGIN IMMEDIATE",
    [trusted] = "INSERT OR REPLACE INTO trusted_clock (id, wall, boottime, boot_id) VALUES (1, ?, ?, ?)",
    [row] = "INSERT OR REPLACE INTO interfaces (name, class, first_seen_at, if_index, boot, width, rx_bytes, "
            "tx_bytes, rx_packets, tx_packets, sampled_at, boottime, total_rx_bytes, total_tx_bytes, "
            "total_rx_packets, total_tx_packets, resets, wraps, discarded) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [stale] = "DELETE FROM ledger_snapshot_current WHERE id = 1",
    [through] = "SELECT through FROM bucket_fold WHERE id = 1",
    [bucket] = "INSERT INTO buckets (name, granularity, start, class, rx_bytes, tx_bytes, rx_packets, tx_packets) "
               "VALUES (?1, 0, ?2, 'other', ?3, ?4, ?5, ?6) ON CONFLICT (granularity, start, name) DO UPDATE SET "
               "class = excluded.class, rx_bytes = rx_bytes + excluded.rx_bytes, tx_bytes = tx_bytes + "
               "excluded.tx_bytes, rx_packets = rx_packets + excluded.rx_packets, tx_packets = tx_packets + "
               "excluded.tx_packets",
    [snapshot_row] = "INSERT OR REPLACE INTO ledger_snapshot (id, data) VALUES (1, ?)",
    [mark] = "INSERT OR REPLACE INTO ledger_snapshot_current (id, token) VALUES (1, random())",
    [commit] = "COMMIT",
};

static int64_t clock_nanoseconds(clockid_t clock) {
  struct timespec now;
  clock_gettime(clock, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/// Runs `statement` with the values bound to it, then resets it; SQLITE_DONE or the error.
static int run(sqlite3_stmt *statement) {
  int rc;
  while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {}
  sqlite3_reset(statement);
  return rc;
}

/// What `record` saves every minute, as one transaction; then the published file.
static int save(sqlite3 *db, sqlite3_stmt *const *statements, long count, const char *boot_id,
                const char *published, const char *published_temporary) {
  int64_t wall = clock_nanoseconds(CLOCK_REALTIME);
  int64_t boottime = clock_nanoseconds(CLOCK_BOOTTIME);
  if (run(statements[begin]) != SQLITE_DONE) return -1;
  sqlite3_bind_int64(statements[trusted], 1, wall);
  sqlite3_bind_int64(statements[trusted], 2, boottime);
  sqlite3_bind_text(statements[trusted], 3, boot_id, -1, SQLITE_STATIC);
  if (run(statements[trusted]) != SQLITE_DONE) goto failed;
  int64_t bucket_start = wall / 1000000000 / 300 * 300;
  for (long i = 0; i < count; i++) {
    int moved = 0;
    for (int c = 0; c < 4; c++) {
      deltas[i][c] = links[i].counters[c] - saved[i][c];
      moved |= deltas[i][c] != 0;
      totals[i][c] += deltas[i][c];
    }
    if (!moved) continue;
    sqlite3_stmt *statement = statements[row];
    sqlite3_bind_blob(statement, 1, links[i].name, links[i].name_length, SQLITE_STATIC);
    sqlite3_bind_text(statement, 2, "other", -1, SQLITE_STATIC);
    sqlite3_bind_int64(statement, 3, wall);
    sqlite3_bind_int64(statement, 4, links[i].index);
    sqlite3_bind_int64(statement, 5, 1);
    sqlite3_bind_int64(statement, 6, 64);
    for (int c = 0; c < 4; c++) sqlite3_bind_int64(statement, 7 + c, (int64_t)links[i].counters[column_order[c]]);
    sqlite3_bind_int64(statement, 11, wall);
    sqlite3_bind_int64(statement, 12, boottime);
    for (int c = 0; c < 4; c++) sqlite3_bind_int64(statement, 13 + c, (int64_t)totals[i][column_order[c]]);
    for (int c = 17; c <= 19; c++) sqlite3_bind_int64(statement, c, 0);
    if (run(statement) != SQLITE_DONE) goto failed;
    memcpy(saved[i], links[i].counters, sizeof saved[i]);
  }
  if (run(statements[stale]) != SQLITE_DONE || run(statements[through]) != SQLITE_DONE) goto failed;
  for (long i = 0; i < count; i++) {
    if (!(deltas[i][0] | deltas[i][1] | deltas[i][2] | deltas[i][3])) continue;
    sqlite3_stmt *statement = statements[bucket];
    sqlite3_bind_blob(statement, 1, links[i].name, links[i].name_length, SQLITE_STATIC);
    sqlite3_bind_int64(statement, 2, bucket_start);
    for (int c = 0; c < 4; c++) sqlite3_bind_int64(statement, 3 + c, (int64_t)deltas[i][column_order[c]]);
    if (run(statement) != SQLITE_DONE) goto failed;
  }
  // The snapshot: each link's name, index, baseline and totals, laid out as plainly as can be.
  for (long i = 0; i < count; i++) {
    unsigned char *entry = snapshot + i * snapshot_bytes_per_link;
    memcpy(entry, links[i].name, 16);
    memcpy(entry + 16, &links[i].index, 4);
    memcpy(entry + 20, links[i].counters, 32);
    memcpy(entry + 52, totals[i], 32);
    memcpy(entry + 84, &wall, 8);
    memcpy(entry + 92, &boottime, 8);
  }
  size_t snapshot_length = (size_t)count * snapshot_bytes_per_link;
  sqlite3_bind_blob(statements[snapshot_row], 1, snapshot, (int)snapshot_length, SQLITE_STATIC);
  if (run(statements[snapshot_row]) != SQLITE_DONE || run(statements[mark]) != SQLITE_DONE) goto failed;
  if (run(statements[commit]) != SQLITE_DONE) goto failed;
  sqlite3_db_release_memory(db);
  int fd = open(published_temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  ssize_t written = write(fd, snapshot, snapshot_length);
  close(fd);
  if (written != (ssize_t)snapshot_length || rename(published_temporary, published) != 0) return -1;
  // What the save used goes back to the kernel until the next one, as vpnstat's recorder gives it.
  malloc_trim(0);
  return 0;

failed:
  fprintf(stderr, "sqlite-floor: save: %s\n", sqlite3_errmsg(db));
  sqlite3_exec(db, "ROLLBACK", 0, 0, 0);
  return -1;
}

static int record(const char *database, const char *directory) {
  int fd = netlink_floor_open();
  if (fd < 0) return 69;
  long count = netlink_floor_link_table(fd, links, most_links);
  if (count <= 0) return 69;
  char boot_id[64] = "";
  int boot = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (boot >= 0) {
    ssize_t n = read(boot, boot_id, 36);
    boot_id[n > 0 ? n : 0] = 0;
    close(boot);
  }
  char published[4200], published_temporary[4300], uri[4200];
  snprintf(published, sizeof published, "%s/record-floor.published", directory);
  snprintf(published_temporary, sizeof published_temporary, "%s.new", published);
  snprintf(uri, sizeof uri, "file:%s?vfs=unix-none", database);
  sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  sqlite3 *db;
  if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, 0) != SQLITE_OK) return 66;
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, (int *)0);
  if (sqlite3_exec(db,
                   "PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size = -512; PRAGMA synchronous=NORMAL; "
                   "PRAGMA journal_size_limit=0",
                   0, 0, 0) != SQLITE_OK)
    return 66;
  sqlite3_stmt *statements[statement_count];
  for (int i = 0; i < statement_count; i++) {
    if (sqlite3_prepare_v3(db, save_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &statements[i], 0) != SQLITE_OK) {
      fprintf(stderr, "sqlite-floor: %s\n", sqlite3_errmsg(db));
      return 65;
    }
  }
  if (netlink_floor_sample_into(fd, links, count) < 0) return 69;
  for (long i = 0; i < count; i++) memcpy(saved[i], links[i].counters, sizeof saved[i]);
  // Every second on the second of CLOCK_MONOTONIC, as a timer would wake it; a save every 60th.
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (long tick = 1;; tick++) {
    next.tv_sec += 1;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, 0) != 0) {}
    if (netlink_floor_sample_into(fd, links, count) < 0) return 69;
    if (tick % 60 == 0 && save(db, statements, count, boot_id, published, published_temporary) != 0) return 73;
  }
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--record") == 0) return record(argv[2], argv[3]);
  if (argc != 2) {
    fprintf(stderr, "usage: sqlite-floor DATABASE\n       sqlite-floor --record DATABASE PUBLISHING_DIRECTORY\n");
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
