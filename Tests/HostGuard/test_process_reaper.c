// Every process the tests start ends with the test process, however it ends (a timed-out CI job
// killed with SIGKILL, a crash, ^C): a test's OpenVPN pair, wireguard-go, NetworkManager and its
// D-Bus, a tmux server or a recorder must not run on for hours on a shared machine.
//
// Killing children when the parent dies is what PR_SET_PDEATHSIG is for, but it cannot do it
// here: it fires when the *thread* that started the child ends (the test's pool threads end when
// idle), it is cleared when a child changes its user (setpriv --reuid=nobody), and it is not
// inherited by a daemon's fork (wireguard-go, dbus-daemon --fork and tmux detach from the one
// that started them). So the test process marks its environment instead, which every descendant
// inherits through fork and exec, daemons included: VPNSTAT_TEST_PROCESS=<its pid>. A reaper,
// forked when the test bundle loads (one thread then), waits on a pipe whose only write end the
// test process holds (close-on-exec: no child keeps it), so the read ends when the test process
// does, whatever the signal. Then it kills every process whose environment carries the mark and
// removes the network namespaces the test process made (`vpnst-<pid>-…`, TestNamespace's names).
// The mark names this test process alone: a process of another run, or of the machine, is never
// taken for one of ours, and a reused pid carries no mark.

#define _GNU_SOURCE
#include "host_guard.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

static const char mark_name[] = "VPNSTAT_TEST_PROCESS";

// Whether /proc/PID/environ holds the entry `mark` ("NAME=VALUE"), read in full: a test sets
// long variables too.
static int carries_mark(const char *pid, const char *mark) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%s/environ", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t capacity = 65536, length = 0;
  char *text = malloc(capacity + 1);
  for (;;) {
    if (text == NULL) break;
    if (length == capacity) {
      capacity *= 2;
      char *grown = realloc(text, capacity + 1);
      if (grown == NULL) break;
      text = grown;
    }
    ssize_t n = read(fd, text + length, capacity - length);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    length += (size_t)n;
  }
  close(fd);
  if (text == NULL) return 0;
  text[length] = 0;
  int found = 0;
  for (size_t at = 0; at < length && !found; at += strlen(text + at) + 1) found = strcmp(text + at, mark) == 0;
  free(text);
  return found;
}

// Sends SIGKILL to every process carrying `mark` but this one; returns how many.
static int kill_marked(const char *mark) {
  DIR *proc = opendir("/proc");
  if (proc == NULL) return 0;
  int killed = 0;
  pid_t self = getpid();
  struct dirent *entry;
  while ((entry = readdir(proc)) != NULL) {
    if (!isdigit((unsigned char)entry->d_name[0])) continue;
    pid_t pid = (pid_t)atoi(entry->d_name);
    if (pid == self || !carries_mark(entry->d_name, mark)) continue;
    // Named, so whoever reads the run can find the test that left it.
    char path[64], command[64] = "?";
    snprintf(path, sizeof path, "/proc/%s/cmdline", entry->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t n = read(fd, command, sizeof command - 1);
      command[n > 0 ? n : 0] = 0;
      for (ssize_t i = 0; i + 1 < n; i++) if (command[i] == 0) command[i] = ' ';
      close(fd);
    }
    if (kill(pid, SIGKILL) == 0) {
      killed++;
      fprintf(stderr, "test-process reaper: killed %d (%s)\n", (int)pid, command);
    }
  }
  closedir(proc);
  return killed;
}

// Removes the network namespaces named after `test` (what `ip netns del` does).
static int remove_namespaces(pid_t test) {
  char prefix[32];
  snprintf(prefix, sizeof prefix, "vpnst-%d-", (int)test);
  DIR *directory = opendir("/run/netns");
  if (directory == NULL) return 0;
  int removed = 0;
  struct dirent *entry;
  while ((entry = readdir(directory)) != NULL) {
    if (strncmp(entry->d_name, prefix, strlen(prefix)) != 0) continue;
    char path[512];
    snprintf(path, sizeof path, "/run/netns/%s", entry->d_name);
    umount2(path, MNT_DETACH);
    if (unlink(path) == 0) removed++;
  }
  closedir(directory);
  return removed;
}

static void reap_after(int pipe_end, pid_t test) {
  // Not stopped by what stops the run: ^C reaches the terminal's whole process group.
  setsid();
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    if (null > 2) close(null);
  }
  char byte;
  for (;;) {
    ssize_t n = read(pipe_end, &byte, 1);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  char mark[64];
  snprintf(mark, sizeof mark, "%s=%d", mark_name, (int)test);
  // A shell in a loop may start one more child between two passes: pass until none is left.
  int killed = 0;
  for (int pass = 0; pass < 100; pass++) {
    int now = kill_marked(mark);
    if (now == 0) break;
    killed += now;
    usleep(10000);
  }
  int removed = remove_namespaces(test);
  if (killed > 0 || removed > 0) {
    fprintf(stderr, "test-process reaper: test process %d ended; killed %d processes it left, removed %d namespaces\n",
            (int)test, killed, removed);
  }
  _exit(0);
}

static pid_t reaper_pid;

int vpnstat_test_process_reaper(void) { return (int)reaper_pid; }

__attribute__((constructor)) static void start_reaper(void) {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0) return;
  pid_t test = getpid();
  pid_t child = fork();
  if (child == 0) {
    close(ends[1]);
    reap_after(ends[0], test);
  }
  close(ends[0]);
  if (child < 0) {
    close(ends[1]);
    return;
  }
  reaper_pid = child;
  // The write end stays open, unused, for the life of the process.
  char value[16];
  snprintf(value, sizeof value, "%d", (int)test);
  setenv(mark_name, value, 1);
}
