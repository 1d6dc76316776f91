/*
 * custom_layer.c — write your own layer type and train a graph that uses it.
 *
 * The type is "rms_norm", an RMS norm with a learnable per-feature gain g (D):
 *   y = x / rms(x) * g,   rms(x) = sqrt(mean(x^2) + eps) per row,
 * initialised g = 1 + 0.1 U(-1, 1). Everything a layer type needs is here: infer()
 * (shapes from the config), an optional config (eps, the sizes it may have declared
 * in config_sizes, so the library refuses any other), init() (parameters from the
 * seeded rng), the forward and backward CPU kernels, and a saved buffer: the forward
 * keeps 1/rms of each row (info->rows floats, saved_floats()) and the backward reads
 * it instead of recomputing it. Kernels read their StarPU buffers through the
 * sf_kernel_* accessors and their shapes from the struct sf_layer_info handed to them
 * as cl_arg; its `backward` field tells sf_kernel_saved() which layout it is in:
 *   forward : params g, x, y, saved
 *   backward: params g, x, y, dy, saved, [dx], dg
 * The backward honours the flags the graph sets: need_dinput[0] (no dx buffer when
 * the input needs no gradient), accumulate[0] (dx += when another consumer of x
 * wrote first) and accumulate_dparams (dg += when the gain is tied to another
 * node's); the library sums dg over ranks.
 *
 *   examples/custom_layer --check       finite-difference check of the kernels (TAP)
 *   mpirun -np 2 examples/custom_layer  train input(16) -> linear(32) -> rms_norm ->
 *                                       gelu -> linear(4) -> softmax cross-entropy
 *
 * It needs only shardflow.h: `cc custom_layer.c $(pkg-config --cflags --libs
 * shardflow)` builds it against an installed shardflow (tests/install.sh does), and
 * --check hands the kernels buffers made by sf_kernel_buffers_create().
 *
 * --type-name NAME registers the same type under another name: a type's name is the
 * user's choice, and reaches task names and traces ("fwd norm1 (NAME L3)"; see
 * tests/trace_names.sh).
 *
 * The data are counter-based: element (step, global row, column) is a hash of those
 * coordinates, so every rank makes only its own rows (sf_model_local_rows) and the
 * problem is the same for any world size. Labels are the argmax of a fixed random
 * linear map of x, a problem the model can learn. Rank 0 prints "step <k> loss
 * <loss>" per step and "final_loss <loss>". An error is printed by the library, with
 * the detail and where it was raised; the program adds which of its calls failed.
 * Exit status: 0 success, 1 an error, 2 a bad command line. Shape letters: B rows, D
 * features, C classes.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardflow.h"

#define PROG "custom_layer"

/* ------------------------------------------------------------------------------ */
/* The "rms_norm" layer type                                                       */
/* ------------------------------------------------------------------------------ */

#define RMS_EPS 1e-5f /* the default eps: keeps 1/rms finite for a row of zeros */

/* The optional config: sf_graph_layer(g, "rms_norm", &x, 1, &cfg, sizeof cfg, ...), or
 * NULL, 0 for eps = RMS_EPS. The type lists both sizes (config_sizes), so the library
 * refuses a blob of any other size before infer() reads it. */
struct rms_norm_config {
	float eps; /* > 0, added to mean(x^2) */
};

static float eps_of(const void *config)
{
	return config ? ((const struct rms_norm_config *)config)->eps : RMS_EPS;
}

static int rms_norm_infer(const int *in_dims, int nin, const void *config, int *out_dim,
                          size_t *nparams)
{
	/* the message only: sf_graph_layer() adds the node's context and prints it */
	float eps = eps_of(config);
	if (!(eps > 0.0f) || isinf(eps))
		return sf_error_set(SF_ERR_INVALID, "rms_norm: eps must be finite and > 0, got %g",
		                    (double)eps);
	if (nin != 1)
		return sf_error_set(SF_ERR_INVALID, "rms_norm: takes 1 input, got %d", nin);
	if (in_dims[0] <= 0)
		return sf_error_set(SF_ERR_INVALID, "rms_norm: input width must be > 0, got %d",
		                    in_dims[0]);
	*out_dim = in_dims[0];
	*nparams = (size_t)in_dims[0]; /* g (D) */
	return SF_OK;
}

/* Called with the same seed on every rank, so every rank agrees on the values. */
static void rms_norm_init(const struct sf_layer_info *li, struct sf_rng *rng, float *params)
{
	for (int d = 0; d < li->out_dim; d++)
		params[d] = 1.0f + 0.1f * sf_rng_uniform(rng);
}

/* The saved buffer: 1/rms of each of this rank's rows, allocated once per node. */
static size_t rms_norm_saved_floats(const struct sf_layer_info *li)
{
	return (size_t)li->rows;
}

/* forward buffers: params g (D), x (B,D), y (B,D), saved rinv (B):
 * rinv = 1 / sqrt(mean(x^2) + eps);  y = x * rinv * g. */
static void rms_norm_forward_cpu(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	const int B = li->rows, D = li->out_dim;
	const double eps = eps_of(li->config);
	const float *g = sf_kernel_params(buffers, li);
	const float *x = sf_kernel_input(buffers, li, 0);
	float *y = sf_kernel_output(buffers, li);
	float *rinv = sf_kernel_saved(buffers, li);
	for (int r = 0; r < B; r++) {
		const float *xr = x + (size_t)r * D;
		float *yr = y + (size_t)r * D;
		double ss = 0.0;
		for (int d = 0; d < D; d++)
			ss += (double)xr[d] * xr[d];
		rinv[r] = (float)(1.0 / sqrt(ss / D + eps));
		for (int d = 0; d < D; d++)
			yr[d] = xr[d] * rinv[r] * g[d];
	}
}

/* backward buffers: params g, x, y, dy, saved rinv, [dx if need_dinput[0]], dg (D).
 * With xh = x * rinv:  dg (=|+=) sum_rows dy * xh;
 *                      dx (=|+=) rinv * (g * dy - xh * mean_D(g * dy * xh)). */
static void rms_norm_backward_cpu(void *buffers[], void *cl_arg)
{
	const struct sf_layer_info *li = cl_arg;
	const int B = li->rows, D = li->out_dim;
	const float *g = sf_kernel_params(buffers, li);
	const float *x = sf_kernel_input(buffers, li, 0);
	const float *dy = sf_kernel_doutput(buffers, li);
	const float *rinv = sf_kernel_saved(buffers, li); /* written by this step's forward */
	float *dx = sf_kernel_dinput(buffers, li, 0);     /* NULL when not needed */
	float *dg = sf_kernel_dparams(buffers, li);

	if (!li->accumulate_dparams)
		for (int d = 0; d < D; d++)
			dg[d] = 0.0f;
	for (int r = 0; r < B; r++) {
		const float *xr = x + (size_t)r * D, *dyr = dy + (size_t)r * D;
		double dot = 0.0; /* sum_D g * dy * xh */
		for (int d = 0; d < D; d++) {
			float xh = xr[d] * rinv[r];
			dg[d] += dyr[d] * xh;
			dot += (double)g[d] * dyr[d] * xh;
		}
		if (!dx)
			continue;
		float *dxr = dx + (size_t)r * D;
		float mean = (float)(dot / D);
		for (int d = 0; d < D; d++) {
			float v = rinv[r] * (g[d] * dyr[d] - xr[d] * rinv[r] * mean);
			dxr[d] = li->accumulate[0] ? dxr[d] + v : v;
		}
	}
}

static double rms_norm_flops(const struct sf_layer_info *li)
{
	return 4.0 * li->rows * li->out_dim;
}

static const struct sf_layer_type rms_norm_type = {
    .api_version = SF_LAYER_API_VERSION,
    .name = "rms_norm",
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = rms_norm_infer,
    .nconfig_sizes = 2, /* no config, or a struct rms_norm_config */
    .config_sizes = {0, sizeof(struct rms_norm_config)},
    .init = rms_norm_init,
    .forward_cpu = rms_norm_forward_cpu,
    .backward_cpu = rms_norm_backward_cpu,
    .flops = rms_norm_flops,
    .saved_floats = rms_norm_saved_floats,
};

/* ------------------------------------------------------------------------------ */
/* --check: the kernels against finite differences, outside any runtime            */
/* ------------------------------------------------------------------------------ */

struct check_case {
	int B, D;
	float *g, *x, *y, *dy;         /* g (D), x y dy (B,D) */
	float *saved;                  /* rinv (B) */
	struct sf_layer_info fwd, bwd; /* the infos the two kernels get; bwd.backward = 1 */
	void **fwd_buffers;            /* g, x, y, saved, as a step passes them */
};

static void run_forward(struct check_case *c)
{
	rms_norm_forward_cpu(c->fwd_buffers, &c->fwd);
}

/* A forward (it fills the saved buffer, as in a step), then the backward on buffers
 * g, x, y, dy, saved, [dx], dg. dx may be NULL: then need_dinput[0] = 0 and no dx
 * buffer is passed. Returns -1 if the buffers cannot be made. */
static int run_backward(struct check_case *c, float *dx, int accumulate, float *dg,
                        int accumulate_dparams)
{
	void *ptrs[7] = {c->g, c->x, c->y, c->dy, c->saved};
	void **buffers;
	int k = 5;
	if (dx)
		ptrs[k++] = dx;
	ptrs[k++] = dg;
	if (sf_kernel_buffers_create(ptrs, k, &buffers) != SF_OK)
		return -1;
	run_forward(c);
	c->bwd.need_dinput[0] = dx != NULL;
	c->bwd.accumulate[0] = accumulate;
	c->bwd.accumulate_dparams = accumulate_dparams;
	rms_norm_backward_cpu(buffers, &c->bwd);
	sf_kernel_buffers_destroy(buffers);
	return 0;
}

/* L = sum(dy .* y) in double, so dL/dx and dL/dg are what backward(dy) returns. */
static double objective(struct check_case *c)
{
	run_forward(c);
	double l = 0.0;
	for (size_t i = 0; i < (size_t)c->B * c->D; i++)
		l += (double)c->dy[i] * c->y[i];
	return l;
}

/* Central differences with eps = 1e-3 on the float inputs, dividing by the step the
 * floats actually hold. A step changes one row, so only that row's rounding (up to
 * ~3e-4 here) and the O(eps^2) truncation separate FD from the gradient (the check
 * rows have mean(x^2) >> RMS_EPS, away from x = 0 where 1/rms bends sharply): an
 * entry g passes when |fd - g| <= 1e-3 max(1, |g|). */
#define CHECK_EPS 1e-3f
#define CHECK_TOL 1e-3

static double max_fd_error(struct check_case *c, float *v, size_t n, const float *g)
{
	double worst = 0.0;
	for (size_t k = 0; k < n; k++) {
		float old = v[k], hp = old + CHECK_EPS, hm = old - CHECK_EPS;
		v[k] = hp;
		double lp = objective(c);
		v[k] = hm;
		double lm = objective(c);
		v[k] = old;
		double fd = (lp - lm) / ((double)hp - (double)hm);
		double e = fabs(fd - g[k]) / fmax(1.0, fabs((double)g[k]));
		worst = fmax(worst, isfinite(e) ? e : INFINITY);
	}
	return worst;
}

static int ntests, nfailed;

static void tap(int cond, const char *what, double err, double tol)
{
	ntests++;
	nfailed += !cond;
	printf("%sok %d - %s (max err %.2e, tol %.0e)\n", cond ? "" : "not ", ntests, what, err,
	       tol);
}

/* Deterministic check data in [-1, 1). */
static float check_uniform(uint64_t *state)
{
	struct sf_rng r = {*state};
	float u = sf_rng_uniform(&r);
	*state = r.state;
	return u;
}

/* The largest |a[i] - b[i]| over n entries. */
static double max_abs_diff(const float *a, const float *b, size_t n)
{
	double e = 0.0;
	for (size_t i = 0; i < n; i++)
		e = fmax(e, fabs((double)a[i] - b[i]));
	return e;
}

/* An accumulating kernel's error: the largest |got[i] - (old[i] + fresh[i])|. */
static double max_added_error(const float *got, const float *old, const float *fresh, size_t n)
{
	double e = 0.0;
	for (size_t i = 0; i < n; i++)
		e = fmax(e, fabs((double)got[i] - ((double)old[i] + fresh[i])));
	return e;
}

#define CHECKS_PER_SHAPE 7

/* Returns 0, or -1 when its memory or buffers cannot be made (the checks not run). */
static int check_shape(int B, int D, uint64_t *state)
{
	char what[96];
	size_t n = (size_t)B * D, np = (size_t)D;
	struct check_case c = {.B = B, .D = D};
	double e;
	int rc = -1;
	float *mem = calloc(6 * n + 5 * np + (size_t)B, sizeof(float));
	if (!mem) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	c.x = mem, c.y = c.x + n, c.dy = c.y + n;
	float *dx = c.dy + n, *dx_acc = dx + n, *old = dx_acc + n;
	c.g = old + n;
	float *dg = c.g + np, *dg_acc = dg + np, *dg_add = dg_acc + np, *dg_nodx = dg_add + np;
	c.saved = dg_nodx + np;
	void *fwd_ptrs[4] = {c.g, c.x, c.y, c.saved};
	if (sf_kernel_buffers_create(fwd_ptrs, 4, &c.fwd_buffers) != SF_OK)
		goto fail;
	c.fwd.rows = B;
	c.fwd.nin = 1;
	c.fwd.in_dim[0] = D;
	c.fwd.out_dim = D;
	c.fwd.nparams = np;
	c.fwd.nsaved = rms_norm_saved_floats(&c.fwd);
	c.bwd = c.fwd;
	c.bwd.backward = 1; /* sf_kernel_saved() finds the saved buffer after dy */

	struct sf_rng rng = {*state};
	rms_norm_init(&c.fwd, &rng, c.g);
	for (size_t i = 0; i < n; i++) {
		c.x[i] = check_uniform(state);
		c.dy[i] = check_uniform(state);
		old[i] = check_uniform(state);
	}

	if (run_backward(&c, dx, 0, dg, 0))
		goto fail;
	snprintf(what, sizeof what, "rms_norm B=%d D=%d: dx vs finite differences", B, D);
	e = max_fd_error(&c, c.x, n, dx);
	tap(e <= CHECK_TOL, what, e, CHECK_TOL);
	snprintf(what, sizeof what, "rms_norm B=%d D=%d: dg vs finite differences", B, D);
	e = max_fd_error(&c, c.g, np, dg);
	tap(e <= CHECK_TOL, what, e, CHECK_TOL);

	/* the forward's saved buffer holds 1/rms(x) of each row */
	run_forward(&c);
	e = 0.0;
	for (int r = 0; r < B; r++) {
		double ss = 0.0;
		for (int d = 0; d < D; d++)
			ss += (double)c.x[(size_t)r * D + d] * c.x[(size_t)r * D + d];
		double want = 1.0 / sqrt(ss / D + RMS_EPS);
		e = fmax(e, fabs(c.saved[r] - want) / want);
	}
	snprintf(what, sizeof what, "rms_norm B=%d D=%d: forward saves 1/rms(x) per row", B, D);
	tap(e <= 1e-6, what, e, 1e-6);

	/* accumulate[0] = 1: dx = old + fresh; dg still overwritten. */
	memcpy(dx_acc, old, sizeof(float) * n);
	for (size_t i = 0; i < np; i++)
		dg_acc[i] = 100.0f;
	if (run_backward(&c, dx_acc, 1, dg_acc, 0))
		goto fail;
	e = max_added_error(dx_acc, old, dx, n);
	snprintf(what, sizeof what, "rms_norm B=%d D=%d: accumulate adds to dx", B, D);
	tap(e <= 1e-6, what, e, 1e-6);
	e = max_abs_diff(dg_acc, dg, np);
	snprintf(what, sizeof what, "rms_norm B=%d D=%d: dg overwritten when accumulating dx", B,
	         D);
	tap(e == 0.0, what, e, 0.0);

	/* accumulate_dparams = 1 (tied parameters): dg = old + fresh. */
	for (size_t i = 0; i < np; i++)
		dg_add[i] = old[i];
	if (run_backward(&c, dx_acc, 0, dg_add, 1))
		goto fail;
	e = max_added_error(dg_add, old, dg, np);
	snprintf(what, sizeof what, "rms_norm B=%d D=%d: accumulate_dparams adds to dg", B, D);
	tap(e <= 1e-5, what, e, 1e-5);

	/* need_dinput[0] = 0: no dx buffer, so dg is one buffer earlier; dg unchanged. */
	if (run_backward(&c, NULL, 0, dg_nodx, 0))
		goto fail;
	e = max_abs_diff(dg_nodx, dg, np);
	snprintf(what, sizeof what, "rms_norm B=%d D=%d: no dx buffer when need_dinput is 0", B, D);
	tap(e == 0.0, what, e, 0.0);
	rc = 0;
fail:
	sf_kernel_buffers_destroy(c.fwd_buffers);
	free(mem);
	return rc;
}

static int run_check(void)
{
	static const int shapes[][2] = {{1, 2}, {1, 7}, {5, 3}, {16, 32}};
	const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
	uint64_t state = 12345;
	printf("1..%d\n", CHECKS_PER_SHAPE * nshapes);
	for (int i = 0; i < nshapes; i++)
		if (check_shape(shapes[i][0], shapes[i][1], &state))
			return 1;
	if (nfailed)
		printf("# %d of %d checks failed\n", nfailed, ntests);
	return nfailed ? 1 : 0;
}

/* ------------------------------------------------------------------------------ */
/* Training on synthetic data                                                      */
/* ------------------------------------------------------------------------------ */

#define D_IN 16
#define HIDDEN 32
#define NCLASSES 4
#define BATCH 64
#define SEED 7

/* splitmix64's finaliser, chained over the coordinates: a counter-based generator. */
static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* U(-1, 1) at coordinates (stream, a, b, c); 24 bits, exact in a float. */
static float coord_uniform(uint64_t stream, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t h = mix(mix(mix(mix(SEED) ^ stream) ^ a) ^ b) ^ c;
	return (float)(mix(h) >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

/* Rows [first, first + rows) of global batch `step`: x (rows, D_IN) and the label
 * argmax_c (T x)[c] of a teacher T (NCLASSES, D_IN) drawn from stream 2. */
static void make_rows(int step, int first, int rows, float *x, int32_t *labels)
{
	for (int r = 0; r < rows; r++) {
		float *xr = x + (size_t)r * D_IN;
		for (int d = 0; d < D_IN; d++)
			xr[d] =
			    coord_uniform(1, (uint64_t)step, (uint64_t)(first + r), (uint64_t)d);
		int best = 0;
		double best_score = -INFINITY;
		for (int c = 0; c < NCLASSES; c++) {
			double score = 0.0;
			for (int d = 0; d < D_IN; d++)
				score +=
				    (double)coord_uniform(2, (uint64_t)c, (uint64_t)d, 0) * xr[d];
			if (score > best_score)
				best = c, best_score = score;
		}
		labels[r] = best;
	}
}

/* The name the type is registered and used under (--type-name). */
static const char *type_name = "rms_norm";
/* --eps: the node's config; NULL (no config, eps = RMS_EPS) unless given */
static struct rms_norm_config eps_config;
static const struct rms_norm_config *node_config;

/* The library has printed the error, with its detail and where it was raised (the
 * default; a program printing sf_last_error() itself would call sf_log_set_quiet(1)
 * first): say which call failed. */
#define CHECK(call)                                                                                \
	do {                                                                                       \
		int check_rc_ = (call);                                                            \
		if (check_rc_ != SF_OK) {                                                          \
			fprintf(stderr, PROG ": %.*s failed: %s\n", (int)strcspn(#call, "( "),     \
			        #call, sf_strerror(check_rc_));                                    \
			goto fail;                                                                 \
		}                                                                                  \
	} while (0)

/* input(16) -> linear(32) -> rms_norm -> gelu -> linear(4) -> softmax cross-entropy */
static int build_graph(sf_graph **out)
{
	sf_graph *g = NULL;
	int x, labels, h, s, a, z, loss;
	CHECK(sf_graph_create("custom_layer", &g));
	CHECK(sf_graph_input(g, "x", D_IN, &x));
	CHECK(sf_graph_label_input(g, "label", NCLASSES, &labels));
	CHECK(sf_graph_linear(g, x, HIDDEN, "fc1", &h));
	/* a layer with parameters needs a unique name: its parameters are a unit */
	size_t config_size = node_config ? sizeof *node_config : 0;
	CHECK(sf_graph_layer(g, type_name, &h, 1, node_config, config_size, "norm1", &s));
	CHECK(sf_graph_gelu(g, s, &a));
	CHECK(sf_graph_linear(g, a, NCLASSES, "fc2", &z));
	CHECK(sf_graph_softmax_cross_entropy(g, z, labels, &loss));
	*out = g;
	return 0;
fail:
	sf_graph_destroy(g);
	return -1;
}

static void print_loss(int rank, int step, double loss)
{
	if (rank == 0) {
		printf("step %d loss %.9g\n", step, loss);
		fflush(stdout);
	}
}

/* Steps are submitted ahead of their losses being read (LAG steps in flight), which
 * lets StarPU overlap consecutive steps; LAG stays under the 16 losses kept. */
#define LAG 4

static int train(int *argc, char ***argv, int steps)
{
	sf_context *ctx = NULL;
	sf_graph *g = NULL;
	sf_model *m = NULL;
	float *x = NULL;
	int32_t *labels = NULL;
	int64_t *tickets = NULL;
	int rank = 0, size = 1, first, rows, status = 1;
	double loss = NAN;

	CHECK(sf_init(argc, argv, &ctx));
	CHECK(sf_context_world(ctx, &rank, &size));
	struct sf_layer_type type = rms_norm_type;
	type.name = type_name; /* the registry keeps its own copy of the name */
	CHECK(sf_layer_type_register(&type));
	if (build_graph(&g))
		goto fail;

	struct sf_model_options mo;
	CHECK(sf_model_options_init(&mo));
	mo.batch = BATCH;
	mo.seed = SEED;
	mo.lr = 0.05f;
	CHECK(sf_model_create(ctx, g, &mo, &m));
	sf_graph_destroy(g); /* the model keeps what it needs */
	g = NULL;
	CHECK(sf_model_local_rows(m, &first, &rows));

	/* The batch is copied by sf_model_step, so one buffer serves every step. */
	x = malloc(sizeof(float) * ((size_t)rows * D_IN + 1));
	labels = malloc(sizeof(int32_t) * ((size_t)rows + 1));
	tickets = malloc(sizeof(int64_t) * (size_t)steps);
	if (!x || !labels || !tickets) {
		fprintf(stderr, PROG ": out of memory\n");
		goto fail;
	}
	const float *inputs[1] = {x};
	struct sf_batch batch = {.ninputs = 1, .inputs = inputs, .labels = labels};

	for (int k = 1; k <= steps; k++) {
		make_rows(k, first, rows, x, labels);
		CHECK(sf_model_step(m, &batch, &tickets[k - 1]));
		if (k > LAG) {
			CHECK(sf_model_loss(m, tickets[k - 1 - LAG], &loss));
			print_loss(rank, k - LAG, loss);
		}
	}
	for (int k = steps - LAG + 1 > 1 ? steps - LAG + 1 : 1; k <= steps; k++) {
		CHECK(sf_model_loss(m, tickets[k - 1], &loss));
		print_loss(rank, k, loss);
	}
	if (!isfinite(loss)) {
		fprintf(stderr, PROG ": the loss is not finite (%g)\n", loss);
		goto fail;
	}
	if (rank == 0) {
		printf("final_loss %.9g\n", loss);
		fflush(stdout);
	}
	status = 0;
fail:
	free(x);
	free(labels);
	free(tickets);
	sf_graph_destroy(g);
	if (sf_model_destroy(m) != SF_OK)
		status = 1;
	if (sf_finalize(ctx) != SF_OK)
		status = 1;
	return status;
}

/* ------------------------------------------------------------------------------ */

/* Before sf_init() we do not know our rank; under mpirun the launcher tells us, so
 * that a bad command line prints one usage message, not one per rank. */
static int launcher_rank(void)
{
	static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return atoi(v);
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--steps N] [--type-name NAME] [--eps E] [--check] [--help]\n"
	           "Registers an \"rms_norm\" layer type (y = x / rms(x) * g) and trains\n"
	           "input(16) -> linear(32) -> rms_norm -> gelu -> linear(4) -> softmax "
	           "cross-entropy\n"
	           "on synthetic data, sharded over the MPI ranks.\n"
	           "  --steps N   training steps, 1..1000000 (default 30)\n"
	           "  --type-name NAME  register the type under NAME (default rms_norm)\n"
	           "  --eps E     the rms_norm node's eps, given as its config (default: no\n"
	           "              config, eps 1e-5); the type's infer() refuses E <= 0\n"
	           "  --check     check the rms_norm kernels against finite differences (TAP), no "
	           "MPI\n"
	           "  --help      print this message and exit\n");
}

/* A bad command line: the problem and where the usage is on stderr (rank 0 only),
 * status 2. */
static int bad_usage(const char *problem, const char *arg)
{
	if (launcher_rank() == 0) {
		fprintf(stderr, PROG ": %s \"%s\"\n", problem, arg);
		fprintf(stderr, "usage: " PROG " [options]; '" PROG " --help' lists them\n");
	}
	return 2;
}

int main(int argc, char **argv)
{
	int steps = 30, check = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--check")) {
			check = 1;
		} else if (!strcmp(argv[i], "--type-name")) {
			if (i + 1 == argc)
				return bad_usage("missing value for", argv[i]);
			type_name = argv[++i];
		} else if (!strcmp(argv[i], "--eps")) {
			if (i + 1 == argc)
				return bad_usage("missing value for", argv[i]);
			char *end;
			errno = 0;
			eps_config.eps = strtof(argv[++i], &end);
			if (errno || end == argv[i] || *end)
				return bad_usage("--eps expects a number, got", argv[i]);
			node_config = &eps_config; /* its value is infer()'s to judge */
		} else if (!strcmp(argv[i], "--steps")) {
			if (i + 1 == argc)
				return bad_usage("missing value for", argv[i]);
			char *end;
			errno = 0;
			long v = strtol(argv[++i], &end, 10);
			if (errno || end == argv[i] || *end || v < 1 || v > 1000000)
				return bad_usage("--steps expects an integer in 1..1000000, got",
				                 argv[i]);
			steps = (int)v;
		} else {
			return bad_usage("unknown option", argv[i]);
		}
	}
	if (check)
		return run_check();
	return train(&argc, &argv, steps);
}
