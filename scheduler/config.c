/*
 * config.c — the knobs of struct sf_config: the program's values (sf_config_init,
 * sf_config_set, the config given to sf_init_config or a model), the SHARDFLOW_*
 * environment over them, and the log of what the environment overrode.
 *
 * One table row per knob (its variable, its field, its kind and range or names, and
 * whether a model may set it) drives reading, checking and messages. A malformed value
 * is an error naming the variable (or the field), the value and what is accepted, and
 * an unknown SHARDFLOW_* variable is an error too (a misspelt SHARDFLOW_PREFETCH_DEPHT
 * silently ignored would be worse).
 *
 * The names of the enums' values live here too, one table per enum, and are public
 * through one pair of functions each (sf_optimizer_from_name, sf_optimizer_name, ...),
 * so that no program spells them again.
 */
#include "config.h"

#include "scheduler/runtime.h"
#include "tasks/optimizers/list.h"

#include <stdio.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern char **environ;

/* The names a table gives the values of an enum, in its order: one per value, so that
 * a choice's index is the value (a table sized by the count would let a missing name
 * be NULL). Each enum's table is also its public names (NAMED_ENUM below). */
const char *const _sf_sharding_names[] = {"full", "grad_op", "none", "hybrid"};
/* the optimizers' names are their files' (tasks/optimizers/), each at its value */
#define OPT_NAME(name, NAME) [SF_OPT_##NAME] = #name,
const char *const _sf_optimizer_names[] = {SF_OPTIMIZER_LIST(OPT_NAME)};
#undef OPT_NAME

static const char *const bwd_names[] = {"pre", "post", "none"};
static const char *const log_names[] = {"off", "error", "warn", "info", "debug"};
static const char *const skip_names[] = {"none", "comm", "compute"};
static const char *const comm_names[] = {"mpi", "nccl", "mpi-sync"};
static const char *const opt_on_names[] = {"device", "host"};
static const char *const gpu_math_names[] = {"fp32", "tf32", "bf16"};
static const char *const accum_names[] = {"sharded", "local"};
static const char *const recompute_names[] = {"none", "units"};
static const char *const dtype_names[] = {"fp32", "bf16"};
static const char *const onoff_names[] = {"off", "on"};
static const char *const vocab_parallel_names[] = {"auto", "on", "off"};
_Static_assert(sizeof vocab_parallel_names / sizeof vocab_parallel_names[0] ==
                   SF_VOCAB_PARALLEL_COUNT,
               "a name for each enum sf_vocab_parallel");
static const char *const pp_schedule_names[] = {"gpipe", "1f1b", "zero-bubble", "interleaved"};
static const char *const pp_balance_names[] = {"flops", "params"};
static const char *const rounding_names[] = {"nearest", "upward", "downward"};

/* ---- the enums' names, public: sf_optimizer_from_name and the like ------------------- */

/* The index of s in names, or -1 (s NULL included) */
static int name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

/* "a, b, c" into buf */
static void name_list(const char *const *names, int n, char *buf, size_t size)
{
	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? ", " : "", names[i]);
}

/* *v = the index of name in names; else SF_ERR_INVALID, recorded, not printed: the
 * program prints it with its option ("--optimizer " + the message). what: "an
 * optimizer"; fn: the public function. */
static int from_name(const char *fn, const char *what, const char *const *names, int n,
                     const char *name, int *v)
{
	char list[256];
	int i = name_index(names, n, name);
	if (i >= 0 && v) {
		*v = i;
		return SF_OK;
	}
	if (!v)
		return _sf_err_record(SF_ERR_INVALID, "%s: out is NULL", fn);
	name_list(names, n, list, sizeof list);
	if (!name)
		return _sf_err_record(SF_ERR_INVALID,
		                      "%s: a NULL name is not %s: accepted names are %s", fn, what,
		                      list);
	return _sf_err_record(SF_ERR_INVALID, "\"%s\" is not %s: accepted names are %s", name, what,
	                      list);
}

/* The public pair of an enum whose value v is names[v]: from_fn(name, &value) writes
 * the value only on success; name_fn(value) is NULL out of range. The build fails until
 * every value has a name. */
#define NAMED_ENUM(from_fn, name_fn, type, names, count, what)                                     \
	_Static_assert(sizeof names / sizeof names[0] == (count), #names ": one name per value");  \
	SF_API int from_fn(const char *name, type *out)                                            \
	{                                                                                          \
		int v = 0, rc = from_name(#from_fn, what, names, (count), name, out ? &v : NULL);  \
		if (rc == SF_OK)                                                                   \
			*out = (type)v;                                                            \
		return rc;                                                                         \
	}                                                                                          \
	SF_API const char *name_fn(type value)                                                     \
	{                                                                                          \
		return (int)value >= 0 && (int)value < (count) ? names[value] : NULL;              \
	}

NAMED_ENUM(sf_optimizer_from_name, sf_optimizer_name, enum sf_optimizer, _sf_optimizer_names,
           SF_OPT_COUNT, "an optimizer")
NAMED_ENUM(sf_sharding_from_name, sf_sharding_name, enum sf_sharding, _sf_sharding_names,
           SF_SHARD_COUNT, "a sharding")
NAMED_ENUM(sf_backward_prefetch_from_name, sf_backward_prefetch_name, enum sf_backward_prefetch,
           bwd_names, SF_BWD_COUNT, "a backward prefetch policy")
NAMED_ENUM(sf_comm_backend_from_name, sf_comm_backend_name, enum sf_comm_backend, comm_names,
           SF_COMM_COUNT, "a comm backend")
NAMED_ENUM(sf_dtype_from_name, sf_dtype_name, enum sf_dtype, dtype_names, SF_DTYPE_COUNT, "a dtype")
NAMED_ENUM(sf_log_level_from_name, sf_log_level_name, enum sf_log_level, log_names, SF_LOG_COUNT,
           "a log level")
NAMED_ENUM(sf_skip_from_name, sf_skip_name, enum sf_skip, skip_names, SF_SKIP_COUNT, "a skip mode")
NAMED_ENUM(sf_optimizer_on_from_name, sf_optimizer_on_name, enum sf_optimizer_on, opt_on_names,
           SF_OPT_ON_COUNT, "an optimizer placement")
NAMED_ENUM(sf_gpu_math_from_name, sf_gpu_math_name, enum sf_gpu_math, gpu_math_names,
           SF_GPU_MATH_COUNT, "a GPU math mode")
NAMED_ENUM(sf_accum_mode_from_name, sf_accum_mode_name, enum sf_accum_mode, accum_names,
           SF_ACCUM_COUNT, "an accumulation mode")
NAMED_ENUM(sf_recompute_from_name, sf_recompute_name, enum sf_recompute, recompute_names,
           SF_RECOMPUTE_COUNT, "a recompute mode")
NAMED_ENUM(sf_pp_schedule_from_name, sf_pp_schedule_name, enum sf_pp_schedule, pp_schedule_names,
           SF_PP_SCHEDULE_COUNT, "a pipeline schedule")
NAMED_ENUM(sf_pp_balance_from_name, sf_pp_balance_name, enum sf_pp_balance, pp_balance_names,
           SF_PP_BALANCE_COUNT, "a pipeline balance")
NAMED_ENUM(sf_rounding_from_name, sf_rounding_name, enum sf_rounding, rounding_names,
           SF_ROUNDING_COUNT, "a rounding direction")

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

/* ---- the knobs: one row each ----------------------------------------------------------- */

enum knob_kind { KNOB_INT, KNOB_CHOICE, KNOB_PREFIX };

struct knob {
	const char *var;   /* its environment variable */
	const char *field; /* its member of struct sf_config */
	size_t off;        /* offsetof(struct sf_config, field) */
	enum knob_kind kind;
	int lo, hi;               /* KNOB_INT: the range */
	int def;                  /* KNOB_INT, KNOB_CHOICE: the default */
	const char *const *names; /* KNOB_CHOICE: value v is names[v] */
	int nnames;
	bool model; /* a model's own (sf_model_options::config); else the runtime's */
};

#define INT_KNOB(var, f, lo, hi, def, model)                                                       \
	{var, #f, offsetof(struct sf_config, f), KNOB_INT, lo, hi, def, NULL, 0, model}
#define CHOICE_KNOB(var, f, names, def, model)                                                     \
	{var,    #f,    offsetof(struct sf_config, f), KNOB_CHOICE, 0, 0, def,                        \
	 names,  (int)(sizeof names / sizeof names[0]), model}

/* SHARDFLOW_LOG first, so that it governs the messages of the others */
static const struct knob knobs[] = {
    CHOICE_KNOB("SHARDFLOW_LOG", log_level, log_names, SF_LOG_WARN, false),
    INT_KNOB("SHARDFLOW_PREFETCH_DEPTH", prefetch_depth, 0, SF_MAX_DEPTH, 2, true),
    CHOICE_KNOB("SHARDFLOW_BACKWARD_PREFETCH", bwd_prefetch, bwd_names, SF_BWD_PRE, true),
    CHOICE_KNOB("SHARDFLOW_SHARDING", sharding, _sf_sharding_names, SF_SHARD_FULL, true),
    {"SHARDFLOW_TRACE", "trace", offsetof(struct sf_config, trace), KNOB_PREFIX, 0, 0, 0, NULL, 0,
     false},
    CHOICE_KNOB("SHARDFLOW_SKIP", skip, skip_names, SF_SKIP_NONE, false),
    INT_KNOB("SHARDFLOW_COMM_CHUNK", comm_chunk, 0, SF_MAX_COMM_CHUNK, SF_DEFAULT_COMM_CHUNK,
             false),
    INT_KNOB("SHARDFLOW_COMM_TIMEOUT", comm_timeout, 0, SF_MAX_COMM_TIMEOUT,
             SF_DEFAULT_COMM_TIMEOUT, false),
    CHOICE_KNOB("SHARDFLOW_COMM", comm, comm_names, SF_COMM_MPI, false),
    CHOICE_KNOB("SHARDFLOW_OPTIMIZER_ON", optimizer_on, opt_on_names, SF_OPT_ON_DEVICE, false),
    INT_KNOB("SHARDFLOW_GRAD_ACCUM", grad_accum, 1, SF_MAX_GRAD_ACCUM, 1, true),
    CHOICE_KNOB("SHARDFLOW_ACCUM_MODE", accum_mode, accum_names, SF_ACCUM_SHARDED, true),
    CHOICE_KNOB("SHARDFLOW_RECOMPUTE", recompute, recompute_names, SF_RECOMPUTE_NONE, true),
    CHOICE_KNOB("SHARDFLOW_PARAM_DTYPE", param_dtype, dtype_names, SF_DTYPE_FP32, true),
    CHOICE_KNOB("SHARDFLOW_REDUCE_DTYPE", reduce_dtype, dtype_names, SF_DTYPE_FP32, true),
    INT_KNOB("SHARDFLOW_NODE_SIZE", node_size, 0, 1 << 20, 0, false),
    CHOICE_KNOB("SHARDFLOW_MEMORY_CHECK", memory_check, onoff_names, 1, true),
    INT_KNOB("SHARDFLOW_FLIGHT_RECORD", flight_record, 0, 65536, SF_DEFAULT_FLIGHT_RECORD, false),
    CHOICE_KNOB("SHARDFLOW_GPU_MATH", gpu_math, gpu_math_names, SF_GPU_MATH_FP32, false),
    CHOICE_KNOB("SHARDFLOW_SPLIT_BACKWARD", split_backward, onoff_names, 0, true),
    INT_KNOB("SHARDFLOW_TP", tp, 1, SF_MAX_TP, 1, false),
    CHOICE_KNOB("SHARDFLOW_VOCAB_PARALLEL", vocab_parallel, vocab_parallel_names,
                SF_VOCAB_PARALLEL_AUTO, false),
    INT_KNOB("SHARDFLOW_PP", pp, 1, SF_MAX_PP, 1, false),
    INT_KNOB("SHARDFLOW_PP_MICROBATCHES", pp_microbatches, 0, SF_MAX_GRAD_ACCUM, 0, true),
    CHOICE_KNOB("SHARDFLOW_PP_SCHEDULE", pp_schedule, pp_schedule_names, SF_PP_1F1B, true),
    CHOICE_KNOB("SHARDFLOW_PP_BALANCE", pp_balance, pp_balance_names, SF_PP_BALANCE_PARAMS, true),
    INT_KNOB("SHARDFLOW_PP_VIRTUAL", pp_virtual, 1, SF_MAX_PP_VIRTUAL, 2, true),
    CHOICE_KNOB("SHARDFLOW_ROUNDING", rounding, rounding_names, SF_ROUND_NEAREST, false),
    CHOICE_KNOB("SHARDFLOW_SEQUENCE_PARALLEL", sequence_parallel, onoff_names, 0, true),
    INT_KNOB("SHARDFLOW_CP", cp, 1, SF_MAX_CP, 1, false),
};
#define NKNOBS (sizeof knobs / sizeof knobs[0])
_Static_assert(NKNOBS <= 32, "a knob's bit in a uint32_t mask");

/* The knob's integer (an enum's value is its index in the names) */
static int *knob_int(struct sf_config *c, const struct knob *k)
{
	return (int *)((char *)c + k->off);
}
static int knob_value(const struct sf_config *c, const struct knob *k)
{
	return *(const int *)((const char *)c + k->off);
}
static char *knob_str(struct sf_config *c, const struct knob *k)
{
	return (char *)c + k->off;
}

static bool same_value(const struct sf_config *a, const struct sf_config *b, const struct knob *k)
{
	if (k->kind == KNOB_PREFIX)
		return strcmp((const char *)a + k->off, (const char *)b + k->off) == 0;
	return knob_value(a, k) == knob_value(b, k);
}

/* A value as its variable would spell it, into buf */
static const char *spell(const struct sf_config *c, const struct knob *k, char *buf, size_t n)
{
	int v = knob_value(c, k);
	if (k->kind == KNOB_PREFIX)
		return (const char *)c + k->off;
	if (k->kind == KNOB_CHOICE && v >= 0 && v < k->nnames)
		return k->names[v];
	snprintf(buf, n, "%d", v);
	return buf;
}

/* What the knob accepts, for a message: "accepted values are ... (default ...)" */
static void accepted(const struct knob *k, char *buf, size_t n)
{
	if (k->kind == KNOB_INT) {
		snprintf(buf, n, "integers from %d to %d (default %d)", k->lo, k->hi, k->def);
		if (k->off == offsetof(struct sf_config, comm_chunk))
			snprintf(buf, n,
			         "0 (one message per ring step) or a number of bytes from %d to %d "
			         "(default %d)",
			         SF_MIN_COMM_CHUNK, SF_MAX_COMM_CHUNK, SF_DEFAULT_COMM_CHUNK);
		return;
	}
	if (k->kind == KNOB_PREFIX) {
		snprintf(buf, n,
		         "a file path prefix of at most %zu characters, not ending in '/', in an "
		         "existing directory (default unset: no trace)",
		         sizeof((struct sf_config *)0)->trace - 32);
		return;
	}
	name_list(k->names, k->nnames, buf, n);
	snprintf(buf + strlen(buf), n - strlen(buf), " (default %s)", k->names[k->def]);
}

/* "what=\"text\" is invalid: accepted values are ..." (what: the variable, or the field) */
static int refuse(const struct knob *k, const char *what, const char *text)
{
	char acc[512];
	accepted(k, acc, sizeof acc);
	return _sf_err(SF_ERR_CONFIG, NULL, 0, "%s=\"%s\" is invalid: accepted values are %s",
	               what, text, acc);
}

/* While _sf_config_resolve runs for a rank that does not speak (its `alike_quiet`):
 * the errors every rank meets alike are not printed there (rank 0 says them), but the
 * one that depends on the rank's machine, a trace directory missing on its host, is,
 * as the caller's own setting (sf_log_set_quiet) says. */
static bool resolving_alike_quiet;
static bool caller_quiet;

/* A path prefix whose directory exists: the trace files are <prefix>.rank<r>.json... */
static int check_prefix(const struct knob *k, const char *what, const char *s)
{
	size_t len = sizeof((struct sf_config *)0)->trace;
	if (!s[0])
		return SF_OK; /* unset: no trace */
	if (strlen(s) + 32 > len || s[strlen(s) - 1] == '/')
		return refuse(k, what, s);
	char dir[SF_PATH_MAX];
	snprintf(dir, sizeof dir, "%s", s);
	const char *d = dirname(dir);
	struct stat st;
	if (stat(d, &st) == 0 && S_ISDIR(st.st_mode))
		return SF_OK;
	bool q = _sf_err_quiet;
	if (resolving_alike_quiet) /* this rank's own finding: said by it */
		_sf_err_quiet = caller_quiet;
	int rc = _sf_err(SF_ERR_CONFIG, NULL, 0,
	                 "%s=\"%s\" is invalid: directory \"%s\" does not exist; accepted "
	                 "values are a file path prefix in an existing directory (default unset: "
	                 "no trace)",
	                 what, s, d);
	_sf_err_quiet = q;
	return rc;
}

/* Reads text into the knob's field of c (what names the text in a refusal) */
static int parse_knob(const struct knob *k, const char *what, const char *text, struct sf_config *c)
{
	long v;
	switch (k->kind) {
	case KNOB_INT:
		if (_sf_parse_long(text, k->lo, k->hi, &v) < 0 ||
		    (k->off == offsetof(struct sf_config, comm_chunk) && v > 0 && v < SF_MIN_COMM_CHUNK))
			return refuse(k, what, text);
		*knob_int(c, k) = (int)v;
		return SF_OK;
	case KNOB_CHOICE:
		if ((v = name_index(k->names, k->nnames, text)) < 0)
			return refuse(k, what, text);
		*knob_int(c, k) = (int)v;
		return SF_OK;
	case KNOB_PREFIX:
		if (!text[0]) /* set but empty: a mistake, not "off" */
			return refuse(k, what, text);
		if (check_prefix(k, what, text) < 0)
			return SF_ERR_CONFIG;
		snprintf(knob_str(c, k), sizeof c->trace, "%s", text);
		return SF_OK;
	}
	return SF_OK;
}

/* A program's value of the knob, in range (fn: the function the program called) */
static int check_knob(const struct knob *k, const struct sf_config *c, const char *fn)
{
	char what[96], buf[32];
	snprintf(what, sizeof what, "%s: config.%s", fn, k->field);
	if (k->kind == KNOB_PREFIX) {
		const char *s = (const char *)c + k->off;
		if (!memchr(s, '\0', sizeof c->trace))
			return _sf_err(SF_ERR_CONFIG, NULL, 0, "%s is not a terminated string", what);
		return check_prefix(k, what, s);
	}
	struct sf_config tmp = *c;
	return parse_knob(k, what, spell(c, k, buf, sizeof buf), &tmp);
}

static const struct knob *find_knob(const char *name)
{
	for (size_t i = 0; i < NKNOBS; i++)
		if (strcmp(name, knobs[i].var) == 0 || strcmp(name, knobs[i].field) == 0)
			return &knobs[i];
	return NULL;
}

static void known_list(char *buf, size_t n, bool fields)
{
	buf[0] = '\0';
	for (size_t i = 0; i < NKNOBS; i++)
		snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? ", " : "",
		         fields ? knobs[i].field : knobs[i].var);
}

/* The variables only a simulation build reads (sim/sim_device.c) */
static bool sim_only(const char *e, size_t len)
{
	static const char *const vars[] = {"SHARDFLOW_SIM_DEVICE",      "SHARDFLOW_SIM_SHARED_CPUS",
	                                   "SHARDFLOW_SIM_NCCL",        "SHARDFLOW_SIM_COMM_CPU",
	                                   "SHARDFLOW_SIM_CALIBRATION", "SHARDFLOW_SIM_HOST_CPU"};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		if (len == strlen(vars[i]) && !strncmp(e, vars[i], len))
			return true;
	return false;
}

static int check_unknown(void)
{
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "SHARDFLOW_", 10) != 0)
			continue;
		size_t len = strcspn(*e, "=");
		if (sim_only(*e, len)) {
#ifdef SF_SIMULATION
			continue; /* sim/sim_device.c reads them */
#else
			return _sf_err(SF_ERR_CONFIG, NULL, 0,
			               "%.*s=\"%s\" is set, but this shardflow runs tasks for real: "
			               "only a simulation build (configure --enable-simulation, "
			               "docs/scale.md) simulates; unset it",
			               (int)len, *e, *e + len + ((*e)[len] == '=' ? 1 : 0));
#endif
		}
		bool known = false;
		for (size_t k = 0; k < NKNOBS; k++)
			if (strlen(knobs[k].var) == len && strncmp(*e, knobs[k].var, len) == 0)
				known = true;
		if (!known) {
			char list[768];
			known_list(list, sizeof list, false);
			return _sf_err(SF_ERR_CONFIG, NULL, 0,
			               "%.*s is not a shardflow variable: known variables are %s",
			               (int)len, *e, list);
		}
	}
	return SF_OK;
}

SF_API int sf_config_init(struct sf_config *c)
{
	if (!c)
		return SF_ERR(SF_ERR_INVALID, "sf_config_init: c is NULL");
	memset(c, 0, sizeof *c);
	for (size_t i = 0; i < NKNOBS; i++)
		if (knobs[i].kind != KNOB_PREFIX)
			*knob_int(c, &knobs[i]) = knobs[i].def;
	return SF_OK;
}

SF_API const char *sf_config_variable(const char *name)
{
	const struct knob *k = name ? find_knob(name) : NULL;
	return k ? k->var : NULL;
}

SF_API int sf_config_set(struct sf_config *c, const char *name, const char *value)
{
	if (!c || !name || !value)
		return SF_ERR(SF_ERR_INVALID, "sf_config_set: NULL config, name or value");
	const struct knob *k = find_knob(name);
	if (!k) {
		char list[512];
		known_list(list, sizeof list, true);
		return SF_ERR(SF_ERR_CONFIG,
		              "sf_config_set: \"%s\" is not a knob: known knobs are %s (or their "
		              "SHARDFLOW_* names)",
		              name, list);
	}
	char what[96];
	snprintf(what, sizeof what, "sf_config_set: %s", k->field);
	if (k->kind == KNOB_PREFIX && !value[0]) { /* "" turns tracing off */
		c->trace[0] = '\0';
		return SF_OK;
	}
	return parse_knob(k, what, value, c);
}

static int resolve(const struct sf_config *program, const char *fn, struct sf_config *out,
                   uint32_t *from_env)
{
	struct sf_config c;
	*from_env = 0;
	sf_config_init(&c);
	if (program) {
		for (size_t i = 0; i < NKNOBS; i++)
			SF_CHECK(check_knob(&knobs[i], program, fn));
		c = *program;
	}
	for (size_t i = 0; i < NKNOBS; i++) {
		const char *s = getenv(knobs[i].var);
		if (s) {
			SF_CHECK(parse_knob(&knobs[i], knobs[i].var, s, &c));
			*from_env |= 1u << i;
		}
		if (i == 0) /* a bad SHARDFLOW_LOG first, then a misspelt variable */
			SF_CHECK(check_unknown());
	}
	*out = c;
	return SF_OK;
}

int _sf_config_resolve(const struct sf_config *program, const char *fn, struct sf_config *out,
                       uint32_t *from_env, bool alike_quiet)
{
	caller_quiet = _sf_err_quiet;
	resolving_alike_quiet = alike_quiet;
	if (alike_quiet)
		_sf_err_quiet = true;
	int rc = resolve(program, fn, out, from_env);
	_sf_err_quiet = caller_quiet;
	resolving_alike_quiet = false;
	return rc;
}

SF_API int sf_config_from_env(struct sf_config *out)
{
	uint32_t from_env;
	if (!out)
		return SF_ERR(SF_ERR_INVALID, "sf_config_from_env: out is NULL");
	return _sf_config_resolve(NULL, "sf_config_from_env", out, &from_env, false);
}

void _sf_config_log(const struct sf_config *program, const struct sf_config *now,
                    uint32_t from_env, const char *model)
{
	char b1[32], b2[32];
	for (size_t i = 0; i < NKNOBS; i++) {
		const struct knob *k = &knobs[i];
		if (!(from_env & (1u << i)) || (model && !k->model))
			continue;
		if (!model)
			_sf_log(SF_LOG_INFO, "%s=%s", k->var, spell(now, k, b1, sizeof b1));
		if (program && !same_value(program, now, k))
			_sf_log(SF_LOG_WARN, "%s=%s overrides the program's %s%s%s%s", k->var,
			        spell(now, k, b1, sizeof b1), spell(program, k, b2, sizeof b2),
			        model ? " (model \"" : "", model ? model : "", model ? "\")" : "");
	}
}

int _sf_config_for_model(const struct sf_context *ctx, const struct sf_config *program,
                         struct sf_config *out)
{
	const struct sf_config *ctx_cfg = &ctx->cfg;
	struct sf_config def;
	char b1[32], b2[32];
	sf_config_init(&def);
	*out = *ctx_cfg;
	if (!program)
		return SF_OK;
	for (size_t i = 0; i < NKNOBS; i++) {
		const struct knob *k = &knobs[i];
		SF_CHECK(check_knob(k, program, "sf_model_create"));
		if (!k->model) {
			/* the runtime's: a copy of sf_config_init's or sf_context_config's is fine */
			if (same_value(program, ctx_cfg, k) || same_value(program, &def, k) ||
			    same_value(program, &ctx->cfg_program, k))
				continue;
			return SF_ERR(SF_ERR_CONFIG,
			              "sf_model_create: config.%s=%s is the runtime's, fixed when "
			              "the context started (%s=%s): set it in the config given to "
			              "sf_init_config",
			              k->field, spell(program, k, b1, sizeof b1), k->var,
			              spell(ctx_cfg, k, b2, sizeof b2));
		}
		if (!(ctx->cfg_from_env & (1u << i)))
			*knob_int(out, k) = knob_value(program, k);
	}
	bool hybrid = out->sharding == SF_SHARD_HYBRID, ctx_hybrid = ctx_cfg->sharding == SF_SHARD_HYBRID;
	if (hybrid != ctx_hybrid)
		return SF_ERR(SF_ERR_CONFIG,
		              "sf_model_create: sharding %s on a context started with sharding %s: "
		              "hybrid's node groups are made (or not) by sf_init, so a model is "
		              "hybrid exactly when its context is (set sharding hybrid in the "
		              "config given to sf_init_config, or SHARDFLOW_SHARDING=hybrid)",
		              _sf_sharding_names[out->sharding], _sf_sharding_names[ctx_cfg->sharding]);
	return SF_OK;
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
	 * integer aborts inside starpu_init, and "" reads as 0. Each with its range, what
	 * StarPU reads it as, and what is accepted. */
	static const struct {
		const char *name;
		long max;
		const char *reads_as, *accepted;
	} numbers[] = {
	    {"STARPU_WORKERS_GETBIND", INT32_MAX, "a number", "integers >= 0 (0 or 1), or unset"},
	    {"STARPU_WORKERS_NOBIND", INT32_MAX, "a number", "integers >= 0 (0 or 1), or unset"},
	    {"STARPU_SILENT", INT32_MAX, "a number", "integers >= 0 (0 or 1), or unset"},
	    {"STARPU_FXT_TRACE", INT32_MAX, "a number", "integers >= 0 (0 or 1), or unset"},
	    {"STARPU_CALIBRATE", INT32_MAX, "a number", "integers >= 0 (0 or 1), or unset"},
	    {"STARPU_LAST_WORKER_AWAKE", INT32_MAX, "a number", "integers >= 0 (0 or 1), or unset"},
	    /* the percentage of a GPU's buffers StarPU keeps written back to RAM (runtime.c
	     * sets both to 0 where unset) */
	    {"STARPU_MINIMUM_CLEAN_BUFFERS", 100,
	     "the percentage of a GPU's buffers to keep copied back to RAM",
	     "integers from 0 to 100, or unset (shardflow's default: 0)"},
	    {"STARPU_TARGET_CLEAN_BUFFERS", 100,
	     "the percentage of a GPU's buffers to keep copied back to RAM",
	     "integers from 0 to 100, or unset (shardflow's default: 0)"},
	};
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
		const char *s = getenv(numbers[i].name);
		if (s && _sf_parse_long(s, 0, numbers[i].max, &v) < 0)
			return _sf_err(SF_ERR_CONFIG, NULL, 0,
			               "%s=\"%s\" is invalid: StarPU reads it as %s; accepted values "
			               "are %s",
			               numbers[i].name, s, numbers[i].reads_as, numbers[i].accepted);
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

SF_API int sf_config_describe(const struct sf_config *c, int all, char *out, size_t size)
{
	if (!c || !out || !size)
		return SF_ERR(SF_ERR_INVALID, "sf_config_describe: NULL config or output, or size 0");
	struct sf_config d;
	sf_config_init(&d);
	size_t k = 0;
	out[0] = '\0';
	for (size_t i = 0; i < NKNOBS; i++) {
		char b1[32], b2[32];
		const char *v = spell(c, &knobs[i], b1, sizeof b1);
		if (!all && strcmp(v, spell(&d, &knobs[i], b2, sizeof b2)) == 0)
			continue;
		int w = snprintf(out + k, size - k, "%s%s=%s", k ? " " : "", knobs[i].field, v);
		if (w < 0 || (size_t)w >= size - k)
			return SF_ERR(SF_ERR_INVALID,
			              "sf_config_describe: %zu bytes are too few for the settings",
			              size);
		k += (size_t)w;
	}
	return SF_OK;
}
