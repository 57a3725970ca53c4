// CLinux is mostly header-only; what needs _GNU_SOURCE lives here.
#define _GNU_SOURCE
#include <sys/socket.h>

int clinux_peer_credentials(int fd, int *pid, unsigned int *uid) {
  struct ucred credentials;
  socklen_t length = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
  *pid = credentials.pid;
  *uid = credentials.uid;
  return 0;
}

#include <link.h>
#include <stdint.h>

#include "CLinux.h"

struct clinux_segments {
  struct clinux_segment *segments;
  int capacity;
  int count;
};

static int clinux_collect_segments(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct clinux_segments *found = data;
  for (int i = 0; i < info->dlpi_phnum && found->count < found->capacity; i++) {
    const ElfW(Phdr) *header = &info->dlpi_phdr[i];
    struct clinux_segment *segment = &found->segments[found->count++];
    segment->start = info->dlpi_addr + header->p_vaddr;
    segment->end = segment->start + header->p_memsz;
    segment->type = header->p_type;
    segment->flags = header->p_flags;
  }
  return 1;  // the first object is the program itself
}

int clinux_program_segments(struct clinux_segment *segments, int capacity) {
  struct clinux_segments found = {segments, capacity, 0};
  dl_iterate_phdr(clinux_collect_segments, &found);
  return found.count;
}

// The arguments, as glibc hands them to the program's initialisers (it calls each function of
// `.init_array` with argc, argv and envp, in static executables too).
//
// The Swift runtime's own way to find them (CommandLine.cpp, linked into every static Swift
// executable) is a static constructor that opens /proc/self/maps and parses every line with
// sscanf to find the stack, then walks back from `environ`: some 56,000 instructions and five
// system calls before `main`, in every vpnstat process, whatever it does. The two functions below
// are the only symbols of that object, so with them defined here the linker never takes it from
// libswiftCore.a, and its constructor never runs. (A dynamically linked test bundle uses its
// libswiftCore.so's own.)
static char **clinux_argv;
static int clinux_argc;

__attribute__((constructor(101), used)) static void clinux_keep_arguments(int argc, char **argv, char **envp) {
  (void)envp;
  clinux_argc = argc;
  clinux_argv = argv;
}

__attribute__((swiftcall)) char **_swift_stdlib_getUnsafeArgvArgc(int *outArgLen) {
  if (!clinux_argv) {
    // Asked before the initialisers ran (nothing in vpnstat does): the kernel lays argv out right
    // below the environment, its NULL between, and argc below argv.
    extern char **environ;
    char **pointer = environ - 1;
    while ((void *)pointer[-1] >= (void *)environ) pointer--;
    clinux_argc = (int)(intptr_t)pointer[-1];
    clinux_argv = pointer;
  }
  *outArgLen = clinux_argc;
  return clinux_argv;
}

__attribute__((swiftcall)) void _swift_stdlib_overrideUnsafeArgvArgc(char **argv, int argc) {
  clinux_argv = argv;
  clinux_argc = argc;
}
