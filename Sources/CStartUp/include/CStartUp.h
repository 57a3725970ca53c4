// Nothing to import: this target only replaces what the static vpnstat's libraries do before
// `main` (start-up.c); the executable links it and calls none of it.
