/*
 * config.c — the SHARDFLOW_* environment, read once into struct sf_config.
 *
 * One typed getter per kind of variable; a malformed value is an error naming the
 * variable, the value and what is accepted, and an unknown SHARDFLOW_* variable is
 * an error too (a misspelt SHARDFLOW_PREFETCH_DEPHT silently ignored would be worse).
 */
#include "scheduler/runtime.h"

#include <stdio.h>

#include <errno.h>
#include <stdint.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern char **environ;

static const char *const known_vars[] = {
    "SHARDFLOW_PREFETCH_DEPTH", "SHARDFLOW_BACKWARD_PREFETCH",
    "SHARDFLOW_SHARDING",       "SHARDFLOW_LOG",
    "SHARDFLOW_TRACE",          "SHARDFLOW_SKIP",
    "SHARDFLOW_COMM_CHUNK",     "SHARDFLOW_COMM_TIMEOUT",
    "SHARDFLOW_COMM",           "SHARDFLOW_OPTIMIZER_ON",
    "SHARDFLOW_GRAD_ACCUM",     "SHARDFLOW_ACCUM_MODE",
    "SHARDFLOW_RECOMPUTE",      "SHARDFLOW_PARAM_DTYPE",
    "SHARDFLOW_REDUCE_DTYPE",   "SHARDFLOW_NODE_SIZE",
    "SHARDFLOW_MEMORY_CHECK",
};
#define NKNOWN (sizeof known_vars / sizeof known_vars[0])

/* The names a table gives the values of an enum, in its order: one per value, so that
 * get_choice's index is the value (a table sized by the count would let a missing name
 * be NULL). */
#define NAMES_OF(names, count)                                                                     \
	_Static_assert(sizeof names / sizeof names[0] == (count), #names ": one name per value")

const char *const _sf_sharding_names[] = {"full", "grad_op", "none", "hybrid"};
const char *const _sf_optimizer_names[] = {"sgd", "adamw", "lion"};
NAMES_OF(_sf_sharding_names, SF_SHARD_COUNT);
NAMES_OF(_sf_optimizer_names, SF_OPT_COUNT);

int _sf_parse_long(const char *s, long lo, long hi, long *out)
{
	/* strictly: an optional '-' and decimal digits, nothing else (no blanks, no '+',
	 * no empty string), as every integer variable is read */
	const char *p = s && *s == '-' ? s + 1 : s;
	if (!p || !*p)
		return -1;
	for (const char *q = p; *q; q++)
		if (*q < '0' || *q > '9')
			return -1;
	errno = 0;
	long v = strtol(s, NULL, 10);
	if (errno != 0 || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int get_int(const char *var, int lo, int hi, int def, int *out)
{
	const char *s = getenv(var);
	long v = def;
	*out = def;
	if (!s)
		return SF_OK;
	if (_sf_parse_long(s, lo, hi, &v) < 0)
		return _sf_err(SF_ERR_CONFIG, NULL, 0,
		               "%s=\"%s\" is invalid: accepted values are integers from %d to %d "
		               "(default %d)",
		               var, s, lo, hi, def);
	*out = (int)v;
	return SF_OK;
}

/* choices: n names; the value's index is returned in *out. */
static int get_choice(const char *var, const char *const *choices, int n, int def, int *out)
{
	const char *s = getenv(var);
	*out = def;
	if (!s)
		return SF_OK;
	for (int i = 0; i < n; i++)
		if (strcmp(s, choices[i]) == 0) {
			*out = i;
			return SF_OK;
		}
	char list[256] = "";
	for (int i = 0; i < n; i++) {
		strncat(list, choices[i], sizeof list - strlen(list) - 1);
		if (i + 1 < n)
			strncat(list, ", ", sizeof list - strlen(list) - 1);
	}
	return _sf_err(SF_ERR_CONFIG, NULL, 0,
	               "%s=\"%s\" is invalid: accepted values are %s (default %s)", var, s, list,
	               choices[def]);
}

/* get_choice into a field of enum type (the index arrives as an int); a refusal jumps to
 * the caller's fail label, as SF_CHECK does. */
#define CHOICE_CHECK(var, choices, n, def, field)                                                  \
	do {                                                                                       \
		int choice_;                                                                       \
		SF_CHECK(get_choice((var), (choices), (n), (def), &choice_));                      \
		(field) = choice_;                                                                 \
	} while (0)

static int check_unknown(void)
{
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "SHARDFLOW_", 10) != 0)
			continue;
		size_t len = strcspn(*e, "=");
		bool known = false;
		for (size_t k = 0; k < NKNOWN; k++)
			if (strlen(known_vars[k]) == len && strncmp(*e, known_vars[k], len) == 0)
				known = true;
		if (!known) {
			char list[512] = "";
			for (size_t k = 0; k < NKNOWN; k++)
				snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
				         k ? ", " : "", known_vars[k]);
			return _sf_err(SF_ERR_CONFIG, NULL, 0,
			               "%.*s is not a shardflow variable: known variables are %s",
			               (int)len, *e, list);
		}
	}
	return SF_OK;
}

/* A path prefix whose directory exists: the trace files are <prefix>.rank<r>.json... */
static int get_prefix(const char *var, char *out, size_t len)
{
	const char *s = getenv(var);
	out[0] = '\0';
	if (!s)
		return SF_OK;
	if (!s[0] || strlen(s) + 32 > len || s[strlen(s) - 1] == '/')
		return _sf_err(SF_ERR_CONFIG, NULL, 0,
		               "%s=\"%s\" is invalid: accepted values are a file path prefix of at "
		               "most %zu characters, not ending in '/', in an existing directory "
		               "(default unset: no trace)",
		               var, s, len - 32);
	char dir[SF_PATH_MAX];
	snprintf(dir, sizeof dir, "%s", s);
	const char *d = dirname(dir);
	struct stat st;
	if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode))
		return _sf_err(SF_ERR_CONFIG, NULL, 0,
		               "%s=\"%s\" is invalid: directory \"%s\" does not exist; accepted "
		               "values are a file path prefix in an existing directory (default "
		               "unset: no trace)",
		               var, s, d);
	snprintf(out, len, "%s", s);
	return SF_OK;
}

SF_API int sf_config_from_env(struct sf_config *out)
{
	static const char *const bwd[] = {"pre", "post", "none"};
	static const char *const logl[] = {"error", "warn", "info", "debug"};
	static const char *const skip[] = {"none", "comm", "compute"};
	static const char *const comm[] = {"mpi", "nccl"};
	static const char *const opt_on[] = {"device", "host"};
	static const char *const accum[] = {"sharded", "local"};
	static const char *const recompute[] = {"none", "units"};
	static const char *const dtype[] = {"fp32", "bf16"};
	static const char *const onoff[] = {"off", "on"};
	NAMES_OF(bwd, SF_BWD_COUNT);
	NAMES_OF(logl, SF_LOG_COUNT);
	NAMES_OF(skip, SF_SKIP_COUNT);
	NAMES_OF(comm, SF_COMM_COUNT);
	NAMES_OF(opt_on, SF_OPT_ON_COUNT);
	NAMES_OF(accum, SF_ACCUM_COUNT);
	NAMES_OF(recompute, SF_RECOMPUTE_COUNT);
	NAMES_OF(dtype, SF_DTYPE_COUNT);
	int rc = SF_OK;
	struct sf_config c;

	if (!out)
		return SF_ERR(SF_ERR_INVALID, "sf_config_from_env: out is NULL");
	/* SHARDFLOW_LOG first, so that it governs the messages of the others. */
	CHOICE_CHECK("SHARDFLOW_LOG", logl, SF_LOG_COUNT, SF_LOG_WARN, c.log_level);
	SF_CHECK(check_unknown());
	SF_CHECK(get_int("SHARDFLOW_PREFETCH_DEPTH", 0, SF_MAX_DEPTH, 2, &c.prefetch_depth));
	CHOICE_CHECK("SHARDFLOW_BACKWARD_PREFETCH", bwd, SF_BWD_COUNT, SF_BWD_PRE, c.bwd_prefetch);
	CHOICE_CHECK("SHARDFLOW_SHARDING", _sf_sharding_names, SF_SHARD_COUNT, SF_SHARD_FULL,
	             c.sharding);
	SF_CHECK(get_prefix("SHARDFLOW_TRACE", c.trace, sizeof c.trace));
	CHOICE_CHECK("SHARDFLOW_SKIP", skip, SF_SKIP_COUNT, SF_SKIP_NONE, c.skip);
	SF_CHECK(get_int("SHARDFLOW_COMM_CHUNK", 0, SF_MAX_COMM_CHUNK, SF_DEFAULT_COMM_CHUNK,
	                 &c.comm_chunk));
	SF_CHECK(get_int("SHARDFLOW_COMM_TIMEOUT", 0, SF_MAX_COMM_TIMEOUT,
	                 SF_DEFAULT_COMM_TIMEOUT, &c.comm_timeout));
	CHOICE_CHECK("SHARDFLOW_COMM", comm, SF_COMM_COUNT, SF_COMM_MPI, c.comm);
	CHOICE_CHECK("SHARDFLOW_OPTIMIZER_ON", opt_on, SF_OPT_ON_COUNT, SF_OPT_ON_DEVICE,
	             c.optimizer_on);
	SF_CHECK(get_int("SHARDFLOW_GRAD_ACCUM", 1, SF_MAX_GRAD_ACCUM, 1, &c.grad_accum));
	CHOICE_CHECK("SHARDFLOW_ACCUM_MODE", accum, SF_ACCUM_COUNT, SF_ACCUM_SHARDED, c.accum_mode);
	CHOICE_CHECK("SHARDFLOW_RECOMPUTE", recompute, SF_RECOMPUTE_COUNT, SF_RECOMPUTE_NONE,
	             c.recompute);
	CHOICE_CHECK("SHARDFLOW_PARAM_DTYPE", dtype, SF_DTYPE_COUNT, SF_DTYPE_FP32, c.param_dtype);
	CHOICE_CHECK("SHARDFLOW_REDUCE_DTYPE", dtype, SF_DTYPE_COUNT, SF_DTYPE_FP32,
	             c.reduce_dtype);
	SF_CHECK(get_int("SHARDFLOW_NODE_SIZE", 0, 1 << 20, 0, &c.node_size));
	CHOICE_CHECK("SHARDFLOW_MEMORY_CHECK", onoff, 2, 1, c.memory_check);
	if (c.comm_chunk > 0 && c.comm_chunk < SF_MIN_COMM_CHUNK)
		return _sf_err(SF_ERR_CONFIG, NULL, 0,
		               "SHARDFLOW_COMM_CHUNK=\"%s\" is invalid: accepted values are 0 (one "
		               "message per ring step) or a number of bytes from %d to %d "
		               "(default %d)",
		               getenv("SHARDFLOW_COMM_CHUNK"), SF_MIN_COMM_CHUNK, SF_MAX_COMM_CHUNK,
		               SF_DEFAULT_COMM_CHUNK);
	*out = c;
	return SF_OK;
fail:
	return rc;
}

void _sf_config_log(void)
{
	for (size_t k = 0; k < NKNOWN; k++) {
		const char *s = getenv(known_vars[k]);
		if (s)
			_sf_log(SF_LOG_INFO, "%s=%s", known_vars[k], s);
	}
}

/* ---- StarPU's own variables ---------------------------------------------------------- */

/* A list of CPU ids as StarPU reads STARPU_WORKERS_CPUID: entries N, N-M (M >= N) or N-
 * (to the last CPU), separated by blanks or commas; at least one. */
static bool cpu_list_ok(const char *s)
{
	int entries = 0;
	while (*s) {
		if (*s == ' ' || *s == ',' || *s == '\t') {
			s++;
			continue;
		}
		char *end;
		if (*s < '0' || *s > '9')
			return false;
		long a = strtol(s, &end, 10), b;
		s = end;
		if (*s == '-') {
			s++;
			if (*s >= '0' && *s <= '9') {
				b = strtol(s, &end, 10);
				s = end;
				if (b < a)
					return false;
			}
		}
		if (*s && *s != ' ' && *s != ',' && *s != '\t')
			return false;
		entries++;
	}
	return entries > 0;
}

int _sf_starpu_env_check(int maxcpus)
{
	/* StarPU reads these with starpu_get_env_number: anything but a non-negative
	 * integer aborts inside starpu_init, and "" reads as 0 */
	static const char *const numbers[] = {"STARPU_WORKERS_GETBIND", "STARPU_WORKERS_NOBIND",
	                                      "STARPU_SILENT", "STARPU_FXT_TRACE",
	                                      "STARPU_CALIBRATE"};
	static const char *const ncpu[] = {"STARPU_NCPU", "STARPU_NCPUS"};
	long v;
	for (size_t i = 0; i < sizeof ncpu / sizeof ncpu[0]; i++) {
		const char *s = getenv(ncpu[i]);
		if (s && _sf_parse_long(s, 2, maxcpus, &v) < 0)
			return _sf_err(SF_ERR_CONFIG, NULL, 0,
			               "%s=\"%s\" cannot be used: shardflow needs at least 2 CPU "
			               "workers (compute workers plus one comm worker) and this StarPU "
			               "supports at most %d; accepted values are integers from 2 to %d, "
			               "or unset (default: the rank's cores)",
			               ncpu[i], s, maxcpus, maxcpus);
	}
	for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
		const char *s = getenv(numbers[i]);
		if (s && _sf_parse_long(s, 0, INT32_MAX, &v) < 0)
			return _sf_err(SF_ERR_CONFIG, NULL, 0,
			               "%s=\"%s\" is invalid: StarPU reads it as a number; accepted "
			               "values are integers >= 0 (0 or 1), or unset",
			               numbers[i], s);
	}
	static const char *const lists[] = {"STARPU_WORKERS_CPUID", "STARPU_WORKERS_COREID"};
	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
		const char *s = getenv(lists[i]);
		if (s && !cpu_list_ok(s))
			return _sf_err(SF_ERR_CONFIG, NULL, 0,
			               "%s=\"%s\" is invalid: accepted values are CPU numbers or "
			               "ranges (\"0 1\", \"0-3\", \"2-\") separated by blanks or "
			               "commas, or unset",
			               lists[i], s);
	}
	return SF_OK;
}
