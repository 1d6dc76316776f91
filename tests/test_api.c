/*
 * test_api.c — proves that the public API rejects misuse with a negative status and
 * never crashes. Meant for one rank, run directly (no mpirun).
 *
 * Every public function is given NULL pointers, ids that name no node, zero or
 * negative sizes and shape mismatches, and must return SF_ERR_INVALID (a bad
 * argument) — or SF_ERR_STATE where the call is well-formed but comes at the wrong
 * time (a second loss, a node after the loss, a second sf_init). A refused
 * sf_model_step must submit nothing: the step counter does not move and the model
 * trains normally afterwards. Alongside, the positive path: a tiny graph trains 3 SGD
 * steps with a finite loss, the parameter count is sum(O*I + O), the parameters read
 * back are finite, every status has a description and sf_last_error() explains the
 * last failure. Every layer type refuses a config of a size it does not list, before
 * reading it; what the library prints on stderr is read back: a type's refusal once,
 * with the node's context, and nothing under sf_log_set_quiet(1). Unit options reach
 * the model by a group's name or a lone layer's (a frozen fc1 stays bitwise), and
 * once a model is made of the graph they are refused (SF_ERR_STATE) and change nothing.
 */
#include "shardflow.h"
#include "tests/tap.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* rc is SF_ERR_INVALID or SF_ERR_STATE: for calls where either reading is fair. */
#define ok_refused(rc, name)                                                                       \
	do {                                                                                       \
		int rc_ = (rc);                                                                    \
		if (!ok(rc_ == SF_ERR_INVALID || rc_ == SF_ERR_STATE, "%s", name))                 \
			diag("  %s:%d: %s: got %d, expected SF_ERR_INVALID (%d) or "               \
			     "SF_ERR_STATE (%d)",                                                  \
			     __FILE__, __LINE__, #rc, rc_, SF_ERR_INVALID, SF_ERR_STATE);          \
	} while (0)

#define ok_invalid(rc, name) ok_int_eq((rc), SF_ERR_INVALID, name)
#define ok_sf_ok(rc, name) ok_int_eq((rc), SF_OK, name)

/* --- a parameterless identity layer type, to exercise sf_layer_type_register ------ */

static int ident_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                       size_t *nparams)
{
	(void)nin, (void)config;
	*out_dim = in_dims[0];
	*nparams = 0;
	return SF_OK;
}

/* Refuses every configuration, so sf_graph_layer() must pass the refusal on. */
static int picky_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                       size_t *nparams)
{
	(void)in_dims, (void)nin, (void)config, (void)out_dim, (void)nparams;
	return sf_error_set(SF_ERR_INVALID, "apitest_picky: this type accepts no configuration");
}

/* Fails without a message of its own: the library must not pass off an older one. */
static int mute_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                      size_t *nparams)
{
	(void)in_dims, (void)nin, (void)config, (void)out_dim, (void)nparams;
	return SF_ERR_INVALID;
}

static void ident_fwd(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	memcpy(sf_kernel_output(buffers, li), sf_kernel_input(buffers, li, 0),
	       sizeof(float) * (size_t)li->rows * (size_t)li->out_dim);
}

static void ident_bwd(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	float *dx = sf_kernel_dinput(buffers, li, 0);
	const float *dy = sf_kernel_doutput(buffers, li);
	size_t n = (size_t)li->rows * (size_t)li->out_dim;
	if (!dx)
		return;
	for (size_t i = 0; i < n; i++)
		dx[i] = li->accumulate[0] ? dx[i] + dy[i] : dy[i];
}

static struct sf_layer_type ident_type(const char *name)
{
	struct sf_layer_type t = {.api_version = SF_LAYER_API_VERSION,
	                          .name = name,
	                          .min_inputs = 1,
	                          .max_inputs = 1,
	                          .infer = ident_infer,
	                          .forward_cpu = ident_fwd,
	                          .backward_cpu = ident_bwd};
	return t;
}

/* --- checks ------------------------------------------------------------------------ */

static void test_status_strings(void)
{
	static const int codes[] = {SF_OK,
	                            SF_ERR_INVALID,
	                            SF_ERR_CONFIG,
	                            SF_ERR_NOMEM,
	                            SF_ERR_MPI,
	                            SF_ERR_STARPU,
	                            SF_ERR_STATE,
	                            SF_ERR_IO,
	                            SF_ERR_NONFINITE,
	                            SF_ERR_NOT_FOUND,
	                            SF_ERR_BUSY,
	                            -100,
	                            7};
	int all = 1;
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		const char *s = sf_strerror(codes[i]);
		if (!s || !*s) {
			diag("  sf_strerror(%d) is %s", codes[i], s ? "empty" : "NULL");
			all = 0;
		}
	}
	ok(all, "sf_strerror is a non-empty string for every status and for unknown codes");
	ok_true(sf_last_error() != NULL, "sf_last_error() is never NULL");
	ok_invalid(sf_error_set(SF_ERR_INVALID, "apitest marker %d", 42),
	           "sf_error_set returns the status it records");
	ok_true(strstr(sf_last_error(), "apitest marker 42") != NULL,
	        "sf_last_error() holds the message of sf_error_set");
}

static void test_before_init(void)
{
	struct sf_config cfg;
	int r, s;
	ok_invalid(sf_init(NULL, NULL, NULL), "sf_init with NULL out");
	ok_invalid(sf_config_from_env(NULL), "sf_config_from_env(NULL)");
	ok_invalid(sf_context_world(NULL, &r, &s), "sf_context_world(NULL ctx)");
	ok_invalid(sf_context_config(NULL, &cfg), "sf_context_config(NULL ctx)");
	ok_invalid(sf_clock(NULL), "sf_clock(NULL)");
	double c0 = -1, c1 = -1;
	struct timespec nap = {0, 2000000};
	int crc = sf_clock(&c0);
	nanosleep(&nap, NULL);
	crc |= sf_clock(&c1);
	ok(crc == SF_OK && c0 > 0 && c1 - c0 >= 0.0019 && c1 - c0 < 1.0,
	   "sf_clock: the wall clock outside a simulation (%.6f s over a 2 ms nap)", c1 - c0);
	ok_sf_ok(sf_finalize(NULL), "sf_finalize(NULL) does nothing");
	ok_sf_ok(sf_graph_destroy(NULL), "sf_graph_destroy(NULL) does nothing");
	ok_sf_ok(sf_model_destroy(NULL), "sf_model_destroy(NULL) does nothing");
	ok_invalid(sf_model_options_init(NULL), "sf_model_options_init(NULL)");
}

static void test_options_defaults(void)
{
	struct sf_model_options o;
	memset(&o, 0xff, sizeof o);
	ok_sf_ok(sf_model_options_init(&o), "sf_model_options_init");
	ok(o.batch == 64 && o.seed == 1 && o.optimizer == SF_OPT_SGD && o.lr == 0.01f &&
	       o.momentum == 0.9f && o.weight_decay == 0.0f && o.beta1 == 0.9f &&
	       o.beta2 == 0.999f && o.eps == 1e-8f && o.max_grad_norm == 0.0f &&
	       o.no_decay == SF_NO_DECAY_DEFAULT && o.config == NULL,
	   "sf_model_options_init gives the documented defaults");
}

static bool has(const char *text)
{
	bool found = strstr(sf_last_error(), text) != NULL;
	if (!found)
		diag("  the message: %s", sf_last_error());
	return found;
}

/* sf_config_init / sf_config_set, and sf_init_config's checks (before any context) */
static void test_config_in_code(void)
{
	struct sf_config a, b;
	memset(&a, 0xff, sizeof a);
	ok_sf_ok(sf_config_init(&a), "sf_config_init");
	ok(a.prefetch_depth == 2 && a.bwd_prefetch == SF_BWD_PRE && a.sharding == SF_SHARD_FULL &&
	       a.log_level == SF_LOG_WARN && a.trace[0] == '\0' && a.skip == SF_SKIP_NONE &&
	       a.comm_chunk == SF_DEFAULT_COMM_CHUNK && a.comm_timeout == SF_DEFAULT_COMM_TIMEOUT &&
	       a.comm == SF_COMM_MPI && a.optimizer_on == SF_OPT_ON_DEVICE && a.grad_accum == 1 &&
	       a.accum_mode == SF_ACCUM_SHARDED && a.recompute == SF_RECOMPUTE_NONE &&
	       a.param_dtype == SF_DTYPE_FP32 && a.reduce_dtype == SF_DTYPE_FP32 &&
	       a.node_size == 0 && a.memory_check == 1 && a.gpu_math == SF_GPU_MATH_FP32 &&
	       a.split_backward == 0,
	   "sf_config_init gives every knob's documented default");
	ok_invalid(sf_config_init(NULL), "sf_config_init(NULL)");
	ok_invalid(sf_config_set(NULL, "prefetch_depth", "1"), "sf_config_set(NULL config)");
	ok_invalid(sf_config_set(&a, NULL, "1"), "sf_config_set(NULL name)");
	ok(sf_config_set(&a, "prefetch_depth", "5") == SF_OK && a.prefetch_depth == 5,
	   "sf_config_set by field name");
	ok(sf_config_set(&a, "SHARDFLOW_SHARDING", "grad_op") == SF_OK &&
	       a.sharding == SF_SHARD_GRAD_OP,
	   "sf_config_set by variable name, a choice");
	b = a;
	ok_int_eq(sf_config_set(&a, "prefetch_depth", "65"), SF_ERR_CONFIG,
	          "sf_config_set refuses a depth of 65");
	ok_true(has("prefetch_depth=\"65\" is invalid: accepted values are integers from 0 to 64 "
	            "(default 2)"),
	        "  naming the knob, the value and the range");
	ok_true(memcmp(&a, &b, sizeof a) == 0, "a refused sf_config_set leaves the config alone");
	ok_int_eq(sf_config_set(&a, "sharding", "zero3"), SF_ERR_CONFIG, "sharding zero3 refused");
	ok_true(has("accepted values are full, grad_op, none, hybrid (default full)"),
	        "  listing the choices");
	ok_int_eq(sf_config_set(&a, "comm_chunk", "100"), SF_ERR_CONFIG,
	          "a comm chunk below the smallest refused");
	ok_int_eq(sf_config_set(&a, "prefech_depth", "1"), SF_ERR_CONFIG, "an unknown knob refused");
	ok_true(has("known knobs are") && has("prefetch_depth"), "  listing the known ones");
	ok_int_eq(sf_config_set(&a, "trace", "/nonexistent-dir/t"), SF_ERR_CONFIG,
	          "a trace prefix in a missing directory refused");
	ok(sf_config_set(&a, "trace", "") == SF_OK && a.trace[0] == '\0', "trace \"\" is off");
	ok(sf_config_set(&a, "SHARDFLOW_LOG", "off") == SF_OK && a.log_level == SF_LOG_OFF,
	   "SHARDFLOW_LOG=off is a level (SF_LOG_OFF)");
	ok_int_eq(sf_config_set(&a, "log_level", "none"), SF_ERR_CONFIG, "log_level none refused");
	ok_true(has("accepted values are off, error, warn, info, debug (default warn)"),
	        "  listing off among the levels");

	/* sf_config_describe: the defaults differ in nothing; every knob's word read back
	 * by sf_config_set gives the same settings; too small a buffer refused */
	char desc[2048], again[2048];
	sf_config_init(&a);
	ok(sf_config_describe(&a, 0, desc, sizeof desc) == SF_OK && desc[0] == '\0',
	   "sf_config_describe of the defaults, changes only: empty");
	a.sharding = SF_SHARD_GRAD_OP, a.prefetch_depth = 3, a.gpu_math = SF_GPU_MATH_BF16;
	ok_sf_ok(sf_config_describe(&a, 0, desc, sizeof desc), "sf_config_describe, changes only");
	ok_true(!strcmp(desc, "prefetch_depth=3 sharding=grad_op gpu_math=bf16"),
	        "  names the three changed knobs, in the README's order");
	ok_sf_ok(sf_config_describe(&a, 1, desc, sizeof desc), "sf_config_describe, every knob");
	{
		struct sf_config b;
		sf_config_init(&b);
		int read_back = 1;
		char copy[2048];
		snprintf(copy, sizeof copy, "%s", desc);
		for (char *save = NULL, *w = strtok_r(copy, " ", &save); w;
		     w = strtok_r(NULL, " ", &save)) {
			char *eq = strchr(w, '=');
			if (!eq) {
				read_back = 0;
				break;
			}
			*eq = '\0';
			if (sf_config_set(&b, w, eq + 1) != SF_OK)
				read_back = 0;
		}
		ok_true(read_back && sf_config_describe(&b, 1, again, sizeof again) == SF_OK &&
		            !strcmp(desc, again) && b.sharding == SF_SHARD_GRAD_OP &&
		            b.prefetch_depth == 3 && b.gpu_math == SF_GPU_MATH_BF16,
		        "  each word read back by sf_config_set gives the same settings");
	}
	ok_int_eq(sf_config_describe(&a, 1, desc, 16), SF_ERR_INVALID,
	          "sf_config_describe into 16 bytes refused");
	/* sf_config_variable: a knob's variable, by field or variable name; the two whose
	 * variable is not SHARDFLOW_ and the field in capitals */
	ok_true(!strcmp(sf_config_variable("log_level"), "SHARDFLOW_LOG") &&
	            !strcmp(sf_config_variable("bwd_prefetch"), "SHARDFLOW_BACKWARD_PREFETCH") &&
	            !strcmp(sf_config_variable("SHARDFLOW_TP"), "SHARDFLOW_TP") &&
	            !strcmp(sf_config_variable("prefetch_depth"), "SHARDFLOW_PREFETCH_DEPTH"),
	        "sf_config_variable: log_level, bwd_prefetch, SHARDFLOW_TP, prefetch_depth");
	ok_true(sf_config_variable("prefetch") == NULL && sf_config_variable(NULL) == NULL,
	        "sf_config_variable of no knob, and of NULL: NULL");
	ok_int_eq(sf_config_describe(NULL, 1, desc, sizeof desc), SF_ERR_INVALID,
	          "sf_config_describe(NULL config) refused");

	sf_context *ctx = NULL;
	sf_config_init(&a);
	a.prefetch_depth = 99;
	ok_int_eq(sf_init_config(NULL, NULL, &a, &ctx), SF_ERR_CONFIG,
	          "sf_init_config refuses config.prefetch_depth 99");
	ok_true(has("sf_init_config: config.prefetch_depth=\"99\" is invalid"), "  naming the field");
	sf_config_init(&a);
	a.sharding = (enum sf_sharding)7;
	ok_int_eq(sf_init_config(NULL, NULL, &a, &ctx), SF_ERR_CONFIG,
	          "sf_init_config refuses sharding 7");
	sf_config_init(&a);
	a.trace[0] = 'x';
	memset(a.trace, 'x', sizeof a.trace);
	ok_int_eq(sf_init_config(NULL, NULL, &a, &ctx), SF_ERR_CONFIG,
	          "sf_init_config refuses an unterminated trace prefix");
	ok_true(ctx == NULL, "a refused sf_init_config leaves *out alone");
}

static void test_unit_options(void)
{
	sf_graph *g = NULL;
	struct sf_unit_options u;
	int x, h;
	memset(&u, 0xff, sizeof u);
	ok(sf_unit_options_init(&u) == SF_OK && u.reshard_after_forward == 1 && u.keep_fp32 == 0,
	   "sf_unit_options_init: resharded after forward, the model's dtypes");
	if (!ok_sf_ok(sf_graph_create("units", &g), "a graph for the unit options"))
		return;
	sf_graph_input(g, "x", 4, &x);
	sf_graph_unit_begin(g, "block");
	sf_graph_linear(g, x, 4, "fc", &h);
	sf_graph_unit_end(g);
	ok_invalid(sf_graph_unit_options(NULL, "block", &u), "sf_graph_unit_options(NULL graph)");
	ok_invalid(sf_graph_unit_options(g, "block", NULL), "sf_graph_unit_options(NULL options)");
	u.keep_fp32 = 2;
	ok_invalid(sf_graph_unit_options(g, "block", &u), "keep_fp32 2 refused");
	sf_unit_options_init(&u);
	u.keep_fp32 = 1;
	ok_sf_ok(sf_graph_unit_options(g, "block", &u), "options of an ended unit");
	ok_invalid(sf_graph_unit_options(g, "blok", &u), "an unknown unit refused");
	ok_true(has("graph \"units\" has no unit \"blok\" (its units, named by sf_graph_unit_begin "
	            "or by a layer with parameters outside a group: \"block\")"),
	        "  naming the graph's units");
	sf_graph_destroy(g);
}

static void test_context(sf_context *ctx, int *rank, int *size)
{
	struct sf_config cfg;
	sf_context *second = NULL;
	ok_sf_ok(sf_context_world(ctx, rank, size), "sf_context_world");
	ok_true(*size >= 1 && *rank >= 0 && *rank < *size, "rank and size are sane");
	ok_sf_ok(sf_context_config(ctx, &cfg), "sf_context_config");
	ok_invalid(sf_context_config(ctx, NULL), "sf_context_config(ctx, NULL)");
	ok_int_eq(sf_init(NULL, NULL, &second), SF_ERR_STATE, "a second sf_init is refused");
	ok_true(second == NULL, "a refused sf_init leaves *out alone");
	ok_true(sf_last_error()[0] != '\0', "sf_last_error() explains the refusal");
}

static void test_layer_types(void)
{
	struct sf_layer_type t = ident_type("apitest_identity");
	ok_invalid(sf_layer_type_register(NULL), "sf_layer_type_register(NULL)");
	t.name = NULL;
	ok_invalid(sf_layer_type_register(&t), "layer type with a NULL name");
	t = ident_type("apitest_nofwd");
	t.forward_cpu = NULL;
	ok_invalid(sf_layer_type_register(&t), "layer type without forward_cpu");
	t = ident_type("apitest_nobwd");
	t.backward_cpu = NULL;
	ok_invalid(sf_layer_type_register(&t), "layer type without backward_cpu");
	t = ident_type("apitest_noinfer");
	t.infer = NULL;
	ok_invalid(sf_layer_type_register(&t), "layer type without infer");
	t = ident_type("apitest_zeroin");
	t.min_inputs = 0;
	ok_invalid(sf_layer_type_register(&t), "layer type with min_inputs 0");
	t = ident_type("apitest_maxltmin");
	t.min_inputs = 2;
	t.max_inputs = 1;
	ok_invalid(sf_layer_type_register(&t), "layer type with max_inputs < min_inputs");
	t = ident_type("apitest_toomany");
	t.max_inputs = SF_MAX_INPUTS + 1;
	ok_invalid(sf_layer_type_register(&t), "layer type with max_inputs > SF_MAX_INPUTS");
	t = ident_type("apitest_v1");
	t.api_version = 1;
	ok_invalid(sf_layer_type_register(&t), "layer type of another api_version");
	ok_true(strstr(sf_last_error(), "SF_LAYER_API_VERSION") != NULL,
	        "the refusal says to set .api_version = SF_LAYER_API_VERSION");
	t = ident_type("apitest_halfcuda");
	t.forward_cuda = ident_fwd;
	ok_invalid(sf_layer_type_register(&t), "layer type with forward_cuda but no backward_cuda");
	t = ident_type("apitest_intmask");
	t.int_inputs = 2u; /* input 1 of a type with one input */
	ok_invalid(sf_layer_type_register(&t), "layer type whose int_inputs exceed max_inputs");

	t = ident_type("apitest_identity");
	ok_sf_ok(sf_layer_type_register(&t), "register apitest_identity");
	ok_invalid(sf_layer_type_register(&t), "registering apitest_identity twice");
	t = ident_type("apitest_picky");
	t.infer = picky_infer;
	ok_sf_ok(sf_layer_type_register(&t), "register apitest_picky");
	t = ident_type("apitest_mute");
	t.infer = mute_infer;
	ok_sf_ok(sf_layer_type_register(&t), "register apitest_mute");

	t = ident_type("apitest_manysizes");
	t.nconfig_sizes = SF_MAX_CONFIG_SIZES + 1;
	ok_invalid(sf_layer_type_register(&t), "layer type listing SF_MAX_CONFIG_SIZES + 1 sizes");
	t.nconfig_sizes = -1;
	ok_invalid(sf_layer_type_register(&t), "layer type listing -1 config sizes");
	t = ident_type("apitest_sized"); /* no config, or a 12-byte one */
	t.nconfig_sizes = 2;
	t.config_sizes[0] = 0;
	t.config_sizes[1] = 12;
	ok_sf_ok(sf_layer_type_register(&t), "register apitest_sized (config: none or 12 bytes)");
	/* a type built against version 3: its struct ends before nconfig_sizes, so what
	 * lies there is not read (here: a count that version 4 would refuse) */
	t = ident_type("apitest_v3");
	t.api_version = 3;
	t.nconfig_sizes = -1;
	ok_sf_ok(sf_layer_type_register(&t), "a type of layer API version 3 still registers");
}

/* sf_kernel_buffers_create: its refusals, and buffers the accessors read back */
static void test_kernel_buffers(void)
{
	float x[3], y[3];
	void *ptrs[2] = {x, y};
	void **b = (void **)ptrs; /* a refusal sets *out to NULL */
	ok_invalid(sf_kernel_buffers_create(ptrs, 2, NULL), "sf_kernel_buffers_create(out NULL)");
	ok_invalid(sf_kernel_buffers_create(NULL, 2, &b), "sf_kernel_buffers_create(ptrs NULL)");
	ok_true(b == NULL, "  leaves *out NULL");
	ok_invalid(sf_kernel_buffers_create(ptrs, 0, &b), "sf_kernel_buffers_create(n 0)");
	if (!ok_sf_ok(sf_kernel_buffers_create(ptrs, 2, &b), "sf_kernel_buffers_create(x, y)"))
		return;
	struct sf_layer_info li = {.rows = 1, .nin = 1, .in_dim = {3}, .out_dim = 3};
	ok_true(sf_kernel_input(b, &li, 0) == x && sf_kernel_output(b, &li) == y,
	        "  the accessors of a parameterless forward read x and y back");
	sf_kernel_buffers_destroy(b);
	sf_kernel_buffers_destroy(NULL);
}

/* --- config sizes: every type refuses a blob it would read past ------------------ */

/* Every built-in type refuses a 2-byte config naming itself, the size and what it takes
 * (before reading it: "ab" read as an int was an output width of 1811964513), accepts
 * each of its documented forms, and a registered type's own list is enforced. */
static void test_config_sizes(void)
{
	static const char *const builtins[] = {
	    "linear",    "linear_nobias", "linear_split", "relu",          "gelu",
	    "silu",      "add",           "mul",          "layernorm",     "rmsnorm",
	    "embedding", "pos_embedding", "attention",    "attention_gqa", "rope"};
	sf_graph *g = NULL;
	int x = -1, x2 = -1, id = -1;
	if (!ok_sf_ok(sf_graph_create("config_sizes", &g), "sf_graph_create(config_sizes)"))
		return;
	ok_sf_ok(sf_graph_input(g, "x", 12, &x), "input x(12)");
	ok_sf_ok(sf_graph_input(g, "x2", 12, &x2), "input x2(12)");
	int two[2] = {x, x2};
	for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
		const char *type = builtins[i];
		int n = !strcmp(type, "add") || !strcmp(type, "mul") ? 2 : 1;
		int before = id;
		int rc = sf_graph_layer(g, type, two, n, "ab", 2, "short", &id);
		char want[96];
		snprintf(want, sizeof want, "layer type \"%s\" takes ", type);
		ok(rc == SF_ERR_INVALID && id == before && strstr(sf_last_error(), want) &&
		       strstr(sf_last_error(), "got 2 bytes"),
		   "\"%s\" refuses a 2-byte config, naming the type, the size and what it takes",
		   type);
		if (rc != SF_ERR_INVALID || !strstr(sf_last_error(), "got 2 bytes"))
			diag("  rc %d, the message: %s", rc, sf_last_error());
	}
	char want[128];
	snprintf(want, sizeof want,
	         "layer type \"linear\" takes a config of %zu or %zu bytes, got 2 bytes",
	         sizeof(int), sizeof(struct sf_linear_config));
	sf_graph_layer(g, "linear", &x, 1, "ab", 2, "short", &id);
	ok_true(has(want), "  linear's message, the user's case (\"ab\" was read as a width)");
	sf_graph_layer(g, "relu", &x, 1, &(int){1}, sizeof(int), NULL, &id);
	ok_true(has("layer type \"relu\" takes no config (NULL, 0), got 4 bytes"),
	        "relu takes no config");
	sf_graph_layer(g, "layernorm", &x, 1, "abcdefgh", 8, "ln", &id);
	ok_true(has("takes no config (NULL, 0) or a config of 4 bytes, got 8 bytes"),
	        "layernorm takes none or its struct");
	ok_invalid(sf_graph_layer(g, "linear", &x, 1, NULL, 0, "fc", &id),
	           "linear without a config");
	ok_true(has("layer type \"linear\" takes a config of 4 or 8 bytes, got none (NULL, 0)"),
	        "  says it needs one");

	struct sf_linear_config lc = {.out_dim = 6, .init_std = 0.02f};
	struct sf_layernorm_config nc = {.eps = 1e-6f};
	ok_sf_ok(sf_graph_layer(g, "linear", &x, 1, &(int){6}, sizeof(int), "fc_short", &id),
	         "linear takes an int");
	ok_sf_ok(sf_graph_layer(g, "linear", &x, 1, &lc, sizeof lc, "fc_long", &id),
	         "linear takes a struct sf_linear_config");
	ok_sf_ok(sf_graph_layer(g, "layernorm", &x, 1, NULL, 0, "ln_default", &id),
	         "layernorm takes no config");
	ok_sf_ok(sf_graph_layer(g, "layernorm", &x, 1, &nc, sizeof nc, "ln_eps", &id),
	         "layernorm takes a struct sf_layernorm_config");
	ok_sf_ok(sf_graph_layer(g, "relu", &x, 1, NULL, 0, NULL, &id), "relu takes no config");

	char twelve[12] = {0};
	ok_sf_ok(sf_graph_layer(g, "apitest_sized", &x, 1, NULL, 0, NULL, &id),
	         "a registered type takes no config where it lists 0");
	ok_sf_ok(sf_graph_layer(g, "apitest_sized", &x, 1, twelve, sizeof twelve, NULL, &id),
	         "  and the 12 bytes it lists");
	ok_invalid(sf_graph_layer(g, "apitest_sized", &x, 1, twelve, 8, NULL, &id),
	           "  but not 8 bytes");
	ok_true(has("layer type \"apitest_sized\" takes no config (NULL, 0) or a config of 12 "
	            "bytes, got 8 bytes"),
	        "  naming the type, the size and the sizes it lists");
	ok_sf_ok(sf_graph_layer(g, "apitest_identity", &x, 1, twelve, 5, NULL, &id),
	         "a registered type that lists no size takes any (as before version 4)");
	ok_sf_ok(sf_graph_layer(g, "apitest_v3", &x, 1, twelve, 5, NULL, &id),
	         "a version-3 type's configs are unchecked");
	ok_sf_ok(sf_graph_destroy(g), "sf_graph_destroy(config_sizes)");
}

/* --- what reaches stderr ----------------------------------------------------------- */

static FILE *captured;
static int saved_stderr = -1;

/* Sends stderr to a temporary file until capture_end(). */
static void capture_begin(void)
{
	fflush(stderr);
	captured = tmpfile();
	saved_stderr = dup(STDERR_FILENO);
	if (captured && saved_stderr >= 0)
		dup2(fileno(captured), STDERR_FILENO);
}

/* Restores stderr; what was printed since capture_begin() (a static buffer). */
static const char *capture_end(void)
{
	static char text[8192];
	size_t n = 0;
	fflush(stderr);
	if (saved_stderr >= 0) {
		dup2(saved_stderr, STDERR_FILENO);
		close(saved_stderr);
		saved_stderr = -1;
	}
	if (captured) {
		rewind(captured);
		n = fread(text, 1, sizeof text - 1, captured);
		fclose(captured);
		captured = NULL;
	}
	text[n] = '\0';
	return text;
}

static int occurrences(const char *text, const char *what)
{
	int k = 0;
	for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
		k++;
	return k;
}

/* --- the enums' names (sf_optimizer_from_name and the like) ----------------------- */

/* Each public pair seen through ints, so that one loop checks them all: from() leaves
 * *v at -7 unless the library writes the value. */
#define NAME_PAIR(stem, type)                                                                      \
	static int stem##_from(const char *s, int *v)                                              \
	{                                                                                          \
		type e = (type)-7;                                                                 \
		int rc = sf_##stem##_from_name(s, &e);                                             \
		*v = (int)e;                                                                       \
		return rc;                                                                         \
	}                                                                                          \
	static const char *stem##_to(int v)                                                        \
	{                                                                                          \
		return sf_##stem##_name((type)v);                                                  \
	}
NAME_PAIR(optimizer, enum sf_optimizer)
NAME_PAIR(sharding, enum sf_sharding)
NAME_PAIR(backward_prefetch, enum sf_backward_prefetch)
NAME_PAIR(skip, enum sf_skip)
NAME_PAIR(comm_backend, enum sf_comm_backend)
NAME_PAIR(optimizer_on, enum sf_optimizer_on)
NAME_PAIR(gpu_math, enum sf_gpu_math)
NAME_PAIR(accum_mode, enum sf_accum_mode)
NAME_PAIR(dtype, enum sf_dtype)
NAME_PAIR(recompute, enum sf_recompute)
NAME_PAIR(log_level, enum sf_log_level)
NAME_PAIR(pp_schedule, enum sf_pp_schedule)
NAME_PAIR(pp_balance, enum sf_pp_balance)
NAME_PAIR(rounding, enum sf_rounding)

struct named_enum {
	const char *stem;
	int (*from)(const char *, int *);
	const char *(*to)(int);
	int count;
	const char *knob;     /* its sf_config_set name (NULL: none), which reads the same names */
	size_t off;           /* the knob's field in struct sf_config */
	const char *what;     /* how a refusal calls a value ("an optimizer") */
	const char *names[6]; /* the documented names (README, docs/api.md), in value order */
};

/* A row's functions by their stem, and the knob (field) that reads the same names */
#define NAMED(s, field)                                                                            \
	.stem = #s, .from = s##_from, .to = s##_to, .knob = #field,                                \
	.off = offsetof(struct sf_config, field)
static const struct named_enum named_enums[] = {
    {.stem = "optimizer",
     .from = optimizer_from,
     .to = optimizer_to,
     .count = SF_OPT_COUNT,
     .what = "an optimizer",
     .names = {"sgd", "adamw", "lion"}},
    {NAMED(sharding, sharding), .count = SF_SHARD_COUNT, .what = "a sharding",
     .names = {"full", "grad_op", "none", "hybrid"}},
    {NAMED(backward_prefetch, bwd_prefetch), .count = SF_BWD_COUNT,
     .what = "a backward prefetch policy", .names = {"pre", "post", "none"}},
    {NAMED(skip, skip), .count = SF_SKIP_COUNT, .what = "a skip mode",
     .names = {"none", "comm", "compute"}},
    {NAMED(comm_backend, comm), .count = SF_COMM_COUNT, .what = "a comm backend",
     .names = {"mpi", "nccl", "mpi-sync"}},
    {NAMED(optimizer_on, optimizer_on), .count = SF_OPT_ON_COUNT, .what = "an optimizer placement",
     .names = {"device", "host"}},
    {NAMED(gpu_math, gpu_math), .count = SF_GPU_MATH_COUNT, .what = "a GPU math mode",
     .names = {"fp32", "tf32", "bf16"}},
    {NAMED(accum_mode, accum_mode), .count = SF_ACCUM_COUNT, .what = "an accumulation mode",
     .names = {"sharded", "local"}},
    {NAMED(dtype, param_dtype), .count = SF_DTYPE_COUNT, .what = "a dtype",
     .names = {"fp32", "bf16"}},
    {NAMED(recompute, recompute), .count = SF_RECOMPUTE_COUNT, .what = "a recompute mode",
     .names = {"none", "units"}},
    {NAMED(log_level, log_level), .count = SF_LOG_COUNT, .what = "a log level",
     .names = {"off", "error", "warn", "info", "debug"}},
    {NAMED(pp_schedule, pp_schedule), .count = SF_PP_SCHEDULE_COUNT,
     .what = "a pipeline schedule", .names = {"gpipe", "1f1b", "zero-bubble", "interleaved"}},
    {NAMED(pp_balance, pp_balance), .count = SF_PP_BALANCE_COUNT,
     .what = "a pipeline balance", .names = {"flops", "params"}},
    {NAMED(rounding, rounding), .count = SF_ROUNDING_COUNT, .what = "a rounding direction",
     .names = {"nearest", "upward", "downward"}},
};

/* The message of a refusal: `who` (the quoted name, or "sf_<stem>_from_name: a NULL
 * name") "is not <what>: accepted names are a, b, c" */
static bool refusal_is(const struct named_enum *e, const char *who)
{
	char want[512];
	snprintf(want, sizeof want, "%s is not %s: accepted names are ", who, e->what);
	for (int i = 0; i < e->count; i++)
		snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? ", " : "",
		         e->names[i]);
	if (strcmp(sf_last_error(), want) == 0)
		return true;
	diag("  sf_%s_from_name: got \"%s\", expected \"%s\"", e->stem, sf_last_error(), want);
	return false;
}

/* One enum: name -> value -> name for every value and the documented names exactly;
 * sf_config_set reads the same names; anything else (unknown, a prefix, a longer word,
 * another case, "", NULL) refused, *out untouched, with a message listing the names;
 * values out of range have no name. */
static void check_named_enum(const struct named_enum *e)
{
	bool all = e->names[e->count] == NULL;
	for (int v = 0; v < e->count; v++) {
		const char *n = e->to(v);
		int back = -1, rc = n ? e->from(n, &back) : SF_ERR_INVALID;
		if (!n || strcmp(n, e->names[v]) != 0 || rc != SF_OK || back != v ||
		    e->to(back) != n) {
			diag("  value %d: named \"%s\" (documented \"%s\"), read back as %d "
			     "(status %d)",
			     v, n ? n : "(NULL)", e->names[v], back, rc);
			all = false;
		}
		struct sf_config c;
		sf_config_init(&c);
		if (e->knob && (sf_config_set(&c, e->knob, e->names[v]) != SF_OK ||
		                *(const int *)((const char *)&c + e->off) != v)) {
			diag("  sf_config_set(%s, \"%s\") does not give value %d", e->knob,
			     e->names[v], v);
			all = false;
		}
	}
	ok(all, "sf_%s_name/_from_name: the %d documented names, name -> value -> name%s", e->stem,
	   e->count, e->knob ? ", as sf_config_set reads them" : "");

	int v = 0;
	int rc = e->from("x-bogus", &v);
	ok(rc == SF_ERR_INVALID && v == -7 && refusal_is(e, "\"x-bogus\""),
	   "  an unknown name refused (%d), *out untouched, the accepted names listed", rc);

	/* near misses: a prefix, a longer word, another case, the empty name */
	char near[4][32];
	snprintf(near[0], sizeof near[0], "%.*s", (int)strlen(e->names[0]) - 1, e->names[0]);
	snprintf(near[1], sizeof near[1], "%sx", e->names[e->count - 1]);
	snprintf(near[2], sizeof near[2], "%s", e->names[1]);
	for (char *p = near[2]; *p; p++)
		*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
	near[3][0] = '\0';
	all = true;
	for (int i = 0; i < 4; i++) {
		v = 0;
		if ((rc = e->from(near[i], &v)) != SF_ERR_INVALID || v != -7) {
			diag("  \"%s\": status %d, value %d", near[i], rc, v);
			all = false;
		}
	}
	ok(all, "  \"%s\", \"%s\", \"%s\" and \"\" refused", near[0], near[1], near[2]);

	char who[96];
	snprintf(who, sizeof who, "sf_%s_from_name: a NULL name", e->stem);
	v = 0;
	rc = e->from(NULL, &v);
	ok(rc == SF_ERR_INVALID && v == -7 && refusal_is(e, who),
	   "  a NULL name refused (%d), the accepted names listed", rc);

	ok(e->to(e->count) == NULL && e->to(-1) == NULL && e->to(INT32_MAX) == NULL,
	   "  no name for %d (the count), -1 or INT32_MAX", e->count);
}

static void test_enum_names(void)
{
	for (size_t i = 0; i < sizeof named_enums / sizeof named_enums[0]; i++)
		check_named_enum(&named_enums[i]);
	ok_invalid(sf_optimizer_from_name("sgd", NULL), "sf_optimizer_from_name(name, NULL)");
	ok_true(has("sf_optimizer_from_name: out is NULL"), "  saying so");
	ok_invalid(sf_dtype_from_name("bf16", NULL), "sf_dtype_from_name(name, NULL)");

	/* a refusal is kept, never printed: the program prints it with its option */
	enum sf_optimizer o = SF_OPT_ADAMW;
	capture_begin();
	int rc = sf_optimizer_from_name("rmsprop", &o);
	const char *err = capture_end();
	ok(rc == SF_ERR_INVALID && o == SF_OPT_ADAMW && err[0] == '\0' &&
	       has("\"rmsprop\" is not an optimizer: accepted names are sgd, adamw, lion"),
	   "\"rmsprop\": refused, not printed (stderr: \"%.60s\"), kept for sf_last_error()", err);
}

/* A layer type's refusal (sf_error_set in infer) is printed once, with the context
 * sf_graph_layer adds; a type failing without a message is not given an older one;
 * sf_log_set_quiet(1) stops the printing of errors, and they are still kept. */
static void test_error_printing(sf_context *ctx)
{
	struct sf_config cfg;
	if (sf_context_config(ctx, &cfg) != SF_OK || cfg.log_level < SF_LOG_ERROR) {
		ok(1, "# SKIP SHARDFLOW_LOG=off: the library prints nothing to read back");
		return;
	}
	sf_graph *g = NULL;
	int x = -1, id = -1;
	if (!ok_sf_ok(sf_graph_create("printing", &g), "sf_graph_create(printing)"))
		return;
	ok_sf_ok(sf_graph_input(g, "x", 4, &x), "input x(4)");

	capture_begin();
	int rc = sf_graph_layer(g, "apitest_picky", &x, 1, NULL, 0, NULL, &id);
	const char *err = capture_end();
	ok_invalid(rc, "apitest_picky refuses");
	ok(occurrences(err, "this type accepts no configuration") == 1 &&
	       occurrences(err, "shardflow: error:") == 1,
	   "a type's message is printed once (printed %d times)",
	   occurrences(err, "this type accepts no configuration"));
	ok(strstr(err, "sf_graph_layer: layer type \"apitest_picky\" rejected its inputs or "
	               "config: apitest_picky: this type accepts no configuration") != NULL,
	   "  with the context the library adds");
	if (occurrences(err, "this type accepts no configuration") != 1)
		diag("  stderr: %s", err);

	sf_error_set(SF_ERR_INVALID, "apitest: an older message");
	capture_begin();
	rc = sf_graph_layer(g, "apitest_mute", &x, 1, NULL, 0, NULL, &id);
	err = capture_end();
	ok(rc == SF_ERR_INVALID && has("rejected its inputs or config: (no message") &&
	       !strstr(err, "an older message"),
	   "a type refusing without a message is not given an older one");

	sf_log_set_quiet(1);
	capture_begin();
	rc = sf_graph_layer(g, "apitest_picky", &x, 1, NULL, 0, NULL, &id);
	int rc2 = sf_error_set(SF_ERR_INVALID, "apitest: quiet marker");
	err = capture_end();
	sf_log_set_quiet(0);
	ok(rc == SF_ERR_INVALID && rc2 == SF_ERR_INVALID && err[0] == '\0',
	   "sf_log_set_quiet(1): an error is not printed (stderr: \"%.60s\")", err);
	ok_true(has("apitest: quiet marker"), "  and still kept for sf_last_error()");
	capture_begin();
	sf_error_set(SF_ERR_INVALID, "apitest: loud marker");
	err = capture_end();
	ok(occurrences(err, "shardflow: error: apitest: loud marker") == 1,
	   "sf_log_set_quiet(0) prints again (stderr: \"%.60s\")", err);
	ok_sf_ok(sf_graph_destroy(g), "sf_graph_destroy(printing)");
}

/* sf_graph_loss's refusals, and a regression graph without labels that trains */
static void test_losses(sf_context *ctx)
{
	sf_graph *g = NULL;
	sf_model *m = NULL;
	struct sf_loss_config c;
	int x, t, t2, h, id;
	memset(&c, 0xff, sizeof c);
	ok(sf_loss_config_init(&c) == SF_OK && c.kind == SF_LOSS_CROSS_ENTROPY && c.delta == 1.0f,
	   "sf_loss_config_init: cross-entropy, delta 1");
	if (!ok_sf_ok(sf_graph_create("reg", &g), "a regression graph"))
		return;
	sf_graph_input(g, "x", 4, &x);
	sf_graph_input(g, "t", 2, &t);
	sf_graph_input(g, "t3", 3, &t2);
	sf_graph_linear(g, x, 2, "fc", &h);
	c.kind = SF_LOSS_MSE;
	ok_invalid(sf_graph_loss(g, &c, h, t2, &id), "a target of another width is refused");
	ok_true(has("pred \"fc\" has width 2, target \"t3\" 3"), "  naming both widths");
	ok_invalid(sf_graph_loss(g, &c, h, h, &id), "a target that is not a float input is refused");
	ok_invalid(sf_graph_loss(g, &c, x, t, &id), "a pred that is not a layer is refused");
	c.kind = SF_LOSS_HUBER, c.delta = 0.0f;
	ok_invalid(sf_graph_loss(g, &c, h, t, &id), "Huber with delta 0 is refused");
	c.kind = (enum sf_loss_kind)9;
	ok_invalid(sf_graph_loss(g, &c, h, t, &id), "loss kind 9 is refused");
	c.kind = SF_LOSS_L1, c.delta = 1.0f;
	ok_sf_ok(sf_graph_loss(g, &c, h, t, &id), "an L1 loss between fc and t");
	ok_refused(sf_graph_loss(g, &c, h, t, &id), "a second loss is refused");
	struct sf_model_options o;
	sf_model_options_init(&o);
	o.batch = 8;
	float xs[8 * 4] = {0}, ts[8 * 2] = {0}, t3[8 * 3] = {0};
	const float *in[3] = {xs, ts, t3};
	struct sf_batch b = {.ninputs = 3, .inputs = in}; /* no labels: none are needed */
	int64_t ticket;
	double l = -1.0;
	ok(sf_model_create(ctx, g, &o, &m) == SF_OK && sf_model_step(m, &b, &ticket) == SF_OK &&
	       sf_model_loss(m, ticket, &l) == SF_OK && l >= 0.0,
	   "a regression graph without labels trains a step (loss %g)", l);
	sf_model_destroy(m);
	sf_graph_destroy(g);
}

static void test_graph_misuse(void)
{
	sf_graph *g = NULL;
	int x = -1, x2 = -1, lab = -1, h = -1, h4 = -1, r = -1, z = -1, loss = -1, id = -1;

	ok_invalid(sf_graph_create("g", NULL), "sf_graph_create with NULL out");
	ok_invalid(sf_graph_create(NULL, &g), "sf_graph_create with NULL name");
	if (g) { /* a lenient implementation made one: do not leak it */
		sf_graph_destroy(g);
		g = NULL;
	}
	if (!ok_sf_ok(sf_graph_create("misuse", &g), "sf_graph_create"))
		return;

	ok_invalid(sf_graph_input(NULL, "x", 4, &id), "sf_graph_input(NULL graph)");
	ok_invalid(sf_graph_input(g, "x", 0, &id), "input of width 0");
	ok_invalid(sf_graph_input(g, "x", -3, &id), "input of width -3");
	ok_sf_ok(sf_graph_input(g, "x", 8, &x), "input x(8)");
	ok_sf_ok(sf_graph_input(g, "x2", 8, &x2), "input x2(8)");
	ok_invalid(sf_graph_label_input(NULL, "y", 4, &id), "sf_graph_label_input(NULL graph)");
	ok_invalid(sf_graph_label_input(g, "y", 0, &id), "label input with 0 classes");
	ok_invalid(sf_graph_label_input(g, "y", -2, &id), "label input with -2 classes");
	ok_sf_ok(sf_graph_label_input(g, "y", 4, &lab), "label input y(4)");
	ok_invalid(sf_graph_label_input(g, "y2", 4, &id), "a second label input");

	ok_invalid(sf_graph_linear(NULL, x, 4, "fc", &id), "sf_graph_linear(NULL graph)");
	ok_invalid(sf_graph_linear(g, 999, 4, "fc", &id), "linear on node id 999 (no such node)");
	ok_invalid(sf_graph_linear(g, -1, 4, "fc", &id), "linear on node id -1");
	ok_invalid(sf_graph_linear(g, x, 0, "fc", &id), "linear with out_dim 0");
	ok_invalid(sf_graph_linear(g, x, -5, "fc", &id), "linear with out_dim -5");
	ok_invalid(sf_graph_linear(g, lab, 4, "fc", &id), "linear on the integer label input");
	ok_invalid(sf_graph_linear(g, x, 4, NULL, &id), "linear (has parameters) without a name");
	ok_sf_ok(sf_graph_linear(g, x, 8, "fc1", &h), "linear fc1");
	ok_invalid(sf_graph_linear(g, h, 8, "fc1", &id), "a second layer named fc1");
	ok_sf_ok(sf_graph_linear(g, x2, 4, "fc4", &h4), "linear fc4");

	ok_invalid(sf_graph_relu(NULL, h, &id), "sf_graph_relu(NULL graph)");
	ok_invalid(sf_graph_relu(g, 999, &id), "relu on node id 999");
	ok_invalid(sf_graph_gelu(NULL, h, &id), "sf_graph_gelu(NULL graph)");
	ok_invalid(sf_graph_gelu(g, -7, &id), "gelu on node id -7");
	ok_sf_ok(sf_graph_relu(g, h, &r), "relu");

	ok_invalid(sf_graph_add(NULL, r, x, &id), "sf_graph_add(NULL graph)");
	ok_invalid(sf_graph_add(g, r, 999, &id), "add with node id 999");
	ok_invalid(sf_graph_add(g, r, h4, &id), "add of widths 8 and 4 (shape mismatch)");

	ok_invalid(sf_graph_layer(NULL, "apitest_identity", &r, 1, NULL, 0, NULL, &id),
	           "sf_graph_layer(NULL graph)");
	ok_invalid(sf_graph_layer(g, "no_such_type", &r, 1, NULL, 0, NULL, &id),
	           "sf_graph_layer of unknown type \"no_such_type\"");
	{ /* the message lists every registered type: the 17 built-in ones and this test's */
		static const char *const types[] = {
		    "linear",      "linear_nobias", "relu",          "gelu",       "add",
		    "layernorm",   "embedding",     "attention",     "pos_embedding", "rmsnorm",
		    "silu",        "mul",           "rope",          "attention_gqa", "linear_split",
		    "linear_col",  "linear_row",    "apitest_identity"};
		const char *msg = sf_last_error();
		int all = 1;
		for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
			char q[64];
			snprintf(q, sizeof q, "%s,", types[i]);
			char q2[64];
			snprintf(q2, sizeof q2, "%s;", types[i]);
			if (!strstr(msg, q) && !strstr(msg, q2)) {
				diag("not in the message: %s", types[i]);
				all = 0;
			}
		}
		ok(all, "  its message lists every registered type (18)");
	}
	ok_invalid(sf_graph_layer(g, NULL, &r, 1, NULL, 0, NULL, &id),
	           "sf_graph_layer with a NULL type name");
	ok_invalid(sf_graph_layer(g, "apitest_identity", NULL, 1, NULL, 0, NULL, &id),
	           "sf_graph_layer with NULL inputs");
	int two[2] = {r, x};
	ok_invalid(sf_graph_layer(g, "apitest_identity", two, 2, NULL, 0, NULL, &id),
	           "sf_graph_layer with 2 inputs for a type taking 1");
	ok_invalid(sf_graph_layer(g, "apitest_identity", two, 0, NULL, 0, NULL, &id),
	           "sf_graph_layer with 0 inputs");
	int five[5] = {r, r, r, r, r};
	ok_invalid(
	    sf_graph_layer(g, "apitest_identity", five, SF_MAX_INPUTS + 1, NULL, 0, NULL, &id),
	    "sf_graph_layer with SF_MAX_INPUTS + 1 inputs");
	int bad = 999;
	ok_invalid(sf_graph_layer(g, "apitest_identity", &bad, 1, NULL, 0, NULL, &id),
	           "sf_graph_layer on node id 999");
	ok_invalid(sf_graph_layer(g, "apitest_identity", &r, 1, NULL, 16, NULL, &id),
	           "sf_graph_layer with NULL config of size 16");
	ok_invalid(sf_graph_layer(g, "apitest_picky", &r, 1, NULL, 0, NULL, &id),
	           "sf_graph_layer whose type's infer() refuses");
	int cfg = 3;
	ok_sf_ok(sf_graph_layer(g, "apitest_identity", &r, 1, &cfg, sizeof cfg, NULL, &id),
	         "sf_graph_layer of a registered type");

	ok_sf_ok(sf_graph_linear(g, r, 4, "head", &z), "linear head (4 = nclasses)");
	ok_invalid(sf_graph_softmax_cross_entropy(NULL, z, lab, &id),
	           "sf_graph_softmax_cross_entropy(NULL graph)");
	ok_invalid(sf_graph_softmax_cross_entropy(g, r, lab, &id),
	           "cross-entropy on logits of width 8 with 4 classes");
	ok_invalid(sf_graph_softmax_cross_entropy(g, z, x, &id),
	           "cross-entropy whose labels are a float input");
	ok_invalid(sf_graph_softmax_cross_entropy(g, z, 999, &id),
	           "cross-entropy with labels id 999");
	ok_invalid(sf_graph_softmax_cross_entropy(g, 999, lab, &id),
	           "cross-entropy with logits id 999");
	ok_sf_ok(sf_graph_softmax_cross_entropy(g, z, lab, &loss), "cross-entropy");
	ok_refused(sf_graph_softmax_cross_entropy(g, z, lab, &id), "a second loss");
	ok_refused(sf_graph_relu(g, z, &id), "a relu after the loss");
	ok_refused(sf_graph_linear(g, z, 4, "after", &id), "a linear after the loss");
	ok_true(sf_last_error()[0] != '\0', "sf_last_error() is non-empty after an error");
	ok_sf_ok(sf_graph_destroy(g), "sf_graph_destroy");
}

/* input(5) -> linear(6) -> relu -> linear(3) -> softmax_cross_entropy(3 classes) */
#define IN 5
#define HID 6
#define NCLS 3

static int build_tiny(sf_graph **out, int with_loss)
{
	sf_graph *g = NULL;
	int x, y, h, r, z, l;
	int rc = sf_graph_create(with_loss ? "tiny" : "tiny_noloss", &g);
	if (rc == SF_OK)
		rc = sf_graph_input(g, "x", IN, &x);
	if (rc == SF_OK)
		rc = sf_graph_label_input(g, "y", NCLS, &y);
	if (rc == SF_OK)
		rc = sf_graph_linear(g, x, HID, "fc1", &h);
	if (rc == SF_OK)
		rc = sf_graph_relu(g, h, &r);
	if (rc == SF_OK)
		rc = sf_graph_linear(g, r, NCLS, "fc2", &z);
	if (rc == SF_OK && with_loss)
		rc = sf_graph_softmax_cross_entropy(g, z, y, &l);
	if (rc != SF_OK) {
		sf_graph_destroy(g);
		return rc;
	}
	*out = g;
	return SF_OK;
}

static void fill_batch(int first, int rows, float *x, int32_t *y)
{
	for (int r = 0; r < rows; r++) {
		unsigned k = (unsigned)(first + r);
		for (int i = 0; i < IN; i++)
			x[r * IN + i] = (float)((k * 7u + (unsigned)i * 13u) % 17u) / 8.0f - 1.0f;
		y[r] = (int32_t)(k % NCLS);
	}
}

static void test_model(sf_context *ctx, int size)
{
	sf_graph *g = NULL, *noloss = NULL;
	sf_model *m = NULL, *dummy = NULL;
	struct sf_model_options o;
	sf_model_options_init(&o);
	o.batch = 8 * size;
	o.lr = 0.1f;

	if (!ok_sf_ok(build_tiny(&g, 1), "build the tiny graph") ||
	    !ok_sf_ok(build_tiny(&noloss, 0), "build the tiny graph without its loss"))
		goto out;

	ok_refused(sf_model_create(NULL, g, &o, &dummy), "sf_model_create(NULL ctx)");
	ok_invalid(sf_model_create(ctx, NULL, &o, &dummy), "sf_model_create(NULL graph)");
	ok_invalid(sf_model_create(ctx, g, &o, NULL), "sf_model_create(NULL out)");
	ok_refused(sf_model_create(ctx, noloss, &o, &dummy),
	           "sf_model_create of a graph without loss");
	struct sf_model_options bad = o;
	bad.batch = 0;
	ok_invalid(sf_model_create(ctx, g, &bad, &dummy), "sf_model_create with batch 0");
	bad.batch = -4;
	ok_invalid(sf_model_create(ctx, g, &bad, &dummy), "sf_model_create with batch -4");
	if (size > 1) {
		bad.batch = size - 1;
		ok_invalid(sf_model_create(ctx, g, &bad, &dummy),
		           "sf_model_create with a batch smaller than the world");
	}
	bad = o;
	bad.max_grad_norm = -1.0f;
	ok_invalid(sf_model_create(ctx, g, &bad, &dummy), "sf_model_create with max_grad_norm -1");
	bad.max_grad_norm = NAN;
	ok_invalid(sf_model_create(ctx, g, &bad, &dummy), "sf_model_create with max_grad_norm NaN");
	bad = o;
	bad.no_decay = 8;
	ok_invalid(sf_model_create(ctx, g, &bad, &dummy), "sf_model_create with no_decay 8");
	bad = o;
	bad.optimizer = SF_OPT_COUNT;
	ok_invalid(sf_model_create(ctx, g, &bad, &dummy),
	           "sf_model_create with optimizer SF_OPT_COUNT");
	if (!ok_true(strstr(sf_last_error(), "SF_OPT_LION") != NULL,
	             "its message names the accepted optimizers"))
		diag("  the message: %s", sf_last_error());
	bad.optimizer = (enum sf_optimizer) - 1;
	ok_invalid(sf_model_create(ctx, g, &bad, &dummy), "sf_model_create with optimizer -1");
	struct sf_config cfg;
	bad = o;
	bad.config = &cfg;
	sf_context_config(ctx, &cfg);
	cfg.recompute = (enum sf_recompute)5;
	ok_int_eq(sf_model_create(ctx, g, &bad, &dummy), SF_ERR_CONFIG,
	          "sf_model_create with config.recompute 5");
	ok_true(has("sf_model_create: config.recompute=\"5\" is invalid: accepted values are none, "
	            "units"),
	        "  naming the field and the choices");
	sf_context_config(ctx, &cfg);
	cfg.comm = SF_COMM_NCCL;
	ok_int_eq(sf_model_create(ctx, g, &bad, &dummy), SF_ERR_CONFIG,
	          "a model's config with another comm backend than the context's");
	ok_true(has("config.comm=nccl is the runtime's"), "  saying it is fixed at start");
	ok_true(dummy == NULL, "refused sf_model_create calls leave *out alone");

	if (!ok_sf_ok(sf_model_create(ctx, g, &o, &m), "sf_model_create of the tiny graph"))
		goto out;
	sf_graph_destroy(g);
	g = NULL; /* the model does not need it any more */

	size_t n = 0;
	ok_sf_ok(sf_model_param_count(m, &n), "sf_model_param_count");
	ok_int_eq(n, HID * IN + HID + NCLS * HID + NCLS, "param count is sum of O*I + O");
	ok_invalid(sf_model_param_count(NULL, &n), "sf_model_param_count(NULL model)");
	ok_invalid(sf_model_param_count(m, NULL), "sf_model_param_count(m, NULL)");

	int first = -1, rows = -1;
	ok_invalid(sf_model_local_rows(NULL, &first, &rows), "sf_model_local_rows(NULL model)");
	/* either output may be NULL (only one wanted), not both */
	ok_invalid(sf_model_local_rows(m, NULL, NULL), "sf_model_local_rows(m, NULL, NULL)");
	ok_sf_ok(sf_model_local_rows(m, &first, &rows), "sf_model_local_rows");
	ok_true(rows >= 1 && first >= 0 && first + rows <= o.batch, "local rows lie in the batch");
	if (rows < 1)
		goto out;

	float *x = malloc(sizeof(float) * (size_t)rows * IN);
	int32_t *y = malloc(sizeof(int32_t) * (size_t)rows);
	fill_batch(first, rows, x, y);
	const float *inputs[1] = {x};
	const float *null_inputs[1] = {NULL};
	struct sf_batch b = {.ninputs = 1, .inputs = inputs, .labels = y};
	struct sf_model_stats st0 = {0}, st1 = {0};
	int64_t t = -1;

	ok_sf_ok(sf_model_stats(m, &st0), "sf_model_stats");
	ok_invalid(sf_model_stats(m, NULL), "sf_model_stats(m, NULL)");
	ok_invalid(sf_model_stats(NULL, &st0), "sf_model_stats(NULL model)");
	ok_invalid(sf_model_step(NULL, &b, &t), "sf_model_step(NULL model)");
	ok_invalid(sf_model_step(m, NULL, &t), "sf_model_step(m, NULL batch)");
	struct sf_batch bb = b;
	bb.ninputs = 0;
	ok_invalid(sf_model_step(m, &bb, &t), "sf_model_step with ninputs 0");
	bb.ninputs = 2;
	ok_invalid(sf_model_step(m, &bb, &t), "sf_model_step with ninputs 2 (graph has 1)");
	bb = b;
	bb.inputs = NULL;
	ok_invalid(sf_model_step(m, &bb, &t), "sf_model_step with NULL inputs");
	bb.inputs = null_inputs;
	ok_invalid(sf_model_step(m, &bb, &t), "sf_model_step with inputs[0] NULL");
	bb = b;
	bb.labels = NULL;
	ok_invalid(sf_model_step(m, &bb, &t), "sf_model_step without labels");
	int32_t saved = y[rows - 1];
	y[rows - 1] = NCLS;
	ok_invalid(sf_model_step(m, &b, &t), "sf_model_step with label == nclasses");
	y[rows - 1] = -1;
	ok_invalid(sf_model_step(m, &b, &t), "sf_model_step with label -1");
	y[rows - 1] = saved;
	ok_sf_ok(sf_model_stats(m, &st1), "sf_model_stats after the refused steps");
	ok_int_eq(st1.steps, st0.steps, "refused steps submitted nothing");

	int64_t tickets[3];
	double losses[3] = {NAN, NAN, NAN};
	int step_ok = 1, loss_ok = 1;
	for (int k = 0; k < 3; k++)
		step_ok &= sf_model_step(m, &b, &tickets[k]) == SF_OK;
	ok(step_ok, "3 SGD steps submitted");
	for (int k = 0; k < 3 && step_ok; k++)
		loss_ok &= sf_model_loss(m, tickets[k], &losses[k]) == SF_OK &&
		           isfinite(losses[k]) && losses[k] > 0.0;
	diag("losses: %.6f %.6f %.6f", losses[0], losses[1], losses[2]);
	ok(step_ok && loss_ok, "the 3 losses are finite and positive");
	ok(step_ok && loss_ok && losses[2] < losses[0],
	   "the loss falls over 3 steps (%.6f -> %.6f)", losses[0], losses[2]);
	ok_sf_ok(sf_model_stats(m, &st1), "sf_model_stats after training");
	ok_int_eq(st1.steps, st0.steps + 3, "the stats count the 3 steps");

	double l = 0.0;
	ok_invalid(sf_model_loss(NULL, tickets[0], &l), "sf_model_loss(NULL model)");
	ok_invalid(sf_model_loss(m, tickets[2], NULL), "sf_model_loss(m, t, NULL)");
	ok_invalid(sf_model_loss(m, tickets[2] + 1000, &l),
	           "sf_model_loss of a ticket never issued");
	ok_invalid(sf_model_loss(m, -12345, &l), "sf_model_loss of ticket -12345");
	ok_invalid(sf_model_sync(NULL), "sf_model_sync(NULL)");
	ok_sf_ok(sf_model_sync(m), "sf_model_sync");
	ok_invalid(sf_model_set_lr(NULL, 0.1f), "sf_model_set_lr(NULL model)");
	ok_invalid(sf_model_set_lr(m, NAN), "sf_model_set_lr(m, NaN)");
	ok_sf_ok(sf_model_set_lr(m, 0.05f), "sf_model_set_lr(m, 0.05)");

	float *p = malloc(sizeof(float) * (n + 1));
	ok_invalid(sf_model_params_get(NULL, p, n), "sf_model_params_get(NULL model)");
	ok_invalid(sf_model_params_get(m, NULL, n), "sf_model_params_get(m, NULL, n)");
	ok_invalid(sf_model_params_get(m, p, n - 1), "sf_model_params_get with n - 1");
	ok_invalid(sf_model_params_get(m, p, n + 1), "sf_model_params_get with n + 1");
	ok_invalid(sf_model_params_get(m, p, 0), "sf_model_params_get with 0");
	int finite = sf_model_params_get(m, p, n) == SF_OK;
	for (size_t i = 0; finite && i < n; i++)
		finite = isfinite(p[i]);
	ok(finite, "sf_model_params_get returns %zu finite values", n);

	/* Gradient accumulation and the gradient norm's refusals. */
	ok_invalid(sf_model_grad_norm(m, tickets[2], &l),
	           "sf_model_grad_norm of a model without max_grad_norm");
	ok_invalid(sf_model_accumulate(NULL, &b, &t), "sf_model_accumulate(NULL model)");
	ok_invalid(sf_model_accumulate(m, &bb, &t), "sf_model_accumulate without labels");
	int64_t ta = -1, ts = -1;
	double la = NAN, ls = NAN;
	ok_sf_ok(sf_model_accumulate(m, &b, &ta), "sf_model_accumulate");
	ok_sf_ok(sf_model_stats(m, &st1), "sf_model_stats with a micro-batch accumulated");
	ok_int_eq(st1.accumulated, 1, "the stats count 1 micro-batch accumulated");
	ok_sf_ok(sf_model_step(m, &b, &ts), "sf_model_step after it");
	ok_sf_ok(sf_model_loss(m, ta, &la), "the micro-batch's loss");
	ok_sf_ok(sf_model_loss(m, ts, &ls), "the step's loss");
	ok(ta + 1 == ts && la == ls,
	   "micro-batch and step: consecutive tickets, the same batch's loss (%.6f, %.6f)", la, ls);
	{
		struct sf_model_options oc = o;
		sf_model *mc = NULL;
		sf_graph *gc = NULL;
		double nrm = NAN;
		oc.max_grad_norm = 1.0f;
		if (ok_sf_ok(build_tiny(&gc, 1), "build the tiny graph again") &&
		    ok_sf_ok(sf_model_create(ctx, gc, &oc, &mc), "a model with max_grad_norm 1")) {
			ok_sf_ok(sf_model_accumulate(mc, &b, &ta),
			         "sf_model_accumulate (clipping)");
			ok_sf_ok(sf_model_step(mc, &b, &ts), "sf_model_step (clipping)");
			ok_invalid(sf_model_grad_norm(mc, ta, &nrm),
			           "sf_model_grad_norm of an sf_model_accumulate ticket");
			ok_invalid(sf_model_grad_norm(mc, ts + 1, &nrm),
			           "sf_model_grad_norm of a ticket never issued");
			ok(sf_model_grad_norm(mc, ts, &nrm) == SF_OK && isfinite(nrm) && nrm > 0.0,
			   "sf_model_grad_norm of the step: %g", nrm);
		}
		sf_model_destroy(mc);
		sf_graph_destroy(gc);
	}
	ok_sf_ok(sf_model_stats(m, &st1), "sf_model_stats after the step");
	ok_int_eq(st1.accumulated, 0, "nothing accumulated after a step");

	/* After the refusals above the model still trains. */
	double after = NAN;
	int trains = sf_model_step(m, &b, &t) == SF_OK && sf_model_loss(m, t, &after) == SF_OK;
	ok(trains && isfinite(after), "a step after the refusals trains (loss %.6f)", after);

	/* Only the 16 most recent losses are kept. */
	int many = 1;
	for (int k = 0; k < 20 && many; k++)
		many = sf_model_step(m, &b, NULL) == SF_OK;
	ok(many, "20 more steps with a NULL ticket pointer");
	ok_refused(sf_model_loss(m, tickets[0], &l),
	           "sf_model_loss of a ticket older than 16 steps");

	/* Checkpoints: refusals before any file is touched, and "no checkpoint yet". */
	const char *nowhere = "/nonexistent/shardflow-test-api";
	int found = -1;
	char where[8] = "x";
	ok_invalid(sf_checkpoint_latest(m, NULL, &found, NULL, 0),
	           "sf_checkpoint_latest(NULL dir)");
	ok_invalid(sf_checkpoint_latest(m, nowhere, NULL, NULL, 0),
	           "sf_checkpoint_latest(NULL found)");
	ok(sf_checkpoint_latest(m, nowhere, &found, where, sizeof where) == SF_OK && found == 0 &&
	       !where[0],
	   "sf_checkpoint_latest of a missing directory: none found, not an error");
	ok(sf_checkpoint_load(m, nowhere, NULL) == SF_ERR_NOT_FOUND,
	   "sf_checkpoint_load of a missing directory is SF_ERR_NOT_FOUND");
	struct sf_checkpoint_info neg = {.step = 1, .epoch = -1};
	ok_invalid(sf_checkpoint_save(m, nowhere, &neg), "sf_checkpoint_save with epoch -1");
	struct sf_checkpoint_info huge = {.step = INT64_MAX};
	ok_invalid(sf_checkpoint_save(m, nowhere, &huge), "sf_checkpoint_save with step INT64_MAX");

	free(p);
	free(x);
	free(y);
out:
	ok_sf_ok(sf_model_destroy(m), "sf_model_destroy");
	sf_graph_destroy(g);
	sf_graph_destroy(noloss);
}

/* Max |a - b| over n floats, and whether any differs at all. */
static float max_diff(const float *a, const float *b, size_t n, bool *differs)
{
	float d = 0.0f;
	*differs = false;
	for (size_t i = 0; i < n; i++) {
		*differs |= a[i] != b[i];
		d = fabsf(a[i] - b[i]) > d ? fabsf(a[i] - b[i]) : d;
	}
	return d;
}

/* Unit options and models: a layer that is a unit of its own takes options by the name
 * sf_model_tensor_info reports for its unit, and they reach the model (frozen: its
 * parameters stay bitwise after 3 steps, the next unit's move); a refused
 * sf_model_create leaves the options open; once a model is made from the graph they are
 * refused with SF_ERR_STATE naming the unit, the model trains as before, and they stay
 * refused after that model is destroyed. */
static void test_unit_options_model(sf_context *ctx, int size)
{
	sf_graph *g = NULL;
	sf_model *m = NULL, *dummy = NULL;
	struct sf_unit_options u;
	struct sf_model_options o;
	float *x = NULL, *w1[2] = {NULL, NULL}, *w2[2] = {NULL, NULL};
	int32_t *y = NULL;
	sf_model_options_init(&o);
	o.batch = 8 * size;
	o.lr = 0.1f;
	/* the tiny graph, its head in a unit of sf_graph_unit_begin: x, y, fc1, relu3, fc2 */
	int xi, yi, h, r, z, l;
	int built =
	    sf_graph_create("tinyhead", &g) == SF_OK && sf_graph_input(g, "x", IN, &xi) == SF_OK &&
	    sf_graph_label_input(g, "y", NCLS, &yi) == SF_OK &&
	    sf_graph_linear(g, xi, HID, "fc1", &h) == SF_OK && sf_graph_relu(g, h, &r) == SF_OK &&
	    sf_graph_unit_begin(g, "head") == SF_OK &&
	    sf_graph_linear(g, r, NCLS, "fc2", &z) == SF_OK && sf_graph_unit_end(g) == SF_OK &&
	    sf_graph_softmax_cross_entropy(g, z, yi, &l) == SF_OK;
	if (!ok_true(built, "build the tiny graph with unit \"head\""))
		goto out;
	sf_unit_options_init(&u);
	u.frozen = 1;
	ok_invalid(sf_graph_unit_options(g, "relu3", &u), "a layer without parameters is no unit");
	ok_true(has("graph \"tinyhead\" has no unit \"relu3\""), "  naming the graph and the name");
	ok_invalid(sf_graph_unit_options(g, "fc2", &u), "a layer of unit \"head\" is not a unit");
	ok_true(has("\"fc2\" is a layer of unit \"head\""), "  naming its unit");
	ok_sf_ok(sf_graph_unit_options(g, "fc1", &u), "a lone layer's unit \"fc1\" takes options");
	struct sf_model_options bad = o;
	bad.batch = 0;
	ok_invalid(sf_model_create(ctx, g, &bad, &dummy), "a refused sf_model_create (batch 0)");
	sf_unit_options_init(&u);
	ok_sf_ok(sf_graph_unit_options(g, "head", &u), "  makes no model: options still accepted");
	if (!ok_sf_ok(sf_model_create(ctx, g, &o, &m), "a model of the graph, fc1 frozen"))
		goto out;
	u.frozen = 1;
	ok_int_eq(sf_graph_unit_options(g, "head", &u), SF_ERR_STATE,
	          "unit options after sf_model_create of the graph are refused");
	ok_true(has("unit \"head\"") && has("before sf_model_create"),
	        "  naming the unit and when to set them");
	ok_int_eq(sf_graph_unit_options(g, "fc1", &u), SF_ERR_STATE,
	          "  and a lone layer's unit's too");

	struct sf_tensor_info ti;
	ok(sf_model_tensor_info(m, 0, &ti) == SF_OK && !strcmp(ti.name, "fc1.weight") && ti.unit &&
	       !strcmp(ti.unit, "fc1"),
	   "sf_model_tensor_info: fc1.weight is in unit \"fc1\"");
	ok(sf_model_tensor_info(m, 2, &ti) == SF_OK && !strcmp(ti.name, "fc2.weight") && ti.unit &&
	       !strcmp(ti.unit, "head"),
	   "  and fc2.weight in unit \"head\"");
	int first = 0, rows = 0;
	sf_model_local_rows(m, &first, &rows);
	x = malloc(sizeof(float) * (size_t)rows * IN);
	y = malloc(sizeof(int32_t) * (size_t)rows);
	for (int k = 0; k < 2; k++) {
		w1[k] = malloc(sizeof(float) * HID * IN);
		w2[k] = malloc(sizeof(float) * NCLS * HID);
	}
	if (!x || !y || !w1[0] || !w1[1] || !w2[0] || !w2[1])
		goto out;
	fill_batch(first, rows, x, y);
	const float *inputs[1] = {x};
	struct sf_batch b = {.ninputs = 1, .inputs = inputs, .labels = y};
	int st = sf_model_tensor_get(m, "fc1.weight", w1[0], HID * IN) == SF_OK &&
	         sf_model_tensor_get(m, "fc2.weight", w2[0], NCLS * HID) == SF_OK;
	for (int k = 0; k < 3 && st; k++)
		st = sf_model_step(m, &b, NULL) == SF_OK;
	st = st && sf_model_tensor_get(m, "fc1.weight", w1[1], HID * IN) == SF_OK &&
	     sf_model_tensor_get(m, "fc2.weight", w2[1], NCLS * HID) == SF_OK;
	ok_true(st, "3 steps, fc1.weight and fc2.weight read before and after");
	bool moved1 = true, moved2 = false;
	float d1 = st ? max_diff(w1[0], w1[1], HID * IN, &moved1) : NAN;
	float d2 = st ? max_diff(w2[0], w2[1], NCLS * HID, &moved2) : NAN;
	ok(st && !moved1, "frozen by its lone layer's name, fc1.weight stays bitwise (max diff %g)",
	   (double)d1);
	ok(st && moved2, "the refused options left unit head training (max diff %g)", (double)d2);

	sf_model_destroy(m);
	m = NULL;
	ok_int_eq(sf_graph_unit_options(g, "head", &u), SF_ERR_STATE,
	          "still refused once the model is destroyed (the graph made one)");
out:
	for (int k = 0; k < 2; k++) {
		free(w1[k]);
		free(w2[k]);
	}
	free(x);
	free(y);
	sf_model_destroy(m);
	sf_graph_destroy(g);
}

/* The v2 graph API: sequence length, integer inputs, unit groups, tied parameters. */
static void test_graph_v2_misuse(void)
{
	sf_graph *g = NULL;
	int x = -1, ids = -1, h = -1, h2 = -1, id = -1;
	if (!ok_sf_ok(sf_graph_create("v2", &g), "sf_graph_create(v2)"))
		return;
	ok_invalid(sf_graph_set_seq_len(NULL, 4), "sf_graph_set_seq_len(NULL graph)");
	ok_invalid(sf_graph_set_seq_len(g, 0), "sequence length 0");
	ok_sf_ok(sf_graph_set_seq_len(g, 4), "sequence length 4");
	ok_invalid(sf_graph_int_input(g, "tok", 0, &id), "integer input with range 0");
	ok_invalid(sf_graph_int_input(g, NULL, 8, &id), "integer input without a name");
	ok_sf_ok(sf_graph_int_input(g, "tok", 8, &ids), "integer input tok(8)");
	ok_invalid(sf_graph_set_seq_len(g, 2), "sequence length after the first node");
	ok_sf_ok(sf_graph_input(g, "x", 8, &x), "input x(8)");
	ok_invalid(sf_graph_relu(g, ids, &id), "a relu on integer ids");
	ok_true(strstr(sf_last_error(), "integer") != NULL, "the refusal names the integer node");
	ok_invalid(sf_graph_unit_end(g), "sf_graph_unit_end without a unit");
	ok_invalid(sf_graph_unit_begin(g, ""), "a unit with an empty name");
	ok_sf_ok(sf_graph_unit_begin(g, "block0"), "sf_graph_unit_begin(block0)");
	ok_invalid(sf_graph_unit_begin(g, "block1"), "nested units");
	ok_sf_ok(sf_graph_relu(g, x, &h), "a relu inside the unit");
	ok_invalid(sf_graph_unit_end(g), "a unit without parameters");
	ok_sf_ok(sf_graph_linear(g, h, 8, "fc0", &h), "a linear inside the unit");
	ok_sf_ok(sf_graph_linear(g, h, 8, "fc1", &h2), "a second linear inside the unit");
	ok_sf_ok(sf_graph_unit_end(g), "sf_graph_unit_end");
	ok_sf_ok(sf_graph_unit_begin(g, "block0"), "an earlier unit's name reopens it");
	ok_sf_ok(sf_graph_linear(g, h2, 8, "fc2", &h2), "a linear joins the reopened unit");
	ok_sf_ok(sf_graph_unit_end(g), "sf_graph_unit_end of the reopened unit");
	int in1[1] = {h2};
	ok_invalid(sf_graph_layer_tied(g, "linear", in1, 1, &(int){8}, sizeof(int), NULL, x, &id),
	           "tied to a graph input");
	ok_invalid(sf_graph_layer_tied(g, "linear", in1, 1, &(int){4}, sizeof(int), NULL, h, &id),
	           "tied to a node of another parameter count");
	ok_sf_ok(sf_graph_layer_tied(g, "linear", in1, 1, &(int){8}, sizeof(int), NULL, h, &id),
	         "a linear tied to fc0");
	int tied = id;
	int in2[1] = {tied};
	ok_invalid(
	    sf_graph_layer_tied(g, "linear", in2, 1, &(int){8}, sizeof(int), NULL, tied, &id),
	    "tied to a tied node");
	ok_sf_ok(sf_graph_destroy(g), "sf_graph_destroy(v2)");
}

/* The GPT ops' builders: attention's widths and heads, the position embedding's
 * positions against the graph's T (through its builder and through sf_graph_layer), a
 * failed call leaving the graph usable. */
static void test_gpt_ops_misuse(void)
{
	sf_graph *g = NULL;
	int x = -1, qkv = -1, id = -1, a = -1;
	if (!ok_sf_ok(sf_graph_create("gpt", &g), "sf_graph_create(gpt)"))
		return;
	ok_sf_ok(sf_graph_set_seq_len(g, 6), "sequence length 6");
	ok_sf_ok(sf_graph_input(g, "x", 8, &x), "input x(8)");
	ok_invalid(sf_graph_causal_attention(NULL, x, 2, &id), "attention on a NULL graph");
	ok_invalid(sf_graph_causal_attention(g, x, 2, NULL), "attention with out NULL");
	ok_invalid(sf_graph_causal_attention(g, 99, 2, &id), "attention on a node that is not");
	ok_invalid(sf_graph_causal_attention(g, x, 2, &id), "attention on a width of 8 (not 3C)");
	ok(strstr(sf_last_error(), "divisible by 3") != NULL,
	   "the refusal says the width must be divisible by 3 (%s)", sf_last_error());
	ok_sf_ok(sf_graph_linear(g, x, 24, "qkv", &qkv), "a linear 8 -> 24 (C = 8)");
	ok_invalid(sf_graph_causal_attention(g, qkv, 0, &id), "attention with 0 heads");
	ok_invalid(sf_graph_causal_attention(g, qkv, -2, &id), "attention with -2 heads");
	ok_invalid(sf_graph_causal_attention(g, qkv, 3, &id), "3 heads do not divide C = 8");
	ok(strstr(sf_last_error(), "not divisible by the 3 heads") != NULL,
	   "the refusal names C and the heads (%s)", sf_last_error());
	ok_invalid(sf_graph_layer(g, "attention", &qkv, 1, NULL, 0, NULL, &id),
	           "an attention node without a config");
	ok_sf_ok(sf_graph_causal_attention(g, qkv, 4, &a), "attention with 4 heads of 2");
	ok_invalid(sf_graph_pos_embedding(g, a, 5, "pos", &id), "5 positions for T = 6");
	ok(strstr(sf_last_error(), "T = 6") != NULL, "the refusal names T (%s)", sf_last_error());
	ok_invalid(sf_graph_layer(g, "pos_embedding", &a, 1, &(int){5}, sizeof(int), "pos", &id),
	           "5 positions for T = 6 through sf_graph_layer");
	ok_invalid(sf_graph_pos_embedding(g, a, 0, "pos", &id), "0 positions");
	ok_invalid(sf_graph_pos_embedding(g, a, 8, NULL, &id), "a position embedding, no name");
	ok_invalid(sf_graph_pos_embedding(g, a, 8, "qkv", &id), "a position embedding, name taken");
	ok_sf_ok(sf_graph_pos_embedding(g, a, 6, "pos", &id), "6 positions for T = 6");
	ok_sf_ok(sf_graph_destroy(g), "sf_graph_destroy(gpt)");
}

/* Llama's ops and sf_llama_graph: their refusals, and the MLP width rule against the
 * published models (Llama 2 7B: 11008; Llama 3 8B: 14336, multiplier 1.3) */
static void test_llama_ops_misuse(void)
{
	struct sf_llama_config c;
	ok_sf_ok(sf_llama_config_init(&c), "sf_llama_config_init");
	ok_int_eq(sf_llama_ffn_dim(&c), 352, "the default MLP width: 2 (4 x 128) / 3 up to 32s");
	c.dim = 4096, c.multiple_of = 256;
	ok_int_eq(sf_llama_ffn_dim(&c), 11008,
	          "Llama 2 7B's MLP width (dim 4096, multiple_of 256)");
	c.ffn_dim_multiplier = 1.3f, c.multiple_of = 1024;
	ok_int_eq(sf_llama_ffn_dim(&c), 14336, "Llama 3 8B's (multiplier 1.3, multiple_of 1024)");
	c.ffn_dim = 100;
	ok_int_eq(sf_llama_ffn_dim(&c), 100, "an explicit ffn_dim wins");
	sf_graph *g = NULL;
	sf_llama_config_init(&c);
	c.kv_heads = 3;
	ok_invalid(sf_llama_graph(&c, &g), "sf_llama_graph with 3 kv heads for 4 heads");
	ok_true(strstr(sf_last_error(), "kv_heads (3) must divide heads") != NULL,
	        "the refusal names kv_heads and heads");
	sf_llama_config_init(&c);
	c.heads = 64; /* heads of 2 features: even, fine; 128 heads: 1 feature, odd */
	ok_sf_ok(sf_llama_graph(&c, &g), "sf_llama_graph with 64 heads of 2 features");
	sf_graph_destroy(g);
	g = NULL;
	c.heads = 128, c.kv_heads = 128;
	ok_invalid(sf_llama_graph(&c, &g), "sf_llama_graph with heads of 1 feature (odd for rope)");
	sf_llama_config_init(&c);
	c.rope_theta = 0.0f;
	ok_invalid(sf_llama_graph(&c, &g), "sf_llama_graph with rope_theta 0");
	ok_true(g == NULL, "refused sf_llama_graph calls leave *out NULL");

	int x = -1, y = -1;
	ok_sf_ok(sf_graph_create("llama-ops", &g), "sf_graph_create(llama-ops)");
	ok_sf_ok(sf_graph_set_seq_len(g, 4), "sequence length 4");
	ok_sf_ok(sf_graph_input(g, "x", 24, &x), "input x(24)");
	ok_invalid(sf_graph_rmsnorm(g, x, 0.0f, "n", &y), "rmsnorm with eps 0");
	ok_invalid(sf_graph_rope(g, x, 24, 5, 10000.0f, &y), "rope with an odd head_dim");
	ok_invalid(sf_graph_rope(g, x, 20, 8, 10000.0f, &y), "rope rotating 20 columns in 8s");
	ok_invalid(sf_graph_rope(g, x, 32, 8, 10000.0f, &y), "rope rotating more than the width");
	ok_invalid(sf_graph_gqa_attention(g, x, 4, 3, &y), "attention_gqa with 3 kv heads for 4");
	ok_invalid(sf_graph_gqa_attention(g, x, 3, 3, &y), "attention_gqa: 24 not in 9 parts");
	ok_true(strstr(sf_last_error(), "divisible by 9") != NULL, "the refusal names the parts");
	ok_sf_ok(sf_graph_gqa_attention(g, x, 4, 2, &y), "attention_gqa 4 on 2 heads of 3");
	struct sf_linear_split_config sc = {.nparts = 2, .rows = {8, 0}, .names = {"a", "b"}};
	ok_invalid(sf_graph_linear_split(g, x, &sc, "split", &y), "linear_split with 0 rows");
	sc.rows[1] = 4;
	ok_invalid(sf_graph_linear_split(g, x, NULL, "split", &y), "linear_split without a config");
	ok_sf_ok(sf_graph_linear_split(g, x, &sc, "split", &y), "linear_split 8 + 4");
	ok_sf_ok(sf_graph_destroy(g), "sf_graph_destroy(llama-ops)");
}

/* sf_vocab_parallel_pays: the rows' bytes against the tied matrix's, GPT-2's shapes
 * (V 50 257, C 768): 4 ranks of 128 rows send 5 x 128 x 768 + 3 x 4 x 128 = 493 056
 * floats a rank against 2 x 50 257 x 768 / 4 = 19 298 688; 8 ranks of 8 192 rows 31.5M
 * against 9.6M; the crossover at 4 ranks: 5 C R + 12 R < 19 298 688, R < 5 010.04 */
static void test_vocab_parallel_pays(void)
{
	ok_true(sf_vocab_parallel_pays(50257, 768, 4, 128) == 1, "pays: GPT-2, 4 ranks of 128 rows");
	ok_true(sf_vocab_parallel_pays(50257, 768, 8, 8192) == 0,
	        "does not pay: GPT-2, 8 ranks of 8 192 rows");
	ok_true(sf_vocab_parallel_pays(50257, 768, 4, 5010) == 1 &&
	            sf_vocab_parallel_pays(50257, 768, 4, 5011) == 0,
	        "GPT-2 at 4 ranks: pays up to 5 010 rows a rank, not from 5 011");
	ok_true(sf_vocab_parallel_pays(50257, 768, 1, 16) == 0, "one rank: nothing to gain");
	ok_true(sf_vocab_parallel_pays(0, 768, 4, 16) == 0 && sf_vocab_parallel_pays(50257, -1, 4, 16) == 0 &&
	            sf_vocab_parallel_pays(50257, 768, 4, 0) == 0,
	        "a vocabulary, width or rows not positive: 0");
}

/* sf_init's StarPU defaults: the GPU buffers' background write-back off where the user
 * left it unset, the user's value kept where set (main sets one, unsets the other) */
static void test_starpu_defaults(void)
{
	const char *m = getenv("STARPU_MINIMUM_CLEAN_BUFFERS");
	const char *t = getenv("STARPU_TARGET_CLEAN_BUFFERS");
	ok_true(m && strcmp(m, "0") == 0,
	        "STARPU_MINIMUM_CLEAN_BUFFERS unset: sf_init sets it to 0 (no write-back of GPU buffers)");
	ok_true(t && strcmp(t, "7") == 0, "STARPU_TARGET_CLEAN_BUFFERS set by the user: kept");
}

int main(int argc, char **argv)
{
	sf_context *ctx = NULL;
	int rank = 0, size = 1;

	test_status_strings();
	test_before_init();
	test_options_defaults();
	test_config_in_code();
	test_enum_names();
	test_unit_options();
	test_vocab_parallel_pays();
	unsetenv("STARPU_MINIMUM_CLEAN_BUFFERS");
	setenv("STARPU_TARGET_CLEAN_BUFFERS", "7", 1);
	if (!ok_sf_ok(sf_init(&argc, &argv, &ctx), "sf_init")) {
		diag("sf_init failed: %s", sf_last_error());
		return done_testing();
	}
	test_context(ctx, &rank, &size);
	test_starpu_defaults();
	test_layer_types();
	test_graph_misuse();
	test_config_sizes();
	test_kernel_buffers();
	test_error_printing(ctx);
	test_graph_v2_misuse();
	test_gpt_ops_misuse();
	test_llama_ops_misuse();
	test_model(ctx, size);
	test_unit_options_model(ctx, size);
	test_losses(ctx);
	ok_sf_ok(sf_finalize(ctx), "sf_finalize");
	return done_testing();
}
