/*
 * memlimit.c — the memory limit the kernel enforces on this process (memlimit.h).
 *
 * cgroups: /proc/self/cgroup names the process's cgroup, "0::/path" for v2 and
 * "N:memory:/path" for v1's memory controller; the limit is the smallest of that
 * cgroup's and its ancestors' (memory.max "max" or v1's page-rounded 2^63 mean none),
 * read under the mount point (/sys/fs/cgroup for v2, /sys/fs/cgroup/unified on hybrid
 * systems, /sys/fs/cgroup/memory for v1). What the cgroup already holds is its usage
 * (memory.current, memory.usage_in_bytes) less its inactive file cache (reclaimable,
 * as `docker stats` counts it). RLIMIT_AS is compared with the address space
 * (VmSize). A file that cannot be read is no limit: the check never fails a run by
 * itself.
 */
#include "common/memlimit.h"
#include "common/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* The first unsigned number in file `path` after `key` (NULL: at its start) */
static int read_u64(const char *path, const char *key, uint64_t *out)
{
	FILE *f = fopen(path, "r");
	char line[256];
	int rc = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		const char *p = line;
		if (key) {
			size_t k = strlen(key);
			if (strncmp(line, key, k) ||
			    (line[k] != ' ' && line[k] != ':' && line[k] != '\t'))
				continue;
			p = line + k + 1;
		}
		char *end;
		while (*p == ' ' || *p == '\t')
			p++;
		unsigned long long v = strtoull(p, &end, 10);
		if (end != p) {
			*out = v;
			rc = 0;
		}
		break;
	}
	fclose(f);
	return rc;
}

/* /proc/self/status's "key: N kB" in bytes */
static int status_kb(const char *key, uint64_t *out)
{
	uint64_t kb;
	if (read_u64("/proc/self/status", key, &kb))
		return -1;
	*out = kb * 1024;
	return 0;
}

int _sf_rss(uint64_t *now, uint64_t *peak)
{
	*now = *peak = 0;
	return status_kb("VmRSS", now) || status_kb("VmHWM", peak) ? -1 : 0;
}

/* Considers the cgroup `dir` (a directory under a mount) and its ancestors down to the
 * mount `root`: the smallest limit file `lim` with its usage */
static void cgroup_walk(struct _sf_memlimit *out, const char *root, const char *rel, int v2)
{
	char dir[512];
	snprintf(dir, sizeof dir, "%s%s", root, rel);
	for (;;) {
		char p[600];
		uint64_t lim = 0, use = 0, inactive = 0;
		snprintf(p, sizeof p, "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
		/* "max" (v2) reads as no number: no limit here */
		if (!read_u64(p, NULL, &lim) && lim < ((uint64_t)1 << 62) &&
		    (!out->found || lim < out->limit)) {
			snprintf(p, sizeof p, "%s/%s", dir,
			         v2 ? "memory.current" : "memory.usage_in_bytes");
			if (!read_u64(p, NULL, &use)) {
				snprintf(p, sizeof p, "%s/memory.stat", dir);
				if (read_u64(p, v2 ? "inactive_file" : "total_inactive_file",
				             &inactive))
					inactive = 0;
				out->found = 1;
				out->limit = lim;
				out->used = use > inactive ? use - inactive : 0;
				snprintf(out->what, sizeof out->what, "cgroup %s %s of %s",
				         v2 ? "v2" : "v1",
				         v2 ? "memory.max" : "memory.limit_in_bytes", dir);
			}
		}
		size_t n = strlen(dir), r = strlen(root);
		if (n <= r)
			break;
		char *slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < r)
			break;
		*slash = '\0';
	}
}

void _sf_memlimit_get(struct _sf_memlimit *out)
{
	memset(out, 0, sizeof *out);
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[512];
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctl = c1 + 1, *rel = c2 + 1;
		if (!strcmp(rel, "/"))
			rel = "";
		if (!*ctl) { /* v2: a pure mount, or the unified one of a hybrid system */
			cgroup_walk(out, "/sys/fs/cgroup", rel, 1);
			cgroup_walk(out, "/sys/fs/cgroup/unified", rel, 1);
			continue;
		}
		/* v1: a comma list of controllers */
		char ctls[128];
		snprintf(ctls, sizeof ctls, ",%s,", ctl);
		if (strstr(ctls, ",memory,"))
			cgroup_walk(out, "/sys/fs/cgroup/memory", rel, 0);
	}
	if (f)
		fclose(f);
	struct rlimit rl;
	uint64_t vm = 0;
	if (!getrlimit(RLIMIT_AS, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    !status_kb("VmSize", &vm) &&
	    (!out->found || (uint64_t)rl.rlim_cur - (vm < rl.rlim_cur ? vm : rl.rlim_cur) <
	                        out->limit - (out->used < out->limit ? out->used : out->limit))) {
		out->found = 1;
		out->limit = (uint64_t)rl.rlim_cur;
		out->used = vm;
		snprintf(out->what, sizeof out->what, "RLIMIT_AS (prlimit --as, ulimit -v)");
	}
}

SF_API int sf_memory_info(struct sf_memory_info *out)
{
	struct _sf_memlimit lim;
	if (!out)
		return SF_ERR(SF_ERR_INVALID, "sf_memory_info: out is NULL");
	memset(out, 0, sizeof *out);
	(void)_sf_rss(&out->rss, &out->peak_rss);
	_sf_memlimit_get(&lim);
	out->limited = lim.found;
	out->limit = lim.limit;
	out->used = lim.used;
	snprintf(out->limit_what, sizeof out->limit_what, "%s", lim.what);
	return SF_OK;
}
