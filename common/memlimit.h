/*
 * memlimit.h — the memory this process may still use, as the kernel will enforce it
 * (common/memlimit.c): the tightest of its cgroup's memory limit (v2 memory.max, v1
 * memory.limit_in_bytes, on its cgroup and every ancestor) and RLIMIT_AS; and its
 * resident set (now and at its peak). No StarPU, no MPI: sf_model_create compares
 * its plan with it (SHARDFLOW_MEMORY_CHECK), the examples print the peak.
 */
#ifndef SF_COMMON_MEMLIMIT_H
#define SF_COMMON_MEMLIMIT_H

#include <stddef.h>
#include <stdint.h>

struct _sf_memlimit {
	int found;      /* 0: no limit applies (the other fields are 0) */
	uint64_t limit; /* bytes */
	uint64_t used;  /* bytes already counted against it (a cgroup's usage less
	                   its inactive file cache; the address space for RLIMIT_AS) */
	char what[600]; /* "cgroup v1 memory.limit_in_bytes of /sys/fs/cgroup/..." */
};

/* The tightest limit on this process's memory; never fails (what cannot be read is
 * no limit). */
void _sf_memlimit_get(struct _sf_memlimit *out);

/* This process's resident set now and its peak (VmRSS, VmHWM of /proc/self/status),
 * bytes; 0 on failure. */
int _sf_rss(uint64_t *now, uint64_t *peak);

#endif
