#include <zlib.h>

// deflateInit2 is a macro (it passes the header's version and the stream's size): wrapped, with
// the window bits that ask for a gzip header and trailer (RFC 1952) instead of zlib's.
static inline int czlib_gzip_init(z_streamp stream, int level) {
  return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}
