#include "share_ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct ledger_record {
  int32_t pid; /* 0: free */
  int32_t pad;
  uint64_t start; /* /proc/<pid>/stat starttime: a reused pid is another process */
  uint64_t bytes;
};

struct ledger_file {
  uint32_t magic;
  uint32_t version;
  struct ledger_record records[SHARE_LEDGER_SLOTS];
};

struct share_ledger {
  int fd; /* -1: process-local */
  struct ledger_file* file;
  struct ledger_file local;
};

#define LEDGER_MAGIC 0x43475348u /* "CGSH" */

static uint64_t start_time_of(int pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  /* Field 22; the command (field 2) may hold spaces, so count from its closing ')'. */
  char* p = strrchr(buf, ')');
  if (!p) return 0;
  int field = 2;
  for (; *p && field < 22; ++p) {
    if (*p == ' ') ++field;
  }
  return strtoull(p, NULL, 10);
}

static int alive(const struct ledger_record* r) {
  if (kill(r->pid, 0) != 0 && errno == ESRCH) return 0;
  uint64_t start = start_time_of(r->pid);
  return start == 0 || r->start == 0 || start == r->start;
}

static void lock(struct share_ledger* l, int type) {
  if (l->fd < 0) return;
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = (short)type;
  fl.l_whence = SEEK_SET;
  while (fcntl(l->fd, F_SETLKW, &fl) != 0 && errno == EINTR) {
  }
}

struct share_ledger* share_ledger_open(const char* path) {
  struct share_ledger* l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->fd = -1;
  l->file = &l->local;
  if (!path || !*path) return l;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return l;
  struct stat st;
  if (fstat(fd, &st) != 0 || ((size_t)st.st_size < sizeof(struct ledger_file) &&
                              ftruncate(fd, (off_t)sizeof(struct ledger_file)) != 0)) {
    close(fd);
    return l;
  }
  void* m = mmap(NULL, sizeof(struct ledger_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    close(fd);
    return l;
  }
  l->fd = fd;
  l->file = m;
  lock(l, F_WRLCK);
  if (l->file->magic != LEDGER_MAGIC) {
    memset(l->file, 0, sizeof *l->file);
    l->file->magic = LEDGER_MAGIC;
    l->file->version = 1;
  }
  lock(l, F_UNLCK);
  return l;
}

/* Under the lock: reaps dead processes' records and returns the total. */
static uint64_t reap_and_sum(struct share_ledger* l) {
  uint64_t sum = 0;
  for (int i = 0; i < SHARE_LEDGER_SLOTS; ++i) {
    struct ledger_record* r = &l->file->records[i];
    if (r->pid == 0) continue;
    if (l->fd >= 0 && !alive(r)) {
      memset(r, 0, sizeof *r);
      continue;
    }
    sum += r->bytes;
  }
  return sum;
}

static struct ledger_record* mine(struct share_ledger* l, int create) {
  int pid = getpid();
  struct ledger_record* free_slot = NULL;
  for (int i = 0; i < SHARE_LEDGER_SLOTS; ++i) {
    struct ledger_record* r = &l->file->records[i];
    if (r->pid == pid) return r;
    if (r->pid == 0 && !free_slot) free_slot = r;
  }
  if (!create || !free_slot) return NULL;
  free_slot->pid = pid;
  free_slot->start = start_time_of(pid);
  free_slot->bytes = 0;
  return free_slot;
}

int share_ledger_reserve(struct share_ledger* l, uint64_t bytes, uint64_t limit) {
  lock(l, F_WRLCK);
  uint64_t used = reap_and_sum(l);
  struct ledger_record* r = NULL;
  int ok = used <= limit && bytes <= limit - used && (r = mine(l, 1)) != NULL;
  if (ok) r->bytes += bytes;
  lock(l, F_UNLCK);
  return ok ? 0 : -1;
}

void share_ledger_release(struct share_ledger* l, uint64_t bytes) {
  lock(l, F_WRLCK);
  struct ledger_record* r = mine(l, 0);
  if (r) r->bytes -= bytes < r->bytes ? bytes : r->bytes;
  lock(l, F_UNLCK);
}

uint64_t share_ledger_used(struct share_ledger* l) {
  lock(l, F_WRLCK);
  uint64_t used = reap_and_sum(l);
  lock(l, F_UNLCK);
  return used;
}
