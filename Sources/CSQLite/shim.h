#include <sqlite3.h>

/// SQLite's page caches without the block of 20 pages each one allocates at its first page
/// (SQLITE_CONFIG_PAGECACHE with no memory: its `nInitPage` is then 0): a writer that hands its
/// cache back after every save (`Store.releaseCache`) frees its pages, and that block would stay,
/// touched, for the connection's life. Process-wide; takes effect only before SQLite's first use.
/// sqlite3_config is variadic, which Swift cannot call.
static inline int csqlite_page_cache_without_initial_block(void) {
  return sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
}
