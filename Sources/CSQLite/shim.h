#include <sqlite3.h>

/// SQLite's process-wide settings, then SQLite initialized, after which they cannot change:
/// - page caches without the block of 20 pages each one allocates at its first page
///   (SQLITE_CONFIG_PAGECACHE with no memory: its `nInitPage` is then 0): a writer that hands its
///   cache back after every save (`Store.releaseCache`) frees its pages, and that block would
///   stay, touched, for the connection's life;
/// - memory statistics only when `memory_statistics` (SQLITE_CONFIG_MEMSTATUS): kept, every
///   allocation and free takes a process-wide mutex to count itself, some 14 % of what a reader
///   with nothing published spends in SQLite.
/// sqlite3_config is variadic, which Swift cannot call. Returns sqlite3_initialize's result, or
/// SQLITE_MISUSE when SQLite was already in use (the settings then stay as they were).
static inline int csqlite_configure(int memory_statistics) {
  int rc = sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, memory_statistics);
  if (rc != SQLITE_OK) return rc;
  return sqlite3_initialize();
}

/// Closing the connection checkpoints nothing (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE): a writer opens
/// and closes its connection whenever another process wrote, and a checkpoint at each close would
/// copy every page its WAL held into the file, the write a WAL exists to save. sqlite3_db_config
/// is variadic, which Swift cannot call.
static inline int csqlite_no_checkpoint_on_close(sqlite3 *db) {
  return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}

/// Triggers do not fire on this connection (SQLITE_DBCONFIG_ENABLE_TRIGGER off): the writer does
/// once per save what a trigger did once per row. sqlite3_db_config is variadic, which Swift
/// cannot call.
static inline int csqlite_without_triggers(sqlite3 *db) {
  return sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, (int *)0);
}
