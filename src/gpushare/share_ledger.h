/* A job's device memory across its processes: a small file in the run directory, mapped
 * shared and locked with fcntl, one record per process. A process's record counts while the
 * process lives; a dead process's record is reaped by the next reservation (so a crash
 * releases its memory). Usage never goes negative: a release takes at most what the record
 * holds. */
#ifndef CORRAL_GPUSHARE_SHARE_LEDGER_H
#define CORRAL_GPUSHARE_SHARE_LEDGER_H

#include <stdint.h>

#define SHARE_LEDGER_SLOTS 256

struct share_ledger;

/* Opens (creating) the ledger at path; NULL path or failure: a process-local ledger. */
struct share_ledger* share_ledger_open(const char* path);
/* Reserves bytes for this process unless the job's total would pass limit: 0 on success. */
int share_ledger_reserve(struct share_ledger* l, uint64_t bytes, uint64_t limit);
void share_ledger_release(struct share_ledger* l, uint64_t bytes);
/* The job's total now (dead processes reaped). */
uint64_t share_ledger_used(struct share_ledger* l);

#endif
