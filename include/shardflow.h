/*
 * shardflow.h — the public API of shardflow.
 *
 * shardflow trains neural networks with fully sharded data parallelism (ZeRO-3):
 * every rank holds 1/N of every parameter, gathers a unit's full parameters just
 * before it computes, and reduce-scatters its gradient right after. A training step
 * is a StarPU task graph, so the gather of unit l+1 overlaps the compute of unit l
 * through data dependencies alone.
 *
 * Conventions used throughout:
 *  - every function returns SF_OK (0) or a negative enum sf_status; on error a
 *    message naming the problem is kept in sf_last_error() and, unless the program
 *    asked otherwise, printed once on stderr (see sf_log_set_quiet());
 *  - the library never exits and never aborts on user input;
 *  - "who owns what" is stated at each function; objects made by *_create are
 *    released by the matching *_destroy.
 *
 * Shape letters: B samples of a batch, T rows per sample (sequence length, 1 unless
 * set), I input width, O output width, C classes.
 */
#ifndef SHARDFLOW_H
#define SHARDFLOW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define SF_API __attribute__((visibility("default")))
#else
#define SF_API
#endif

#define SF_VERSION "0.1.0"

/** Status codes returned by every function. */
enum sf_status {
	SF_OK = 0,
	SF_ERR_INVALID = -1,   /**< bad argument: NULL, out of range, shape mismatch */
	SF_ERR_CONFIG = -2,    /**< a SHARDFLOW_* environment variable has a bad value */
	SF_ERR_NOMEM = -3,     /**< an allocation failed */
	SF_ERR_MPI = -4,       /**< an MPI call failed */
	SF_ERR_STARPU = -5,    /**< StarPU could not start or refused a task */
	SF_ERR_STATE = -6,     /**< call made in the wrong state (e.g. before sf_init) */
	SF_ERR_IO = -7,        /**< a file could not be read or written */
	SF_ERR_NONFINITE = -8, /**< a loss is NaN or infinite (training diverged) */
	SF_ERR_NOT_FOUND = -9, /**< nothing to load: a checkpoint directory holds none yet */
	SF_ERR_BUSY = -10,     /**< another job holds the checkpoint directory's lock */
	SF_ERR_COMM = -11,     /**< a NCCL collective or the NCCL bootstrap failed */
};

/** Short constant description of a status ("invalid argument", ...). */
SF_API const char *sf_strerror(int status);

/** The detailed message of the last error raised on this thread ("" if none).
 *  The string belongs to the library and is overwritten by the next error. */
SF_API const char *sf_last_error(void);

/** The rank whose failure the last error on this thread relays, or -1 when the error
 *  is this process's own. A rank that stops because another failed (a bad batch or an
 *  unreadable checkpoint on rank N, which every rank agrees on; a diverged loss,
 *  which every rank sees and rank 0 reports) gets the same status as that rank, the
 *  message in sf_last_error(), and this rank's number N; the library printed only
 *  "<function>: stopping: rank N failed" for it, so that a job's failure is said once,
 *  by the rank that failed. A program's own line about the failed call belongs on
 *  the failing rank only: it prints it when this is -1. */
SF_API int sf_last_error_peer(void);

/**
 * Who prints an error. By default the library prints each error once on stderr, where
 * it is raised ("shardflow: error: <message> (<file>:<line>)"), and returns it: a
 * program then need only say which of its calls failed (sf_strerror()).
 * SHARDFLOW_LOG=off (sf_config::log_level SF_LOG_OFF) silences the library entirely,
 * errors included, once sf_init() has read it. A program that reports errors
 * itself, printing sf_last_error(), calls sf_log_set_quiet(1) first: errors are then
 * only returned and kept for sf_last_error(), never printed by the library, while
 * warnings and the rest still follow SHARDFLOW_LOG. quiet 0 restores printing. Call
 * it before sf_init() or while no other thread calls the library: it is a
 * process-wide setting, not synchronised.
 */
SF_API void sf_log_set_quiet(int quiet);

/* ------------------------------------------------------------------------ */
/* Runtime                                                                   */
/* ------------------------------------------------------------------------ */

/** How parameters are distributed over the ranks (SHARDFLOW_SHARDING). */
enum sf_sharding {
	SF_SHARD_FULL = 0, /**< ZeRO-3: parameters, gradients, optimizer state sharded */
	SF_SHARD_GRAD_OP,  /**< ZeRO-2: parameters replicated; gradients and state sharded */
	SF_SHARD_NONE,     /**< DDP: everything replicated, gradients all-reduced */
	SF_SHARD_HYBRID,   /**< HYBRID_SHARD: full sharding within a node, replicated across
	                        nodes: gathers stay inside the node; gradients are
	                        reduce-scattered inside it and all-reduced across nodes on
	                        the shard (SHARDFLOW_NODE_SIZE) */
	SF_SHARD_COUNT,    /**< the number of values above; not a value */
};

/** When the backward pass gathers the next unit (SHARDFLOW_BACKWARD_PREFETCH). */
enum sf_backward_prefetch {
	SF_BWD_PRE = 0, /**< gather(l-1) is issued before reduce-scatter(l) */
	SF_BWD_POST,    /**< gather(l-1) is issued after reduce-scatter(l) */
	SF_BWD_NONE,    /**< gather(l-1) waits until unit l is completely done */
	SF_BWD_COUNT,   /**< the number of values above; not a value */
};

/** Benchmarks only (SHARDFLOW_SKIP): run every task but skip the work of one kind,
 *  to measure a step's compute alone or its communication alone. The numbers a
 *  model computes are then meaningless. */
enum sf_skip {
	SF_SKIP_NONE = 0, /**< normal training */
	SF_SKIP_COMM,     /**< collectives return at once (no MPI call) */
	SF_SKIP_COMPUTE,  /**< every layer, the loss and the optimizers return at once */
	SF_SKIP_COUNT,    /**< the number of values above; not a value */
};

/** The step's collectives (SHARDFLOW_COMM). */
enum sf_comm_backend {
	SF_COMM_MPI = 0,  /**< MPI point-to-point rings on a CPU comm worker (default) */
	SF_COMM_NCCL,     /**< NCCL on the GPU's own comm stream (CUDA + NCCL builds) */
	SF_COMM_MPI_SYNC, /**< MPI with NCCL's rules for a pipeline's transfers: each blocks
	                       the comm worker until its peer's matching call, no tags; an
	                       order NCCL would hang on hangs (times out) here too */
	SF_COMM_COUNT,    /**< the number of values above; not a value */
};

/** Where a shard's optimizer step and state live (SHARDFLOW_OPTIMIZER_ON). */
enum sf_optimizer_on {
	SF_OPT_ON_DEVICE = 0, /**< with the gradients: the GPU when there is one (default) */
	SF_OPT_ON_HOST,       /**< CPU workers and host memory (ZeRO-Offload's placement) */
	SF_OPT_ON_COUNT,      /**< the number of values above; not a value */
};

/** SHARDFLOW_GPU_MATH: how cuBLAS computes the matrix products on a GPU */
enum sf_gpu_math {
	SF_GPU_MATH_FP32 = 0, /**< full fp32 (default; PyTorch's default for fp32 matmuls) */
	SF_GPU_MATH_TF32,     /**< fp32 in and out, products on the tensor cores with 10-bit
	                           mantissas (PyTorch's allow_tf32, "high" precision) */
	SF_GPU_MATH_BF16,     /**< fp32 buffers, products on the tensor cores in bf16: each
	                           GEMM's operands rounded to bf16, fp32 accumulation and
	                           output, and attention fused in bf16 (layers/attention_flash.cuh;
	                           the math of PyTorch's bf16 autocast, activations kept fp32) */
	SF_GPU_MATH_COUNT,    /**< the number of values above; not a value */
};

/** Where gradient accumulation keeps the micro-batches' sum (SHARDFLOW_ACCUM_MODE),
 *  see sf_model_accumulate(). */
enum sf_accum_mode {
	SF_ACCUM_SHARDED = 0, /**< reduce every micro-batch, add into the gradient shard:
	                           one reduce-scatter per micro-batch, no extra memory
	                           beyond a shard (FSDP without no_sync; the default) */
	SF_ACCUM_LOCAL,       /**< add every micro-batch into a full local gradient per
	                           unit, reduce once at the step: 1/K of the gradient traffic
	                           for P floats per unit (FSDP's no_sync) */
	SF_ACCUM_COUNT,       /**< the number of values above; not a value */
};

/** What a collective moves (SHARDFLOW_PARAM_DTYPE, SHARDFLOW_REDUCE_DTYPE): mixed
 *  precision as FSDP's MixedPrecision(param_dtype, reduce_dtype), master shards and
 *  optimizer state staying fp32. */
enum sf_dtype {
	SF_DTYPE_FP32 = 0, /**< 32-bit floats */
	SF_DTYPE_BF16,     /**< bfloat16, rounded to nearest even: half the bytes */
	SF_DTYPE_COUNT,    /**< the number of values above; not a value */
};

/** Activation recompute (SHARDFLOW_RECOMPUTE): activation checkpointing per unit. */
enum sf_recompute {
	SF_RECOMPUTE_NONE = 0, /**< every activation lives from forward to backward */
	SF_RECOMPUTE_UNITS,    /**< a unit's inner activations are dropped after forward and
	                            recomputed before its backward, where 3 or more units are
	                            alike (a stack of blocks): they share two sets of buffers */
	SF_RECOMPUTE_COUNT,    /**< the number of values above; not a value */
};

/** SHARDFLOW_VOCAB_PARALLEL: whether a model builder is asked for a vocabulary-parallel
 *  head (struct sf_config::vocab_parallel) */
enum sf_vocab_parallel {
	SF_VOCAB_PARALLEL_AUTO = 0, /**< where it applies: V divisible by K */
	SF_VOCAB_PARALLEL_ON,       /**< always (refused where it cannot apply) */
	SF_VOCAB_PARALLEL_OFF,      /**< never: the head replicated on the TP ranks */
	SF_VOCAB_PARALLEL_COUNT,    /**< the number of values above; not a value */
};

/** A pipeline schedule (SHARDFLOW_PP_SCHEDULE): the order in which a stage runs its
 *  micro-batches' forwards and backwards (docs/training.md, "Pipeline parallelism").
 *  All sum the micro-batches' gradients in the same order: bitwise the same step. */
enum sf_pp_schedule {
	SF_PP_GPIPE = 0, /**< every forward, then every backward (micro-batch order) */
	SF_PP_1F1B,      /**< S - 1 - stage forwards, then one backward after each forward:
	                      a stage holds at most S micro-batches' activations */
	SF_PP_ZERO_BUBBLE, /**< 1f1b's order, each backward as input-gradient tasks (sent
	                        back at once) and weight-gradient tasks at the lowest
	                        priority (ZB-H1); bitwise 1f1b's step */
	SF_PP_INTERLEAVED, /**< interleaved 1F1B (Narayanan et al. 2021): the units cut
	                        into S x V chunks, rank s holding chunks s, s + S, ...
	                        (SHARDFLOW_PP_VIRTUAL = V), 1F1B over the chunks; bitwise
	                        1f1b's step */
	SF_PP_SCHEDULE_COUNT, /**< the number of values above; not a value */
};

/** How a pipeline cuts the graph's units into stages (SHARDFLOW_PP_BALANCE): each cut
 *  where the weight before it lies closest to s / S of the whole. */
enum sf_pp_balance {
	SF_PP_BALANCE_FLOPS = 0, /**< the nodes' floating-point operations in a step (the
	                              layer types' flops counts: the forward, a backward of
	                              twice it, or once without an input gradient, a
	                              recompute's rerun): stages of about equal compute */
	SF_PP_BALANCE_PARAMS,    /**< the units' parameters: stages of about equal memory */
	SF_PP_BALANCE_COUNT,     /**< the number of values above; not a value */
};

/** The rounding of a CPU rank's arithmetic (SHARDFLOW_ROUNDING), a numerics diagnostic:
 *  every worker thread computes in that IEEE rounding direction. Two runs, upward and
 *  downward, bracket how much the run's results move with the rounding of each
 *  operation (docs/testing.md, "The rounding interval"). */
enum sf_rounding {
	SF_ROUND_NEAREST = 0, /**< IEEE's default: to nearest, ties to even */
	SF_ROUND_UPWARD,      /**< toward +infinity */
	SF_ROUND_DOWNWARD,    /**< toward -infinity */
	SF_ROUNDING_COUNT,    /**< the number of values above; not a value */
};

/** Verbosity of shardflow's own messages on stderr (SHARDFLOW_LOG): a level prints
 *  its messages and those of the levels above it in this list. */
enum sf_log_level {
	SF_LOG_OFF = 0, /**< nothing at all, errors included (they are still returned and
	                     kept for sf_last_error()) */
	SF_LOG_ERROR,   /**< errors, each once, where raised (with its file and line) */
	SF_LOG_WARN,
	SF_LOG_INFO,
	SF_LOG_DEBUG,
	SF_LOG_COUNT, /**< the number of values above; not a value */
};

/** The configuration read once from the environment by sf_init(). */
struct sf_config {
	int prefetch_depth;                     /**< SHARDFLOW_PREFETCH_DEPTH, 0..64, default 2 */
	enum sf_backward_prefetch bwd_prefetch; /**< default SF_BWD_PRE */
	enum sf_sharding sharding;              /**< default SF_SHARD_FULL */
	enum sf_log_level log_level;            /**< default SF_LOG_WARN */
	char trace[512];   /**< SHARDFLOW_TRACE path prefix, "" when tracing is off (default) */
	enum sf_skip skip; /**< SHARDFLOW_SKIP, benchmarks only; default SF_SKIP_NONE */
	/** SHARDFLOW_COMM_CHUNK: the largest MPI message of a collective, in bytes; 0 sends
	 *  each ring step as one message. Default SF_DEFAULT_COMM_CHUNK, see README. */
	int comm_chunk;
	/** SHARDFLOW_COMM_TIMEOUT: seconds a collective may go without any progress before
	 *  the job is ended with an error naming the collective and the unit (a peer
	 *  stopped, stuck or cut off); 0 waits forever. Default SF_DEFAULT_COMM_TIMEOUT. */
	int comm_timeout;
	enum sf_comm_backend comm;          /**< SHARDFLOW_COMM, default SF_COMM_MPI */
	enum sf_optimizer_on optimizer_on; /**< SHARDFLOW_OPTIMIZER_ON, default device */
	/** SHARDFLOW_GRAD_ACCUM, 1..SF_MAX_GRAD_ACCUM, default 1: micro-batches per
	 *  optimizer step. The library does not act on it (sf_model_accumulate() does the
	 *  work); the examples read it here, validated, to split each step. */
	int grad_accum;
	enum sf_accum_mode accum_mode; /**< SHARDFLOW_ACCUM_MODE, default SF_ACCUM_SHARDED */
	enum sf_recompute recompute;   /**< SHARDFLOW_RECOMPUTE, default SF_RECOMPUTE_NONE */
	/** SHARDFLOW_PARAM_DTYPE, default fp32: what parameter gathers move (bf16: each
	 *  gathered parameter is the bf16 rounding of its fp32 master, and compute reads
	 *  it as a float). Needs gathers: sharding full or grad_op. */
	enum sf_dtype param_dtype;
	/** SHARDFLOW_REDUCE_DTYPE, default fp32: what gradient reduce-scatters move (bf16:
	 *  each partial sum travels as bf16 and is added in fp32). Sharding full or
	 *  grad_op. */
	enum sf_dtype reduce_dtype;
	/** SHARDFLOW_NODE_SIZE: ranks per node for SHARDFLOW_SHARDING=hybrid (consecutive
	 *  ranks form a node; it must divide the world); 0 (default): the ranks sharing
	 *  memory (MPI_Comm_split_type), which must be equally many and consecutive. */
	int node_size;
	/** SHARDFLOW_MEMORY_CHECK, on (default) or off: sf_model_create() compares what the
	 *  model will hold on this rank (struct sf_model_stats, planned before anything is
	 *  allocated) with the memory limit the kernel enforces on the process (its
	 *  cgroup's memory.max or memory.limit_in_bytes, RLIMIT_AS) and fails with
	 *  SF_ERR_NOMEM, naming each part and the limit, when it cannot fit; off allocates
	 *  anyway (and the kernel may kill the rank). */
	int memory_check;
	/** SHARDFLOW_FLIGHT_RECORD: how many of its last communication operations each
	 *  rank keeps (0..65536, default SF_DEFAULT_FLIGHT_RECORD; 0 keeps none). When a
	 *  collective fails or makes no progress for SHARDFLOW_COMM_TIMEOUT, each rank
	 *  that still can writes them to flight-rank-K.json (in the checkpoint directory,
	 *  else beside the trace, else in $TMPDIR or /tmp) and the log names the rank
	 *  that was behind (docs/robustness.md). */
	int flight_record;
	/** SHARDFLOW_GPU_MATH, default fp32: the math of every CUDA worker's products
	 *  (tf32: the tensor cores, about 8 times the fp32 rate on an H100, with TF32's
	 *  rounding of the inputs; bf16: the products' operands and attention's tiles in
	 *  bf16 with fp32 sums). No effect on CPU workers. */
	enum sf_gpu_math gpu_math;
	/** SHARDFLOW_SPLIT_BACKWARD, off (default) or on: on, a node whose unit is read
	 *  again at the other end of the graph (a tied output head) runs its backward as
	 *  two tasks where its type allows (the linear types): the input gradient at
	 *  once, so the units before it start their backward and their reduce-scatters
	 *  sooner, and the weight gradient later, just before the unit's other end adds to
	 *  it. The same products in the same order: bitwise the results of off. Measured
	 *  neutral on CPU ranks (docs/performance.md), hence off. */
	int split_backward;
	/** SHARDFLOW_TP, 1..SF_MAX_TP, default 1: the tensor-parallel degree K. The world
	 *  is dp x K: groups of K consecutive ranks (inside a node) split the linear_col
	 *  and linear_row layers' weights and run their activation all-reduces; FSDP
	 *  shards each unit over the world / K ranks of the same place in every group,
	 *  and the batch is split over those dp ranks (docs/training.md, "Tensor
	 *  parallelism"). K must divide the world; not with SHARDFLOW_SHARDING=hybrid.
	 *  Fixed by sf_init. */
	int tp;
	/** SHARDFLOW_VOCAB_PARALLEL, auto (default), on or off: under SHARDFLOW_TP > 1,
	 *  whether a program that builds the GPT or the Llama (examples/gpt) asks for the
	 *  vocabulary-parallel embedding, head and loss (sf_gpt_config::vocab_parallel):
	 *  auto where it applies (a vocabulary that divides by K), on always (refused
	 *  where it cannot apply), off never (replicated). The library itself builds the
	 *  loss vocabulary-parallel whenever the graph gives it split logits. Under
	 *  SHARDFLOW_TP=1 on N > 1 data-parallel ranks, a graph's embedding_vp with a
	 *  tied head, alone in its unit, is vocabulary-parallel over them (auto and on;
	 *  on refuses where it cannot apply, naming why; off gathers it): each rank's
	 *  shard is ceil(V / N) whole rows, never gathered, and the embedding, head and
	 *  loss take the N ranks' rows (docs/training.md); examples/gpt builds such a
	 *  graph under on, and under auto where sf_vocab_parallel_pays. */
	enum sf_vocab_parallel vocab_parallel;
	/** SHARDFLOW_PP, 1..SF_MAX_PP, default 1: the pipeline-parallel degree S. The
	 *  world is S x dp: stage s is the dp consecutive ranks [s dp, (s + 1) dp), which
	 *  hold the s-th run of the graph's units (balanced by SHARDFLOW_PP_BALANCE) and shard them
	 *  (FSDP over the stage's dp ranks); activations and their gradients go from stage
	 *  to stage point to point (docs/training.md, "Pipeline parallelism"). S must
	 *  divide the world; not with SHARDFLOW_TP > 1 or SHARDFLOW_SHARDING=hybrid.
	 *  Fixed by sf_init. */
	int pp;
	/** SHARDFLOW_PP_MICROBATCHES, 0..SF_MAX_GRAD_ACCUM, default 0: the micro-batches a
	 *  step of a pipeline takes (0: 2 S); each dp rank's samples must divide by it. */
	int pp_microbatches;
	/** SHARDFLOW_PP_SCHEDULE, default 1f1b: the pipeline's schedule. */
	enum sf_pp_schedule pp_schedule;
	/** SHARDFLOW_PP_BALANCE, default params: what the stages are balanced by. */
	enum sf_pp_balance pp_balance;
	/** SHARDFLOW_PP_VIRTUAL, 1..SF_MAX_PP_VIRTUAL, default 2: the chunks (virtual
	 *  stages) a rank holds under SHARDFLOW_PP_SCHEDULE=interleaved. */
	int pp_virtual;
	/** SHARDFLOW_ROUNDING, default nearest: the CPU workers' rounding direction (a
	 *  diagnostic; CPU ranks only). */
	enum sf_rounding rounding;
	/** SHARDFLOW_SEQUENCE_PARALLEL, off (default) or on: under SHARDFLOW_TP > 1,
	 *  sequence parallelism (Megatron's): the ops between a linear_row and the next
	 *  linear_col that compute each row alone (the norms, residual adds, element-wise
	 *  ops) run on this TP rank's 1/K of the rows, so their activations are 1/K; a
	 *  linear_row's all-reduce becomes a reduce-scatter of rows, and a linear_col
	 *  all-gathers its input's rows (docs/training.md, "Sequence parallelism").
	 *  Refused without TP, where a rank's rows do not divide by K, with
	 *  SHARDFLOW_RECOMPUTE, SHARDFLOW_PP or SHARDFLOW_SPLIT_BACKWARD. */
	int sequence_parallel;
	/** SHARDFLOW_CP, 1..SF_MAX_CP, default 1: the context-parallel degree K. The
	 *  world is dp x K x tp: the K ranks of a CP group (the same dp index and TP place)
	 *  share each sample, each holding 2 of its 2K chunks of T / 2K positions (chunks
	 *  r and 2K - 1 - r: causal load balance), and attention runs as a ring, the
	 *  key/value chunks passed from rank to rank in comm tasks while each rank attends
	 *  to the one it holds (docs/training.md, "Context parallelism"). FSDP shards each
	 *  unit over the dp x K ranks of a TP place. K must divide world / tp and 2K the
	 *  context T (with SHARDFLOW_PP, a stage's CP groups inside it: world = pp x dp x
	 *  cp x tp); refused on GPU ranks and with layer types of a user's own (not yet).
	 *  Fixed by sf_init. */
	int cp;
};

/** The largest SHARDFLOW_TP */
#define SF_MAX_TP 64
/** The largest SHARDFLOW_CP */
#define SF_MAX_CP 64
/** The largest SHARDFLOW_PP */
#define SF_MAX_PP 64
/** The most chunks a rank holds under the interleaved schedule (SHARDFLOW_PP_VIRTUAL). */
#define SF_MAX_PP_VIRTUAL 16

#define SF_DEFAULT_FLIGHT_RECORD 256 /**< default of SHARDFLOW_FLIGHT_RECORD */

#define SF_MAX_GRAD_ACCUM 4096 /**< largest SHARDFLOW_GRAD_ACCUM */

/** Default of SHARDFLOW_COMM_CHUNK (bytes): under Open MPI's TCP eager limit (64 KiB),
 *  so large blocks travel as many eager messages in flight instead of one rendezvous
 *  transfer (docs/performance.md has the measurements). */
#define SF_DEFAULT_COMM_CHUNK 61440
#define SF_MIN_COMM_CHUNK 1024      /**< smallest non-zero SHARDFLOW_COMM_CHUNK */
#define SF_MAX_COMM_CHUNK (1 << 30) /**< largest SHARDFLOW_COMM_CHUNK */
/** Default of SHARDFLOW_COMM_TIMEOUT (seconds), as PyTorch's process-group timeout. */
#define SF_DEFAULT_COMM_TIMEOUT 600
#define SF_MAX_COMM_TIMEOUT 86400 /**< largest SHARDFLOW_COMM_TIMEOUT (a day) */

/*
 * The names of the enums' values: every enum a user names (by a SHARDFLOW_* variable,
 * in a checkpoint) has a pair of functions over the library's one table of its names,
 * so that a program never spells them itself:
 *  - sf_<enum>_from_name(name, out): *out = the value `name` names, exactly (case and
 *    whole word), and SF_OK; else SF_ERR_INVALID, *out unchanged, for an unknown name,
 *    a NULL name or a NULL out. The message, kept for sf_last_error(), quotes the name
 *    and lists the accepted names ("\"rmsprop\" is not an optimizer: accepted names
 *    are sgd, adamw, lion"); it is never printed by the library, whatever
 *    sf_log_set_quiet() says, because the program knows which option the name came
 *    from and prints it once ("--optimizer \"rmsprop\" is not an optimizer: ...").
 *  - sf_<enum>_name(value): the value's name, a static string the library owns; NULL
 *    for a value out of range (its _COUNT, a stray integer).
 * The names are those of the variables (README's table) and of sf_config_set(). Both
 * work before sf_init() and from any thread.
 */

/** The enum sf_sharding value named as SHARDFLOW_SHARDING names it (see above). */
SF_API int sf_sharding_from_name(const char *name, enum sf_sharding *out);
/** The name of an enum sf_sharding value ("full", ...), or NULL out of range. */
SF_API const char *sf_sharding_name(enum sf_sharding value);
/** The enum sf_backward_prefetch value named as SHARDFLOW_BACKWARD_PREFETCH names it. */
SF_API int sf_backward_prefetch_from_name(const char *name, enum sf_backward_prefetch *out);
/** The name of an enum sf_backward_prefetch value ("pre", ...), or NULL out of range. */
SF_API const char *sf_backward_prefetch_name(enum sf_backward_prefetch value);
/** The enum sf_skip value named as SHARDFLOW_SKIP names it. */
SF_API int sf_skip_from_name(const char *name, enum sf_skip *out);
/** The name of an enum sf_skip value ("none", ...), or NULL out of range. */
SF_API const char *sf_skip_name(enum sf_skip value);
/** The enum sf_comm_backend value named as SHARDFLOW_COMM names it. */
SF_API int sf_comm_backend_from_name(const char *name, enum sf_comm_backend *out);
/** The name of an enum sf_comm_backend value ("mpi", ...), or NULL out of range. */
SF_API const char *sf_comm_backend_name(enum sf_comm_backend value);
/** The enum sf_optimizer_on value named as SHARDFLOW_OPTIMIZER_ON names it. */
SF_API int sf_optimizer_on_from_name(const char *name, enum sf_optimizer_on *out);
/** The name of an enum sf_optimizer_on value ("device", ...), or NULL out of range. */
SF_API const char *sf_optimizer_on_name(enum sf_optimizer_on value);
/** The enum sf_gpu_math value named as SHARDFLOW_GPU_MATH names it. */
SF_API int sf_gpu_math_from_name(const char *name, enum sf_gpu_math *out);
/** The name of an enum sf_gpu_math value ("fp32", ...), or NULL out of range. */
SF_API const char *sf_gpu_math_name(enum sf_gpu_math value);
/** The enum sf_accum_mode value named as SHARDFLOW_ACCUM_MODE names it. */
SF_API int sf_accum_mode_from_name(const char *name, enum sf_accum_mode *out);
/** The name of an enum sf_accum_mode value ("sharded", ...), or NULL out of range. */
SF_API const char *sf_accum_mode_name(enum sf_accum_mode value);
/** The enum sf_dtype value named as SHARDFLOW_PARAM_DTYPE and SHARDFLOW_REDUCE_DTYPE
 *  name it. */
SF_API int sf_dtype_from_name(const char *name, enum sf_dtype *out);
/** The name of an enum sf_dtype value ("fp32", ...), or NULL out of range. */
SF_API const char *sf_dtype_name(enum sf_dtype value);
/** The enum sf_recompute value named as SHARDFLOW_RECOMPUTE names it. */
SF_API int sf_recompute_from_name(const char *name, enum sf_recompute *out);
/** The name of an enum sf_recompute value ("none", ...), or NULL out of range. */
SF_API const char *sf_recompute_name(enum sf_recompute value);
/** The enum sf_pp_schedule value named as SHARDFLOW_PP_SCHEDULE names it. */
SF_API int sf_pp_schedule_from_name(const char *name, enum sf_pp_schedule *out);
/** The name of an enum sf_pp_schedule value ("gpipe", ...), or NULL out of range. */
SF_API const char *sf_pp_schedule_name(enum sf_pp_schedule value);
/** The enum sf_pp_balance value named as SHARDFLOW_PP_BALANCE names it. */
SF_API int sf_pp_balance_from_name(const char *name, enum sf_pp_balance *out);
/** The name of an enum sf_pp_balance value ("flops", "params"), or NULL out of range. */
SF_API const char *sf_pp_balance_name(enum sf_pp_balance value);
/** The enum sf_rounding value named as SHARDFLOW_ROUNDING names it ("nearest", ...). */
SF_API int sf_rounding_from_name(const char *name, enum sf_rounding *out);
/** The name of an enum sf_rounding value, or NULL out of range. */
SF_API const char *sf_rounding_name(enum sf_rounding value);
/** The enum sf_log_level value named as SHARDFLOW_LOG names it. */
SF_API int sf_log_level_from_name(const char *name, enum sf_log_level *out);
/** The name of an enum sf_log_level value ("off", ...), or NULL out of range. */
SF_API const char *sf_log_level_name(enum sf_log_level value);

/** The runtime: MPI, StarPU and the comm worker of one process. */
typedef struct sf_context sf_context;

/**
 * Starts the runtime: reads the SHARDFLOW_* configuration (an invalid value is an
 * error naming the variable, the value and what is accepted), initialises MPI with
 * MPI_THREAD_MULTIPLE (unless the caller already did), duplicates MPI_COMM_WORLD,
 * and starts StarPU with its compute workers plus one dedicated comm worker.
 * Works with or without mpirun (a lone process is a world of size 1).
 * argc/argv may be NULL. On success *out is owned by the caller and released with
 * sf_finalize(). Only one context may exist per process.
 */
SF_API int sf_init(int *argc, char ***argv, sf_context **out);

/** Stops StarPU and, if sf_init() started it, MPI. Every model made on the
 *  context must have been destroyed. NULL is accepted and does nothing. */
SF_API int sf_finalize(sf_context *ctx);

/** This process's rank and the world size. */
SF_API int sf_context_world(const sf_context *ctx, int *rank, int *size);

/** *seconds = the runtime's clock (from an arbitrary origin), for timing steps: the
 *  monotonic wall clock, or in a simulation build (configure --enable-simulation,
 *  docs/scale.md) the simulated clock, which the wall clock is not there. */
SF_API int sf_clock(double *seconds);

/** Copies the configuration the context was started with. */
SF_API int sf_context_config(const sf_context *ctx, struct sf_config *out);

/** Reads and validates the SHARDFLOW_* environment without starting anything: the
 *  defaults with each variable that is set read over them (what sf_init() starts
 *  with). Useful for tools and tests. */
SF_API int sf_config_from_env(struct sf_config *out);

/** Fills *c with every knob's default (the values of the README's table, as if no
 *  SHARDFLOW_* variable were set), for a program that configures in code. */
SF_API int sf_config_init(struct sf_config *c);

/** Sets one knob from text, as its variable would: name is the field
 *  ("prefetch_depth") or the variable ("SHARDFLOW_PREFETCH_DEPTH"), value its text
 *  ("3", "grad_op", "bf16"; "" turns trace off). A bad name or value is refused
 *  (SF_ERR_CONFIG) naming it and what is accepted, and *c is unchanged. For programs
 *  that take knobs from their own command line or files rather than the
 *  environment (tests/config_code.sh shows one). */
SF_API int sf_config_set(struct sf_config *c, const char *name, const char *value);

/** The environment variable of a knob named as sf_config_set() takes it (its field,
 *  "log_level", or its variable, "SHARDFLOW_LOG"): "SHARDFLOW_LOG"; NULL for a name
 *  that is no knob. For programs that hand settings on through the environment. */
SF_API const char *sf_config_variable(const char *name);

/** Writes the settings of *c as "field=value" words separated by spaces, in the
 *  README's order, with the names and values sf_config_set() reads ("prefetch_depth=2
 *  sharding=full ..."; an unset trace is "trace=", as sf_config_set takes it, so each
 *  word read back by sf_config_set gives the same settings): every knob when all is
 *  non-zero, else only those that differ from the defaults (an empty string when none
 *  does). For a program's start-up line and a run's records. SF_ERR_INVALID for NULL
 *  arguments or when `size` bytes are too few (*out then holds a truncated prefix). */
SF_API int sf_config_describe(const struct sf_config *c, int all, char *out, size_t size);

/**
 * sf_init() with the program's configuration: the knobs of *cfg (NULL: the defaults,
 * which is sf_init()), each checked (a value out of range is refused naming the field,
 * the value and what is accepted). The environment still tunes: a SHARDFLOW_* variable
 * that is set overrides the program's value, and when the two differ the log says so
 * once, on rank 0, at level warn ("SHARDFLOW_PREFETCH_DEPTH=3 overrides the program's
 * 2"). The runtime's knobs (log_level, trace, skip, comm_chunk, comm_timeout, comm,
 * optimizer_on, node_size, and whether sharding is hybrid) are fixed here; the model's
 * (prefetch_depth, bwd_prefetch, sharding, grad_accum, accum_mode, recompute,
 * param_dtype, reduce_dtype, memory_check) are the defaults of every model, which may
 * set its own (struct sf_model_options::config).
 */
SF_API int sf_init_config(int *argc, char ***argv, const struct sf_config *cfg, sf_context **out);

/* ------------------------------------------------------------------------ */
/* Models as task graphs                                                     */
/* ------------------------------------------------------------------------ */

/** A model description: nodes wired into a DAG. Nodes are named by small
 *  integer ids returned by the sf_graph_* builders; a node may only take as
 *  input nodes created before it, so creation order is a topological order. */
typedef struct sf_graph sf_graph;

/** Makes an empty graph; release it with sf_graph_destroy(). */
SF_API int sf_graph_create(const char *name, sf_graph **out);
/** Releases a graph (models made from it do not need it any more). NULL is accepted. */
SF_API int sf_graph_destroy(sf_graph *g);

/** Sets the sequence length T of every activation (default 1): a sample is then T
 *  rows, activations (B, T, C) are stored as B*T rows of C floats, and kernels read T
 *  from sf_layer_info::seq_len. Only before the graph's first node; T >= 1. */
SF_API int sf_graph_set_seq_len(sf_graph *g, int T);

/** A float input of width dim (a row per sample, T rows per sample with a sequence).
 *  Float inputs are numbered in creation order; struct sf_batch::inputs follows
 *  that order. */
SF_API int sf_graph_input(sf_graph *g, const char *name, int dim, int *out);
/** An integer input: one int32 id in [0, range) per row (token ids, range = the
 *  vocabulary). It feeds the integer inputs of layer types (an embedding) and has no
 *  gradient. Numbered in creation order: struct sf_batch::int_inputs. */
SF_API int sf_graph_int_input(sf_graph *g, const char *name, int range, int *out);
/** The integer class labels (one per row, in [0, nclasses); with a sequence, one per
 *  token). At most one. */
SF_API int sf_graph_label_input(sf_graph *g, const char *name, int nclasses, int *out);

/** Groups parameters into one unit (FSDP's "wrap a transformer block"): every node
 *  with parameters created until sf_graph_unit_end() joins unit `name`, whose
 *  parameters are gathered, reduce-scattered and updated as one flat vector. Outside
 *  a group, each node with parameters is a unit of its own (the default). Groups do
 *  not nest. The name of an earlier unit reopens it: the nodes that follow join its
 *  flat vector (a GPT's final layernorm joins the embeddings' unit); such a unit is in
 *  use from its first reader to its last, as a tied head makes it. */
SF_API int sf_graph_unit_begin(sf_graph *g, const char *name);
/** Ends the group opened by sf_graph_unit_begin(); an empty group is an error. */
SF_API int sf_graph_unit_end(sf_graph *g);

/** What FSDP2 lets each module choose (fully_shard(block, reshard_after_forward=...,
 *  mp_policy=...)), for one unit. */
struct sf_unit_options {
	/** 1 (default): with full (or hybrid) sharding the unit's gathered parameters are
	 *  freed after its last forward reader and gathered again for the backward; 0
	 *  keeps them gathered from forward to backward: one gather a step less, one more
	 *  ring slot of memory (FSDP2's reshard_after_forward=False). The other shardings
	 *  keep every unit's parameters whole anyway. */
	int reshard_after_forward;
	/** 1: the unit stays in fp32 when the model's param_dtype or reduce_dtype is bf16
	 *  (its gathers and reduce-scatters move fp32 and its linear layers multiply in
	 *  fp32: a final norm, a head kept in full precision); 0 (default): the model's
	 *  dtypes. */
	int keep_fp32;
	/** 1: the unit's parameters are frozen (PyTorch's requires_grad=False on every one
	 *  of them, as FSDP wants it uniform within a unit): no gradient is reduced or
	 *  kept, no optimizer state is allocated, no update runs, clipping's norm leaves
	 *  them out, and the backward of a frozen unit runs only where an earlier
	 *  trainable unit needs its input gradient (a frozen embedding and first blocks:
	 *  no backward at all). Checkpoints keep their format (a frozen unit's optimizer
	 *  state is saved as zeros, and ignored when loaded). 0 (default): trained. */
	int frozen;
};

/** Fills *o with the defaults above. */
SF_API int sf_unit_options_init(struct sf_unit_options *o);
/** Sets the options of unit `unit`: a name given to sf_graph_unit_begin() (before or
 *  after it ended: a ready-made graph's blocks too, as fully_shard(model.layers[i],
 *  ...) is called on a built model), or the name of a layer with parameters outside
 *  any group, which is a unit of its own (the unit sf_tensor_info::unit names). Each
 *  field is 0 or 1. An unknown unit is refused naming the graph's units (a layer of a
 *  group: naming its unit). Only before the graph's first successful
 *  sf_model_create(): the model copies the options and is not changed by its graph
 *  afterwards, so from then on the call is refused (SF_ERR_STATE), also once that
 *  model is destroyed, and every later model of the graph has the same options; for
 *  other options, build the graph again. A refused sf_model_create() fixes nothing. */
SF_API int sf_graph_unit_options(sf_graph *g, const char *unit, const struct sf_unit_options *o);
/** Like sf_graph_layer(), but the node has no parameters of its own: it uses those of
 *  node `owner` (tied weights, e.g. an output head that reuses the token embedding),
 *  which must have parameters and exactly as many as this node's type asks for. The
 *  gradients of both nodes are summed into the owner's; both read the owner's unit. */
SF_API int sf_graph_layer_tied(sf_graph *g, const char *type, const int *inputs, int ninputs,
                               const void *config, size_t config_size, const char *name,
                               int owner, int *out);

/** y = x W^T + b, W (O, I), b (O): a unit of parameters. name must be unique.
 *  Initialised U(-1/sqrt(I), 1/sqrt(I)) like PyTorch's nn.Linear. */
SF_API int sf_graph_linear(sf_graph *g, int x, int out_dim, const char *name, int *out);
/** The config of a "linear" or "linear_nobias" node in its long form (the short form
 *  is a bare int, the output width). */
struct sf_linear_config {
	int out_dim;    /**< O, > 0 */
	float init_std; /**< > 0: W drawn normal(0, init_std) and b = 0, as GPT-2 initialises;
	                     0: U(-1/sqrt(I), 1/sqrt(I)) for W and b, as nn.Linear */
};
/** A linear node from a struct sf_linear_config, with a bias (bias = 1) or without
 *  ("linear_nobias", y = x W^T). */
SF_API int sf_graph_linear_config(sf_graph *g, int x, const struct sf_linear_config *c, int bias,
                                  const char *name, int *out);
/** The most named tensors a layer type's parameters hold (sf_layer_type::param_tensors) */
#define SF_MAX_PARAM_TENSORS 4
/**
 * Tensor-parallel linear layers (types "linear_col" and "linear_row"), Megatron's split
 * over the SHARDFLOW_TP ranks of a TP group. A graph holds the whole layer (its
 * widths, parameters and safetensors names are those of a "linear" node); a model of
 * TP degree K gives each TP rank its slice:
 * - linear_col: W's output rows split in K (each of the nparts blocks of rows split
 *   in K: a fused QKV projection has 3, so each rank holds its heads' queries, keys
 *   and values), the bias with them; its output is split (out_dim / K columns a rank).
 *   Its backward's input gradient is a partial sum, all-reduced over the TP group by
 *   a comm task.
 * - linear_row: W's input columns split in K; its input must be split (a linear_col's
 *   output, or ops between that keep the split: attention, the element-wise ops); the
 *   partial outputs are all-reduced over the TP group by a comm task after its forward,
 *   the bias added once (by TP rank 0). Its backward needs no communication.
 * With K = 1 both are a "linear" layer, bitwise.
 */
struct sf_linear_tp_config {
	int out_dim;    /**< O, > 0: the whole layer's output width */
	int bias;       /**< 1: y = x W^T + b; 0: no bias */
	float init_std; /**< as struct sf_linear_config: > 0 W normal(0, init_std) and b = 0;
	                     0 U(-1/sqrt(I), 1/sqrt(I)) for W and b */
	int nparts;     /**< linear_col: blocks of output rows, each split over the TP ranks
	                     (3 for a fused QKV projection); 0 or 1: one. linear_row: 0 */
	/** linear_col with nparts > 1: each block's rows (summing to out_dim; Llama's q, k
	 *  and v of grouped-query attention differ); all 0: nparts equal blocks */
	int part_rows[SF_MAX_PARAM_TENSORS];
	/** linear_col: each block a tensor of its own, "<node name>.<part_names[k]>", as
	 *  linear_split's parts ("q_proj.weight"; no bias then); all "": one "weight" and
	 *  "bias" */
	char part_names[SF_MAX_PARAM_TENSORS][24];
	/** linear_col: 1 all-gathers the output over the TP group after the forward (a
	 *  comm task), so the output is whole and any op may read it; the backward then
	 *  takes this rank's columns of the output's gradient (Megatron's gather_output).
	 *  0 (default): the output stays split, for the ops that keep a split and a
	 *  linear_row after them. linear_row: 0 */
	int gather_output;
};
/** A column-parallel linear node (type "linear_col"). */
SF_API int sf_graph_linear_col(sf_graph *g, int x, const struct sf_linear_tp_config *c,
                               const char *name, int *out);
/** A row-parallel linear node (type "linear_row"). */
SF_API int sf_graph_linear_row(sf_graph *g, int x, const struct sf_linear_tp_config *c,
                               const char *name, int *out);
/** A linear layer without bias whose output rows are several projections side by side,
 *  exported as one tensor each: Llama's q_proj, k_proj and v_proj as one GEMM (type
 *  "linear_split"). W (sum rows, I) holds part k's rows after part k-1's; the tensor of
 *  part k is "<node name>.<names[k]>", (rows[k], I). */
struct sf_linear_split_config {
	int nparts;                                    /**< 1 .. SF_MAX_PARAM_TENSORS */
	int rows[SF_MAX_PARAM_TENSORS];                /**< each part's output width, > 0 */
	char names[SF_MAX_PARAM_TENSORS][24];          /**< each part's tensor name */
	float init_std; /**< > 0: W normal(0, init_std); 0: U(-1/sqrt(I), 1/sqrt(I)) */
};
SF_API int sf_graph_linear_split(sf_graph *g, int x, const struct sf_linear_split_config *c,
                                 const char *name, int *out);
/** Layer normalisation over the features of each row: y = (x - mean) / sqrt(var +
 *  1e-5) * w + b, w (C) initialised to 1 and b (C) to 0: a unit of parameters. name
 *  must be unique. (Another eps: sf_graph_layer(g, "layernorm", ...) with a struct
 *  sf_layernorm_config.) */
SF_API int sf_graph_layernorm(sf_graph *g, int x, const char *name, int *out);
/** The config of a "layernorm" node (optional). */
struct sf_layernorm_config {
	float eps; /**< > 0, added to the variance */
};
/** RMS normalisation over the features of each row (Llama's RMSNorm): y = x /
 *  sqrt(mean(x^2) + eps) * w, w (C) initialised to 1, no bias: a unit of parameters
 *  (tensor "weight"; weight decay skips it with SF_NO_DECAY_NORM). eps > 0 (Llama 3:
 *  1e-5; Hugging Face's LlamaConfig default: 1e-6). name must be unique. */
SF_API int sf_graph_rmsnorm(sf_graph *g, int x, float eps, const char *name, int *out);
/** The config of an "rmsnorm" node (sf_graph_layer; default eps 1e-5). */
struct sf_rmsnorm_config {
	float eps; /**< > 0, added to the mean of the squares */
};
/** Rotary position embedding (Llama's RoPE, Hugging Face's rotate_half layout): the
 *  first `rotated` columns of each row are heads of head_dim features; pair (i, i +
 *  head_dim/2) of each is rotated by t theta^(-2i/head_dim), t the row's position in
 *  its sequence; the other columns pass through. For a fused q | k | v projection of
 *  H query and Hkv key heads, rotated = (H + Hkv) head_dim. No parameters; the
 *  cos/sin table (T head_dim floats) is saved from forward to backward. */
SF_API int sf_graph_rope(sf_graph *g, int x, int rotated, int head_dim, float theta, int *out);
/** The config of a "rope" node (required). */
struct sf_rope_config {
	int rotated;  /**< columns rotated, a multiple of head_dim, at most the width */
	int head_dim; /**< features of a head, even */
	float theta;  /**< the base of the angles (Llama 2: 10000; Llama 3: 500000) */
};
/** SiLU (swish), element-wise: y = x sigmoid(x) (no parameters). */
SF_API int sf_graph_silu(sf_graph *g, int x, int *out);
/** The element-wise product of two nodes of the same width, y = a * b (no parameters):
 *  SwiGLU's gate, silu(x W1) * (x W3). */
SF_API int sf_graph_mul(sf_graph *g, int a, int b, int *out);
/** The core of causal multi-head self-attention (no parameters). qkv is the output of
 *  the QKV projection, width 3C: columns [0, C) q, [C, 2C) k, [2C, 3C) v, head h of
 *  `heads` using columns h*hs .. (h+1)*hs - 1 of each (hs = C / heads; nanoGPT's
 *  `c_attn(x).split(C, dim=2)`). Per sample and head: softmax(Q K^T / sqrt(hs)) V, a
 *  row of the sequence seeing itself and the rows before it only; the output (width C)
 *  holds the heads side by side. The graph's seq_len is T. 3 must divide the width of
 *  qkv and `heads` must divide C. The node saves each query row's softmax statistics
 *  (its max and inverse sum), B*heads*T*2 floats (B: the rank's samples), from forward
 *  to backward, which computes the probabilities again. (Type "attention", config the
 *  number of heads, an int.) */
SF_API int sf_graph_causal_attention(sf_graph *g, int qkv, int heads, int *out);
/** Causal attention with grouped-query heads (Llama 2 70B, Llama 3; Ainslie et al.
 *  2023): `heads` query heads and `kv_heads` key/value heads (kv_heads divides heads;
 *  kv_heads = heads is multi-head attention, 1 is multi-query). qkv has width (heads +
 *  2 kv_heads) hs: the query heads, then the key heads, then the value heads, hs
 *  features each (Hugging Face's q_proj, k_proj, v_proj outputs side by side); query
 *  head h uses key/value head h / (heads / kv_heads) (repeat_kv). The output has width
 *  heads hs; it saves B heads T 2 floats, the rows' statistics, as
 *  sf_graph_causal_attention. (Type "attention_gqa", config struct
 *  sf_attention_config.) */
SF_API int sf_graph_gqa_attention(sf_graph *g, int qkv, int heads, int kv_heads, int *out);
/** The config of an "attention_gqa" node (required). */
struct sf_attention_config {
	int heads;    /**< query heads */
	int kv_heads; /**< key/value heads, dividing heads */
};
/** y = x + W[t], t the row's position in its sequence (0 .. T-1): a learned position
 *  embedding, W (positions, C) initialised normal(0, 0.02): a unit of parameters. The
 *  graph's seq_len T must be <= positions. name must be unique; the safetensors tensor
 *  is "<name>.weight". (Type "pos_embedding", config the number of positions, an int.) */
SF_API int sf_graph_pos_embedding(sf_graph *g, int x, int positions, const char *name, int *out);
/** y = max(x, 0). */
SF_API int sf_graph_relu(sf_graph *g, int x, int *out);
/** y = GELU(x) (tanh approximation). */
SF_API int sf_graph_gelu(sf_graph *g, int x, int *out);
/** y = a + b (residual connection); a and b have the same width. */
SF_API int sf_graph_add(sf_graph *g, int a, int b, int *out);
/** The mean over the global batch (every token of it, with a sequence) of
 *  -log softmax(logits)[label]. Exactly one
 *  loss per graph; it must be the last node. logits width must equal nclasses. */
SF_API int sf_graph_softmax_cross_entropy(sf_graph *g, int logits, int labels, int *out);

/** The losses a graph may end with (sf_graph_loss()); each is a mean over the global
 *  batch, so any number of ranks gives the 1-rank update. */
enum sf_loss_kind {
	SF_LOSS_CROSS_ENTROPY = 0, /**< -log softmax(pred)[label], mean over rows (every token
	                                with a sequence): sf_graph_softmax_cross_entropy() */
	SF_LOSS_MSE,               /**< (pred - target)^2, mean over every element: PyTorch's
	                                MSELoss */
	SF_LOSS_L1,                /**< |pred - target|, mean over every element (L1Loss; its
	                                gradient where they are equal is 0) */
	SF_LOSS_HUBER,             /**< d = pred - target: d^2 / 2 where |d| < delta, else
	                                delta (|d| - delta / 2), mean over every element
	                                (HuberLoss) */
	SF_LOSS_MEAN,              /**< a loss written as a layer type: pred's elements are
	                                losses (a node of a type whose forward computes each
	                                row's loss, built in or sf_layer_type_register()'s),
	                                and the step's loss is their mean over the global
	                                batch; the backward seeds each element's gradient
	                                with 1 / (the global batch's elements), from which
	                                the type's backward computes its inputs' gradients.
	                                No target (-1): give targets as the layer's inputs */
	SF_LOSS_COUNT              /**< the number of values above; not a value */
};

/** A loss and its parameters. */
struct sf_loss_config {
	enum sf_loss_kind kind; /**< default SF_LOSS_CROSS_ENTROPY */
	float delta;            /**< SF_LOSS_HUBER's threshold, finite and > 0; default 1 */
	/** SF_LOSS_CROSS_ENTROPY: a row whose label is this value counts for nothing (no
	 *  loss, no gradient) and the mean is over the other rows of the global batch
	 *  (PyTorch's ignore_index: padding, a prompt's tokens). Any value; one in [0,
	 *  classes) makes that class ignored. Default SF_LOSS_IGNORE_INDEX (-100, as
	 *  PyTorch's), which no valid label equals: every row counts. A batch whose every
	 *  label is ignored has loss 0 and a zero gradient (PyTorch's mean would be NaN).
	 *  Fill the struct with sf_loss_config_init(): a zeroed one ignores class 0. */
	int ignore_index;
};

#define SF_LOSS_IGNORE_INDEX (-100) /**< default of sf_loss_config::ignore_index */

/** Fills *c with the defaults above. */
SF_API int sf_loss_config_init(struct sf_loss_config *c);

/** The graph's loss (NULL c: cross-entropy, as sf_graph_softmax_cross_entropy()) of pred
 *  against target. Cross-entropy: target is the label input, pred's width its classes.
 *  MSE, L1, Huber: target is a float input (sf_graph_input()) of pred's width, given
 *  with each batch like any input (sf_batch::inputs, in creation order); the graph
 *  needs no label input. SF_LOSS_MEAN (a loss written as a layer type): target is -1,
 *  pred the loss layer's node, whose inputs carry the prediction and the target
 *  (examples/regression.c --loss mse-layer: a 30-line "squared_error" type is MSE).
 *  pred is a layer. Exactly one loss per graph, its last node. Every kind runs on CPU workers and, in a CUDA build, on the GPU; the regression
 *  losses' CUDA kernel is compiled and its math checked through nvcc against the CPU's
 *  (bitwise), but has not yet run on a GPU. */
SF_API int sf_graph_loss(sf_graph *g, const struct sf_loss_config *c, int pred, int target,
                         int *out);

/** Adds a node of any registered layer type (built-in or sf_layer_type_register()).
 *  config (config_size bytes, may be NULL/0) is copied and handed to the type's
 *  functions. name may be NULL for parameterless layers. */
SF_API int sf_graph_layer(sf_graph *g, const char *type, const int *inputs, int ninputs,
                          const void *config, size_t config_size, const char *name, int *out);

/* ------------------------------------------------------------------------ */
/* Models: a GPT                                                             */
/* ------------------------------------------------------------------------ */

/** How a safetensors file lays its tensors out beside the model's own names and
 *  shapes: the 2-D tensors whose names end with one of `transposed` are stored
 *  transposed, (I, O) as Hugging Face's Conv1D keeps them, not (O, I). */
struct sf_safetensors_layout {
	const char *const *transposed; /**< name suffixes, e.g. ".attn.c_attn.weight" */
	int ntransposed;
};

/** The shape of a GPT-2-style decoder (sf_gpt_graph()). */
struct sf_gpt_config {
	int vocab;       /**< V: token ids in [0, V); default 256 (bytes) */
	int context;     /**< T: the sequence length and the positions of wpe; default 128 */
	int layers;      /**< transformer blocks; default 4 */
	int heads;       /**< attention heads; embd must be a multiple; default 4 */
	int embd;        /**< C: the width of the residual stream; default 128 */
	int tie_weights; /**< 1 (default): lm_head reuses wte's (V, C) matrix; 0: its own */
	/** 1: Megatron's split of each block for SHARDFLOW_TP (struct
	 *  sf_linear_tp_config): attn.c_attn and mlp.c_fc column-parallel ("linear_col";
	 *  c_attn's three blocks q, k, v each split, so a TP rank holds whole heads),
	 *  attn.c_proj and mlp.c_proj row-parallel ("linear_row"); the embeddings, the
	 *  layernorms and lm_head replicated. Same names, shapes and initial values as 0;
	 *  with SHARDFLOW_TP=1 bitwise the same model. 0 (default): "linear" nodes. */
	int tensor_parallel;
	/** 1: wte an "embedding_vp", each TP rank holding V / K of its rows (its masked
	 *  lookups summed over the TP group), and lm_head computing those V / K columns of
	 *  the logits (untied: a "linear_col" without bias; tied: wte's rows of the rank),
	 *  the loss vocabulary-parallel (its max, sum of exponentials and target logit
	 *  combined over the TP group: the B x T x V logits are never gathered); V must
	 *  divide by SHARDFLOW_TP. Same names, shapes and initial values as 0. 0
	 *  (default): both replicated. Tied (either value), wte and lm_head are the unit
	 *  "transformer.wte" and wpe and ln_f the unit "transformer"; at SHARDFLOW_TP=1
	 *  a tied embedding_vp is vocabulary-parallel over the data-parallel ranks
	 *  (sf_config::vocab_parallel). */
	int vocab_parallel;
};

/** Fills *c with the defaults above. */
SF_API int sf_gpt_config_init(struct sf_gpt_config *c);

/**
 * Builds a GPT-2-style decoder as nanoGPT's model.py writes it: token and learned
 * position embeddings, `layers` pre-norm blocks (x + attn(ln_1(x)); x + mlp(ln_2(x)),
 * causal multi-head attention, MLP of 4C with GELU (tanh form)), a final layernorm and
 * the head, and the mean cross-entropy over every token. Inputs: one integer input
 * "idx" (token ids) and the labels "targets" (the next token of each position), both
 * (samples * T); sequence length T = context. One unit per block
 * ("transformer.h.<i>") plus one unit "transformer" with wte, wpe, ln_f (and an untied
 * lm_head). Node names are nanoGPT's module names, so the safetensors export has its
 * state_dict keys ("transformer.h.0.attn.c_attn.weight", ...; a tied lm_head has no
 * tensor of its own: it is "transformer.wte.weight"). GPT-2 initialisation: linear
 * weights normal(0, 0.02), biases 0, the residual projections (attn.c_proj, mlp.c_proj)
 * normal(0, 0.02 / sqrt(2 layers)), embeddings normal(0, 0.02). Release the graph
 * with sf_graph_destroy().
 */
SF_API int sf_gpt_graph(const struct sf_gpt_config *c, sf_graph **out);
/** Whether FSDP's vocabulary-parallel tied unit (SHARDFLOW_VOCAB_PARALLEL at
 *  SHARDFLOW_TP=1, docs/training.md) sends fewer bytes a pass than gathering and
 *  reduce-scattering the tied matrix: a rank's 5 R C floats of rows and 3 N R of loss
 *  partials against the matrix's 2 V C / N (each times N - 1), for a vocabulary V,
 *  width C, N data-parallel ranks and R rows (samples x context) a rank a pass. 0
 *  when N < 2 or an argument is not positive. What SHARDFLOW_VOCAB_PARALLEL=auto has
 *  examples/gpt and shardflow-sim-job build the tied model by. */
SF_API int sf_vocab_parallel_pays(int vocab, int width, int ranks, size_t rows);

/** Writes Hugging Face's config.json of the model *c builds (GPT2LMHeadModel: n_embd,
 *  n_layer, n_head, n_positions and n_ctx (context), vocab_size, n_inner (4 embd),
 *  layer_norm_epsilon 1e-5, activation_function "gelu_new" (the tanh form),
 *  tie_word_embeddings, torch_dtype float32) to path, whole or not at all
 *  (sf_file_write_atomic). With an export in sf_gpt_hf_layout() the directory loads in
 *  transformers' GPT2LMHeadModel.from_pretrained. SF_ERR_INVALID for NULL arguments,
 *  SF_ERR_IO naming the file. */
SF_API int sf_gpt_config_write_hf(const struct sf_gpt_config *c, const char *path);
/** Checks Hugging Face's config.json at path against *c: model_type "gpt2", then
 *  n_layer, n_head, n_embd, vocab_size, n_positions (at least context), n_inner (null or
 *  4 embd), tie_word_embeddings (absent: tied) and activation_function (gelu_new or
 *  gelu_pytorch_tanh). The first mismatch is SF_ERR_INVALID naming the key, the file's
 *  value and the model's; an unreadable file SF_ERR_IO. */
SF_API int sf_gpt_config_check_hf(const struct sf_gpt_config *c, const char *path);
/** GPT2LMHeadModel's layout (sf_safetensors_layout): its Conv1D keeps attn.c_attn,
 *  attn.c_proj, mlp.c_fc and mlp.c_proj as (I, O), where sf_gpt_graph's linear nodes
 *  (and nanoGPT) keep (O, I). *l points at static data. */
SF_API int sf_gpt_hf_layout(struct sf_safetensors_layout *l);

/** The shape of a Llama-family decoder (sf_llama_graph()); Hugging Face's LlamaConfig
 *  field in brackets. */
struct sf_llama_config {
	int vocab;     /**< token ids in [0, vocab) [vocab_size]; default 256 */
	int context;   /**< T, the sequence length [max_position_embeddings]; default 128 */
	int dim;       /**< the residual stream's width [hidden_size]; default 128 */
	int layers;    /**< decoder blocks [num_hidden_layers]; default 4 */
	int heads;     /**< query heads, dividing dim [num_attention_heads]; default 4 */
	int kv_heads;  /**< key/value heads, dividing heads [num_key_value_heads]; default 2 */
	int ffn_dim;   /**< the SwiGLU MLP's width [intermediate_size]; 0 (default): Llama's
	                    rule from dim, multiple_of and ffn_dim_multiplier */
	int multiple_of;          /**< the rule rounds up to a multiple of it; default 32 */
	float ffn_dim_multiplier; /**< the rule's multiplier (Llama 3 8B: 1.3); 0: none */
	float norm_eps;           /**< RMSNorm's eps [rms_norm_eps]; default 1e-5 */
	float rope_theta;         /**< [rope_theta]; default 10000 (Llama 3: 500000) */
	int tie_weights;          /**< 1: lm_head reuses embed_tokens [tie_word_embeddings];
	                               default 0 */
	/** 1: Megatron's split of each block for SHARDFLOW_TP (struct
	 *  sf_linear_tp_config): the fused q | k | v projection column-parallel in its three
	 *  blocks (a TP rank holds its query and key/value heads: heads and kv_heads must
	 *  divide by K), o_proj row-parallel, gate_proj and up_proj column-parallel,
	 *  down_proj row-parallel; embeddings, norms and lm_head replicated. Same names,
	 *  shapes and initial values as 0; bitwise the same model with SHARDFLOW_TP=1.
	 *  0 (default): "linear" nodes. */
	int tensor_parallel;
	/** 1: embed_tokens and lm_head (tied or not) vocabulary-parallel, as
	 *  sf_gpt_config::vocab_parallel. 0 (default): replicated. */
	int vocab_parallel;
};

/** Fills *c with the defaults above. */
SF_API int sf_llama_config_init(struct sf_llama_config *c);
/** The MLP width sf_llama_graph uses: c->ffn_dim when set, else Llama's rule
 *  (hidden = 2 (4 dim) / 3, times ffn_dim_multiplier when set, rounded up to a multiple
 *  of multiple_of). */
SF_API int sf_llama_ffn_dim(const struct sf_llama_config *c);
/** Writes Hugging Face's config.json of the model *c builds (LlamaForCausalLM:
 *  hidden_size, intermediate_size (sf_llama_ffn_dim), heads, key/value heads, layers,
 *  vocab_size, max_position_embeddings, rms_norm_eps, rope_theta,
 *  tie_word_embeddings, torch_dtype float32) to path, whole or not at all (a temporary
 *  file renamed over it), so that a directory holding it and the model's
 *  sf_model_export_safetensors() file loads in transformers'
 *  LlamaForCausalLM.from_pretrained (the export's names and layouts are Hugging
 *  Face's). SF_ERR_INVALID for NULL arguments or a config sf_llama_ffn_dim refuses;
 *  SF_ERR_IO naming the file. */
SF_API int sf_llama_config_write_hf(const struct sf_llama_config *c, const char *path);
/** Checks Hugging Face's config.json at path against *c: model_type "llama", then
 *  num_hidden_layers, num_attention_heads, num_key_value_heads (absent: the heads),
 *  hidden_size, intermediate_size (sf_llama_ffn_dim), vocab_size,
 *  max_position_embeddings (at least context), rms_norm_eps, rope_theta and
 *  tie_word_embeddings (absent: untied). The first mismatch is SF_ERR_INVALID naming
 *  the key, the file's value and the model's; an unreadable file SF_ERR_IO. */
SF_API int sf_llama_config_check_hf(const struct sf_llama_config *c, const char *path);

/**
 * Builds a Llama-family decoder as Hugging Face's LlamaForCausalLM computes it: token
 * embeddings, `layers` pre-norm blocks (x + o_proj(attn(rope(q, k), v)) on
 * input_layernorm(x); x + down_proj(silu(gate_proj(h)) * up_proj(h)) on
 * post_attention_layernorm(x)), RMSNorm, grouped-query causal attention with rotary
 * embeddings, no biases, then model.norm and lm_head, and the mean cross-entropy over
 * every token. Inputs "idx" (ids) and "targets" (labels), as sf_gpt_graph's. Units:
 * "model.embed_tokens", one per block ("model.layers.<i>"), and "lm_head" (model.norm
 * and lm_head; with tied weights both ends are the unit "model"). Node names give
 * Hugging Face's state_dict keys ("model.embed_tokens.weight",
 * "model.layers.0.self_attn.q_proj.weight" (q, k and v are one linear_split GEMM
 * exported as three tensors), ..., "model.norm.weight", "lm_head.weight"), so the
 * safetensors export loads into transformers. Hugging Face's initialisation: linear and
 * embedding weights normal(0, 0.02), RMSNorm weights 1.
 */
SF_API int sf_llama_graph(const struct sf_llama_config *c, sf_graph **out);

/* ------------------------------------------------------------------------ */
/* Layer types: write your own                                               */
/* ------------------------------------------------------------------------ */

#define SF_MAX_INPUTS 4

/** The version of struct sf_layer_type and struct sf_layer_info this header
 *  describes. A type sets .api_version to it; sf_layer_type_register() refuses a
 *  type built against another version (its kernels would read the wrong fields), but
 *  for version 3, whose structs are this one's without the accepted config sizes
 *  (version 4 added nconfig_sizes and config_sizes at the end of struct
 *  sf_layer_type): such a type is registered as it was, its configs unchecked. */
#define SF_LAYER_API_VERSION 6

/** The most config sizes a layer type may list (sf_layer_type::config_sizes). */
#define SF_MAX_CONFIG_SIZES 4

/**
 * What a layer's kernels receive as StarPU cl_arg: the layer's shapes, fixed for the
 * life of a model. Kernels read their buffers with the sf_kernel_* accessors below.
 *
 * Activations of a graph with sequence length T (sf_graph_set_seq_len()) have shape
 * (B, T, C) and are stored as B*T rows of C floats: `rows` = samples * seq_len. The
 * batch is split over ranks by samples, so a kernel always sees whole sequences.
 */
struct sf_layer_info {
	int rows;                       /**< B*T: rows of this rank's slice of the batch */
	int samples;                    /**< B: sequences (samples) in this rank's slice */
	int seq_len;                    /**< T: rows per sample (1 without a sequence) */
	int nin;                        /**< number of inputs */
	int in_dim[SF_MAX_INPUTS];      /**< width of each input (1 for integer inputs) */
	int in_int[SF_MAX_INPUTS];      /**< 1 if input i holds int32 ids (token ids), read
	                                     with sf_kernel_input_int(); it has no gradient */
	int in_range[SF_MAX_INPUTS];    /**< integer inputs: ids lie in [0, in_range[i]) */
	int out_dim;                    /**< width of the output */
	size_t nparams;                 /**< P: flat parameter count (0: no parameters) */
	size_t nsaved;                  /**< floats of the node's saved buffer (0: none) */
	const void *config;             /**< the node's config blob (NULL if none) */
	size_t config_size;             /**< its size in bytes, as given to sf_graph_layer() (a
	                                     type may accept a short and a long form) */
	int need_dinput[SF_MAX_INPUTS]; /**< backward: 1 if the gradient of input i is wanted */
	int accumulate[SF_MAX_INPUTS];  /**< backward: 1 if dinput i must be added to, 0 if
	                                   overwritten */
	int accumulate_dparams;         /**< backward: 1 if dparams must be added to (tied
	                                     parameters: another node wrote its gradient
	                                     first), 0 if overwritten */
	int layer_index;                /**< position of the node in its graph */
	int backward;                   /**< 1 in the info a backward kernel receives, 0 in
	                                     the forward's (the buffer layouts differ) */
	int params_absent;              /**< backward: 1 when the parameters were not passed (see
	                                     sf_layer_type::backward_params_for_dinput_only); then
	                                     sf_kernel_params() returns NULL */
	size_t param_offset;            /**< where the node's parameters start in its unit's
	                                     flat vector (the accessors add it) */
	int param_bf16;                 /**< 1 when the node's parameters arrive rounded to
	                                     bf16 (param_dtype bf16, its unit not kept in
	                                     fp32): a type may then compute its products in
	                                     bf16 (the linear layers do, with oneDNN) */
	int dparams_absent;             /**< backward: 1 in the input-gradient half of a split
	                                     backward (SHARDFLOW_SPLIT_BACKWARD; built-in
	                                     linear types only): no [dparams] buffer, and
	                                     sf_kernel_dparams() returns NULL */
	/* version 5 */
	int tp_size;  /**< the TP group's size (SHARDFLOW_TP; 1: none) */
	int tp_rank;  /**< this rank's place in its TP group */
	int tp_split; /**< 1 when the node computes this rank's slice of a
	                   tensor-parallel layer: its widths (in_dim, out_dim,
	                   nparams) are the slice's, as docs/training.md's
	                   "Tensor parallelism" says (linear_col's output,
	                   linear_row's input, the attention heads between);
	                   0: the whole layer, replicated on the TP ranks */
	/* version 6 */
	int cp_size; /**< the CP group's size (SHARDFLOW_CP; 1: none) */
	/** The positions of a sample's seq_len rows: row t < pos_n0 is at position
	 *  pos_p0 + t, a later one at pos_p1 + (t - pos_n0). Without context parallelism
	 *  (cp_size 1) pos_n0 = seq_len and pos_p0 = 0: row t is at position t; with it a
	 *  rank holds two chunks of each sample (docs/training.md, "Context parallelism").
	 *  Only a type that reads a row's position (the position embedding, RoPE) needs
	 *  them; sf_model_create refuses SHARDFLOW_CP for a graph with a type of a user's
	 *  own so far. */
	int pos_n0, pos_p0, pos_p1;
};

/** A StarPU CPU (or CUDA) implementation: void f(void *buffers[], void *cl_arg). */
typedef void (*sf_kernel_fn)(void *buffers[], void *cl_arg);

/** Deterministic random numbers for parameter initialisation. */
struct sf_rng {
	uint64_t state;
};
/** A uniform float in [-1, 1). */
SF_API float sf_rng_uniform(struct sf_rng *rng);
/** A normal float of mean 0 and standard deviation 1 (Box-Muller on two uniforms). */
SF_API float sf_rng_normal(struct sf_rng *rng);

/** One named tensor of a node's flat parameters (for safetensors and checkpoints). */
struct sf_param_tensor {
	char suffix[24]; /**< appended to "<node name>.", e.g. "weight" */
	size_t offset;   /**< first element in the node's flat parameters */
	int ndim;        /**< 1 or 2 */
	size_t shape[2]; /**< elements = shape[0] (* shape[1]) */
};

/**
 * A layer type. Buffers a kernel sees (row-major (rows, width) vectors; floats unless
 * the input is an integer one):
 *   forward : [params]  in_0 .. in_{n-1}  out(W)  [saved(W)]
 *   backward: [params]  in_0 .. in_{n-1}  out  dout  [saved(R)]  [din_i for each needed i]
 *             [dparams]
 * where [params], [dparams] are present only when nparams > 0, [saved] only when the
 * type has a saved buffer, [din_i] only when need_dinput[i]. Use the sf_kernel_*
 * accessors rather than indices. The rule for outputs: activations are overwritten
 * ("="); input gradients are overwritten or added to as accumulate[i] says ("din +="
 * when another consumer wrote first); parameter gradients are overwritten unless
 * accumulate_dparams (tied parameters).
 */
struct sf_layer_type {
	int api_version;  /**< SF_LAYER_API_VERSION */
	const char *name; /**< unique type name, e.g. "rms_norm" */
	int min_inputs;   /**< 1..SF_MAX_INPUTS */
	int max_inputs;
	/** Bit i set: input i takes an integer node (sf_graph_int_input(), token ids);
	 *  clear: a float node. */
	unsigned int_inputs;
	/** Output width and parameter count from input widths and config; returns
	 *  SF_OK or SF_ERR_INVALID (after sf_error_set() with a message). For an integer
	 *  input, in_dims[i] is the id range (the vocabulary). */
	int (*infer)(const int *in_dims, int nin, const void *config, int *out_dim,
	             size_t *nparams);
	/** Fills the nparams flat parameters; the same seed gives the same values on
	 *  every rank and world size. May be NULL when nparams is always 0. */
	void (*init)(const struct sf_layer_info *info, struct sf_rng *rng, float *params);
	sf_kernel_fn forward_cpu;                          /**< required */
	sf_kernel_fn backward_cpu;                         /**< required */
	/** CUDA implementations of the same kernels (same buffers, run on
	 *  starpu_cuda_get_local_stream()); NULL: the op runs on CPU workers only. */
	sf_kernel_fn forward_cuda;
	sf_kernel_fn backward_cuda;
	/** The forward's floating-point operations, for StarPU's perfmodels; NULL: none.
	 *  It is asked for the backward's task too (info->backward = 1), which is counted
	 *  as twice the value (once when the node computes no input gradient). */
	double (*flops)(const struct sf_layer_info *info);
	/** Floats of per-node scratch that the forward writes and the backward reads
	 *  (layernorm's mean and rstd, attention's row statistics), allocated once per node
	 *  with the model. NULL: no saved buffer. */
	size_t (*saved_floats)(const struct sf_layer_info *info);
	/** The named tensors of the flat parameters (at most SF_MAX_PARAM_TENSORS); returns
	 *  their count. NULL: one tensor "params" of nparams elements. */
	int (*param_tensors)(const struct sf_layer_info *info, struct sf_param_tensor *out);
	/** 1 if the backward reads the parameters only to compute input gradients, as a
	 *  linear layer does (dW and db need only the input and dout). When no input
	 *  gradient is wanted (the layer reads a graph input), its backward then gets no
	 *  parameters (info->params_absent, sf_kernel_params() NULL) and a sharded unit
	 *  is not gathered a second time for it. Default 0: the backward always gets them. */
	int backward_params_for_dinput_only;
	/** The config sizes, in bytes, that the type accepts (version 4): sf_graph_layer()
	 *  refuses a node whose config_size is not among the first nconfig_sizes entries,
	 *  naming the type, the size given and these, before infer() reads the config
	 *  (infer() does not see the size). An entry 0 accepts no config (NULL, 0). E.g.
	 *  an optional struct: 2, {0, sizeof(struct my_config)}. nconfig_sizes 0 (the
	 *  default): any size reaches infer() unchecked. 0 <= nconfig_sizes <=
	 *  SF_MAX_CONFIG_SIZES. */
	int nconfig_sizes;
	size_t config_sizes[SF_MAX_CONFIG_SIZES];
};

/** Registers a layer type (the struct is copied; name must not be taken). Call
 *  before sf_model_create() of a graph that uses it. Thread-unsafe. */
SF_API int sf_layer_type_register(const struct sf_layer_type *type);

/** Raises an error in a layer type's callback (infer()): records the message for
 *  sf_last_error() and returns status (SF_ERR_INVALID when status is not negative).
 *  The library function that called the callback adds its context (the type, the
 *  call) and prints the whole once, as it prints its own errors (sf_log_set_quiet());
 *  called elsewhere, sf_error_set() prints the message itself. */
SF_API int sf_error_set(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Buffer accessors for kernels (see struct sf_layer_type for the layout). */
/** The node's parameters (its slice of the unit; NULL when params_absent). */
SF_API float *sf_kernel_params(void *buffers[], const struct sf_layer_info *li);
/** Float input i; NULL when input i is an integer input. */
SF_API float *sf_kernel_input(void *buffers[], const struct sf_layer_info *li, int i);
/** Integer input i (rows int32 ids); NULL when input i is a float input. */
SF_API const int32_t *sf_kernel_input_int(void *buffers[], const struct sf_layer_info *li, int i);
SF_API float *sf_kernel_output(void *buffers[], const struct sf_layer_info *li);
SF_API float *sf_kernel_doutput(void *buffers[], const struct sf_layer_info *li);
/** The saved buffer (nsaved floats); NULL when the type has none. Forward kernels
 *  write it, backward kernels read it. */
SF_API float *sf_kernel_saved(void *buffers[], const struct sf_layer_info *li);
/** NULL when need_dinput[i] is 0. */
SF_API float *sf_kernel_dinput(void *buffers[], const struct sf_layer_info *li, int i);
SF_API float *sf_kernel_dparams(void *buffers[], const struct sf_layer_info *li);
/** For checking a kernel outside a training step (a finite-difference test, as
 *  examples/custom_layer.c --check does): makes the array of n buffers a kernel is
 *  given, buffer i holding the data at ptrs[i], which the sf_kernel_* accessors read
 *  as they read a step's buffers (in the order struct sf_layer_type gives). ptrs[i]
 *  are not copied and must outlive the array; *out is the caller's, released with
 *  sf_kernel_buffers_destroy(). SF_ERR_INVALID for NULL arguments or n < 1. */
SF_API int sf_kernel_buffers_create(void *const ptrs[], int n, void ***out);
/** Releases an array made by sf_kernel_buffers_create() (NULL: nothing). */
SF_API void sf_kernel_buffers_destroy(void **buffers);

/* ------------------------------------------------------------------------ */
/* Models and training steps                                                 */
/* ------------------------------------------------------------------------ */

enum sf_optimizer {
	SF_OPT_SGD = 0, /**< SGD with momentum (state: one vector, the momentum buffer) */
	SF_OPT_ADAMW,   /**< AdamW (state: two vectors, the first and second moments) */
	/** Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"; state:
	 *  one vector, the momentum): c = beta1 m + (1 - beta1) g;
	 *  p -= lr (sign(c) + weight_decay p); m = beta2 m + (1 - beta2) g. The paper's
	 *  defaults are beta1 0.9, beta2 0.99 (set beta2: the default 0.999 is AdamW's) and
	 *  an lr 3-10x smaller than AdamW's. */
	SF_OPT_LION,
	SF_OPT_COUNT, /**< the number of values above; not a value */
};

/** The enum sf_optimizer value of a name, as checkpoints record it and programs take it
 *  on their command line (these pairs of functions are described above
 *  sf_sharding_from_name()). */
SF_API int sf_optimizer_from_name(const char *name, enum sf_optimizer *out);
/** The name of an enum sf_optimizer value ("sgd", ...), or NULL out of range. */
SF_API const char *sf_optimizer_name(enum sf_optimizer value);

struct sf_model_options {
	/** Global samples per step (rows, or sequences of T rows), default 64. It must be
	 *  >= the number of ranks N (sf_model_create() refuses a smaller one): rank r
	 *  takes batch / N samples and the first batch % N ranks one more each, in rank
	 *  order (sf_model_local_rows(); 64 on 3 ranks: 22, 21, 21). The loss is the mean
	 *  over the global batch, so any N makes the update 1 rank makes. */
	int batch;
	uint64_t seed;               /**< parameter initialisation seed, default 1 */
	enum sf_optimizer optimizer; /**< default SF_OPT_SGD */
	float lr;                    /**< learning rate, default 0.01 */
	float momentum;              /**< SGD momentum, default 0.9 */
	float weight_decay; /**< SGD: L2 added to the gradient; AdamW, Lion: decoupled; default 0 */
	float beta1, beta2, eps; /**< AdamW (and Lion's beta1, beta2), defaults 0.9, 0.999, 1e-8 */
	/** Global-norm gradient clipping, as torch.nn.utils.clip_grad_norm_: every step's
	 *  gradient (the mean over its micro-batches) is multiplied by
	 *  min(1, max_grad_norm / (norm + 1e-6)), norm being the 2-norm of the whole
	 *  model's gradient, computed over the shards with one scalar all-reduce and read
	 *  by the optimizer tasks from a buffer (no host round trip). 0 = off (default);
	 *  INFINITY computes the norm (sf_model_grad_norm()) without clipping. */
	float max_grad_norm;
	/** Parameter groups: the parameters weight decay skips, a mask of
	 *  SF_NO_DECAY_* (every optimizer). Default SF_NO_DECAY_DEFAULT (biases,
	 *  normalisation weights and biases, embeddings: the common practice; nanoGPT
	 *  decays its embeddings, as SF_NO_DECAY_BIAS | SF_NO_DECAY_NORM does); 0 decays
	 *  every parameter. */
	unsigned no_decay;
	/** The model's own knobs: NULL (default) takes the context's; else a struct
	 *  sf_config (start from sf_context_config() or sf_config_init()) whose model knobs
	 *  — prefetch_depth, bwd_prefetch, sharding, grad_accum, accum_mode, recompute,
	 *  param_dtype, reduce_dtype, memory_check — this model uses, each checked. A
	 *  SHARDFLOW_* variable set when the context started overrides them, logged as at
	 *  sf_init_config(). Its runtime knobs must be the context's or the defaults
	 *  (they are fixed at sf_init_config(); another value is refused), and a model is
	 *  hybrid exactly when its context is (the node groups are made at start). Read
	 *  by sf_model_create() only. */
	const struct sf_config *config;
};

/** Kinds of parameters for sf_model_options::no_decay. A tensor's kind: a layernorm's
 *  are SF_NO_DECAY_NORM, an embedding's and a position embedding's SF_NO_DECAY_EMBED,
 *  any other one-dimensional tensor a layer type names (param_tensors) SF_NO_DECAY_BIAS;
 *  the rest (matrices, and a type's unnamed "params") always decay. */
#define SF_NO_DECAY_BIAS 1u
#define SF_NO_DECAY_NORM 2u
#define SF_NO_DECAY_EMBED 4u
#define SF_NO_DECAY_DEFAULT (SF_NO_DECAY_BIAS | SF_NO_DECAY_NORM | SF_NO_DECAY_EMBED)

/** Fills *o with the defaults above. */
SF_API int sf_model_options_init(struct sf_model_options *o);

typedef struct sf_model sf_model;

/**
 * Builds the task-graph machinery for g: one unit per layer with parameters,
 * flat padded shards (rank r owns [r*S, (r+1)*S) of each unit, S = ceil(P/N)),
 * the prefetch ring, optimizer state, and every StarPU handle the steps will use
 * (none is created per step). Parameters are initialised from o->seed identically
 * for any world size. Collective over the context's ranks. g may be destroyed
 * afterwards. Release with sf_model_destroy().
 */
SF_API int sf_model_create(sf_context *ctx, const sf_graph *g, const struct sf_model_options *o,
                           sf_model **out);

/** Waits for every submitted step, then releases the model. NULL is accepted. */
SF_API int sf_model_destroy(sf_model *m);

/** This rank's slice of the global batch: samples [*first, *first + *rows) (each a
 *  sequence of T rows when the graph has one), with N ranks *rows = batch / N, plus
 *  one on the first batch % N ranks, and *first = r * (batch / N) + min(r, batch % N)
 *  on rank r (see sf_model_options::batch). */
SF_API int sf_model_local_rows(const sf_model *m, int *first, int *rows);

/** One step's data: this rank's rows only (sf_model_local_rows()). */
struct sf_batch {
	int ninputs;                /**< number of sf_graph_input() nodes */
	const float *const *inputs; /**< inputs[i]: (rows*T, dim of input i), row-major */
	const int32_t *labels;      /**< (rows*T), NULL if the graph has no labels */
	int nint_inputs;            /**< number of sf_graph_int_input() nodes */
	const int32_t *const *int_inputs; /**< int_inputs[i]: (rows*T) ids in [0, range) */
};

/**
 * Submits one training step (forward, loss, backward, optimizer) and returns as
 * soon as its tasks are submitted; the batch has been copied by then. *ticket
 * (may be NULL) names the step for sf_model_loss(). Labels are checked here:
 * an out-of-range label is an error and nothing is submitted.
 */
SF_API int sf_model_step(sf_model *m, const struct sf_batch *batch, int64_t *ticket);

/**
 * Gradient accumulation: submits the forward and backward pass of one micro-batch
 * (a struct sf_batch as for sf_model_step(), this rank's rows) and keeps its gradient
 * without updating the parameters. The next sf_model_step() adds its own batch and
 * updates with the mean gradient of all the micro-batches since the previous update:
 * K - 1 calls and a step over K micro-batches of B samples make the update of one step
 * over K B samples. Where the sum lives is SHARDFLOW_ACCUM_MODE (struct sf_config):
 * "sharded" reduce-scatters every micro-batch and adds into the gradient shard,
 * "local" adds into a full gradient per unit (allocated at the first call) and
 * reduces once at the step. *ticket (may be NULL) names the micro-batch for
 * sf_model_loss(), whose loss is that micro-batch's mean. With cross-entropy's ignore
 * index each micro-batch's loss and gradient are the mean over its own counted rows
 * (a micro-batch is submitted before the next one is known), so the update is the
 * mean of the micro-batches' means: the mean over every counted row only when each
 * micro-batch counts as many rows. A pipeline step (SHARDFLOW_PP), which stages all
 * its micro-batches first, takes the mean over the step's counted rows. Collective
 * like a step.
 */
SF_API int sf_model_accumulate(sf_model *m, const struct sf_batch *batch, int64_t *ticket);

/** The 2-norm of the gradient step `ticket` (an sf_model_step() ticket) applied,
 *  before clipping (torch.nn.utils.clip_grad_norm_'s return value): waits for it.
 *  Only with sf_model_options::max_grad_norm set (else SF_ERR_INVALID); kept for the
 *  16 most recent tickets like the losses. */
SF_API int sf_model_grad_norm(sf_model *m, int64_t ticket, double *norm);

/** Waits for step `ticket` and returns its global mean loss (the same on every
 *  rank). Losses of the 16 most recent steps are kept. A NaN or infinite loss (a
 *  diverging run, NaN/Inf parameters) is SF_ERR_NONFINITE with a message naming the
 *  step; *loss holds the value all the same, so a caller may choose to go on. */
SF_API int sf_model_loss(sf_model *m, int64_t ticket, double *loss);

/** Waits until every submitted step is complete. */
SF_API int sf_model_sync(sf_model *m);

/** Changes the learning rate of the steps submitted from now on. */
SF_API int sf_model_set_lr(sf_model *m, float lr);

/** Total number of (unpadded) parameters of the model. */
SF_API int sf_model_param_count(const sf_model *m, size_t *n);

/** Collective: waits for submitted steps, then writes all parameters (units in
 *  graph order, each W then b, unpadded) into dst[0..n) on every rank. n must be
 *  sf_model_param_count(). */
SF_API int sf_model_params_get(sf_model *m, float *dst, size_t n);

/** Sets every parameter from memory (src: sf_model_params_get()'s layout, n =
 *  sf_model_param_count(), the same values on every rank) and resets the optimizer's
 *  state, as sf_model_import_safetensors() does from a file. Call on every rank, between
 *  steps (not while micro-batches are accumulated); waits for submitted steps. */
SF_API int sf_model_params_set(sf_model *m, const float *src, size_t n);

#define SF_TENSOR_NAME_MAX 96 /**< bytes of a tensor's name, with the NUL */

/** A named tensor of a model: what its safetensors export calls it ("fc1.weight" (O,
 *  I), "fc1.bias" (O), "transformer.h.0.attn.c_attn.weight"; a layer type without
 *  names: "<node>.params"), its shape and the unit it belongs to. */
struct sf_tensor_info {
	char name[SF_TENSOR_NAME_MAX];
	int ndim;           /**< 1 or 2 */
	size_t shape[2];    /**< shape[1] is 0 for one dimension */
	size_t numel;       /**< floats */
	const char *unit;   /**< the unit's name (valid while the model lives) */
};

/** How many named tensors the model has (a tied node's are its owner's). */
SF_API int sf_model_tensor_count(sf_model *m, int *count);
/** Tensor i (0 <= i < count, the export's order: units in order, a unit's tensors in
 *  its flat vector's order). */
SF_API int sf_model_tensor_info(sf_model *m, int i, struct sf_tensor_info *out);
/** Collective: waits for submitted steps, then copies tensor `name` whole into dst (n
 *  = its numel floats) on every rank (its unit is gathered). An unknown name is
 *  SF_ERR_NOT_FOUND, naming the model's tensors. */
SF_API int sf_model_tensor_get(sf_model *m, const char *name, float *dst, size_t n);
/** Sets tensor `name` from src (n = its numel floats, the same values on every rank;
 *  each rank keeps its part). The optimizer's state is left as it is. Call on every
 *  rank, between steps; waits for submitted steps. */
SF_API int sf_model_tensor_set(sf_model *m, const char *name, const float *src, size_t n);
/** Collective: the gradient of tensor `name` that the last sf_model_step() applied —
 *  of the step's mean loss, averaged over its micro-batches, before clipping — whole on
 *  every rank (for debugging, logging, or checking a norm). Kept with sharding full,
 *  grad_op and hybrid, and with clipping or micro-batches; with sharding none
 *  otherwise the optimizer applies it from a reused slot: SF_ERR_STATE. */
SF_API int sf_model_grad_get(sf_model *m, const char *name, float *dst, size_t n);
/** Scales tensor `name`'s learning rate (PyTorch's per-param-group lr): its updates,
 *  weight decay included, use lr x scale; 1 by default, any finite scale >= 0. Scale 0
 *  freezes its values (its gradient is still computed and its optimizer state still
 *  moves: a frozen tensor saves no compute or memory yet). Call on every rank, between
 *  steps; it applies from the next step. Not saved in checkpoints: set it again after
 *  loading. */
SF_API int sf_model_tensor_lr_scale(sf_model *m, const char *name, float scale);

struct sf_model_stats {
	int nunits;             /**< units (layers with parameters) */
	size_t largest_unit;    /**< P of the largest unit */
	int64_t steps;          /**< steps and micro-batches submitted (tickets issued) */
	int64_t updates;        /**< optimizer updates submitted (sf_model_step() calls) */
	int accumulated;        /**< micro-batches accumulated since the last update */
	int max_resident_units; /**< most gathered units resident at once so far */
	int ring_slots;         /**< gather ring size (prefetch depth + 1) */
	size_t param_bytes;     /**< this rank's parameter storage: shards + gather ring (full)
	                             or replicas (grad_op, none) */
	size_t grad_bytes;      /**< gradient slots and gradient shards */
	size_t optimizer_bytes; /**< optimizer state (momentum, or AdamW m and v) */
	size_t activation_bytes; /**< this rank's activations (its rows of every node's
	                              output, inputs included), their gradients and the
	                              saved buffers (attention's and layernorm's row
	                              statistics): allocated once at sf_model_create and
	                              all live through a step, so this is also the peak */
	size_t buffer_bytes;     /**< the collectives' scratch buffers (a shard for the
	                              reduce-scatter, bf16 staging, the replica ring's) */
	/* What the comm path costs on this rank, since the model was created: */
	double comm_seconds;            /**< wall time the comm worker spent in the model's
	                                     collective tasks */
	double comm_cpu_seconds;        /**< CPU time the comm worker's thread used in them
	                                     (MPI calls and polling, copies, the reduce-scatter's
	                                     sums; not the kernel's TCP work) */
	double comm_bytes;              /**< bytes this rank sent in the step's parameter and
	                                     gradient collectives (a ring sends N - 1 blocks;
	                                     an all-reduce counted as a ring's 2 (N - 1) / N of
	                                     the vector); the loss's and the norm's scalars
	                                     are not counted */
	double comm_bytes_inter;        /**< of comm_bytes, those sent to a rank of another
	                                     node (nodes: SHARDFLOW_NODE_SIZE consecutive
	                                     ranks, else the ranks sharing memory) */
	double comm_worker_cpu_seconds; /**< CPU time of the comm worker's thread in all,
	                                     idle spinning between tasks included (a
	                                     StarPU with non-blocking drivers spins) */
	/* The 2-D layout (SHARDFLOW_TP): the model split K ways inside a TP group, then
	 * each TP rank's slice sharded over the dp ranks of its TP place. */
	int tp;                /**< K, the TP group's ranks (1: no TP) */
	int dp;                /**< the data-parallel ranks: world / K */
	size_t model_bytes;    /**< the whole model's parameters (fp32) */
	size_t tp_slice_bytes; /**< this rank's TP slice of them (model_bytes with K 1;
	                            what every TP rank holds alike, norms and embeddings,
	                            counts whole): what FSDP then shards over dp */
	double tp_comm_bytes;  /**< of comm_bytes, those of the TP all-reduces of
	                            activations and their gradients (a ring's 2 (K - 1)
	                            / K of each) */
};

/** This process's memory, as the kernel counts it (Linux). */
struct sf_memory_info {
	uint64_t rss;       /**< resident set now (VmRSS), bytes */
	uint64_t peak_rss;  /**< its peak so far (VmHWM), bytes */
	int limited;        /**< 1: a limit applies (the fields below are set) */
	uint64_t limit;     /**< the tightest limit: its cgroup's (memory.max, v1's
	                         memory.limit_in_bytes, ancestors included) or RLIMIT_AS */
	uint64_t used;      /**< what counts against it now (the cgroup's usage less its
	                         inactive file cache; the address space for RLIMIT_AS) */
	char limit_what[600]; /**< which limit, e.g. "cgroup v1 memory.limit_in_bytes of
	                           /sys/fs/cgroup/memory/job" */
};

/** Fills *out (what cannot be read is 0, or no limit). SHARDFLOW_MEMORY_CHECK compares
 *  sf_model_create()'s plan with limit - used. */
SF_API int sf_memory_info(struct sf_memory_info *out);

/** Counters of the model; waits for submitted steps so the counts are final. */
SF_API int sf_model_stats(sf_model *m, struct sf_model_stats *out);

/**
 * With SHARDFLOW_TRACE=<prefix>: collective; waits for submitted steps and writes
 * what was recorded so far: <prefix>.rank<r>.json on every rank (Chrome trace
 * format: Perfetto, chrome://tracing), and on rank 0 the overlap report
 * <prefix>.overlap.txt and .json and the timeline <prefix>.timeline.svg.
 * sf_model_destroy() calls it when steps were traced since the last call, so
 * sf_model_destroy() is collective while tracing. Without SHARDFLOW_TRACE it does
 * nothing and returns SF_OK.
 */
SF_API int sf_model_trace_write(sf_model *m);

/**
 * A metrics file is JSON lines, one object a line: a training step
 * {"step": s, "loss": x, ..., "tokens_per_s": r} or an evaluation
 * {"kind": "eval", "step": s, "val_loss": v}, a non-finite loss written null
 * (docs/gpt.md lists examples/gpt's fields). sf_metrics_continue() readies `path` for
 * a run that goes on from step `step` (0: a fresh run): it keeps the longest run of
 * whole lines, from the start, that parse as objects of steps up to `step`, and cuts
 * the rest (lines of steps to be trained again, a line torn by a crash), creating the
 * file if absent. The program then appends a line at a time (one write each). Not
 * collective; SF_OK or SF_ERR_IO.
 */
SF_API int sf_metrics_continue(const char *path, int64_t step);

/**
 * Draws a metrics file as SVG at `svg` (written to svg.tmp, then renamed): the
 * training and validation loss and the tokens/s against the step, non-finite losses
 * skipped and counted in the legend; a file of no step or one still gives a picture.
 * A malformed line (not a JSON object; no integer "step"; a training line without
 * "loss", an evaluation without "val_loss") is SF_ERR_INVALID with a message naming
 * the file and the line number; a last line with no newline that does not parse (a
 * write under way) is left out. Not collective.
 */
SF_API int sf_metrics_plot(const char *metrics, const char *svg);

/**
 * Forward pass only (no loss, no backward, no update): writes this rank's logits
 * (rows, classes) — the input of the graph's loss — into `logits`
 * (sf_model_local_rows() rows: whole samples, also under SHARDFLOW_CP, where the K ranks
 * of a CP group return the same rows, gathered from their chunks). Labels are ignored
 * (may be NULL). Collective: every
 * rank calls it for the same number of batches. Waits for the result.
 */
SF_API int sf_model_predict(sf_model *m, const struct sf_batch *batch, float *logits);

/**
 * Collective, no labels, no loss, no update: the output of node `node` (its name in
 * the graph: a layer or a float input) for `samples` samples, any number, given whole
 * in x on every rank (x's inputs hold samples x T rows; labels are not read), written
 * whole into out on every rank (n = samples x T x the node's width floats, in sample
 * order). The samples run in passes of the model's batch, split over the ranks as a
 * training batch is (the last pass padded with zeros, which nothing returns); each
 * pass's inputs are checked and agreed across ranks as a step's are. Waits for the
 * submitted steps first. A node whose activation SHARDFLOW_RECOMPUTE=units shares is
 * refused (SF_ERR_STATE); an unknown name is SF_ERR_NOT_FOUND.
 */
SF_API int sf_model_forward(sf_model *m, const char *node, const struct sf_batch *x, int samples,
                            float *out, size_t n);

/**
 * Collective: the mean loss over every row of `samples` samples given whole in x on
 * every rank (labels required; any number of samples, in passes as sf_model_forward),
 * the same value on every rank: the graph's loss as the loss task computes it, each
 * row's softmax cross-entropy (log-sum-exp in double; rows labelled with the ignore
 * index left out) or each element's regression loss of sf_graph_loss (MSE, L1,
 * Huber, against the batch's targets), summed in double. No update; the program needs
 * no MPI call. Waits for the submitted steps first.
 */
SF_API int sf_model_evaluate(sf_model *m, const struct sf_batch *x, int samples, double *loss);

/* ------------------------------------------------------------------------ */
/* Datasets: IDX files (MNIST, Fashion-MNIST), gzip or plain                 */
/* ------------------------------------------------------------------------ */

/** Images and labels read from a pair of IDX files. */
struct sf_dataset {
	int64_t n;       /**< samples */
	int rows, cols;  /**< image size (28 x 28 for Fashion-MNIST) */
	int dim;         /**< rows * cols: width of a sample */
	int classes;     /**< 1 + the largest label */
	float *images;   /**< (n, dim), pixels / 255, owned: sf_dataset_free() */
	int32_t *labels; /**< (n) */
};

/**
 * Reads an IDX image file (magic 0x00000803, uint8 n x rows x cols) and an IDX label
 * file (magic 0x00000801, uint8 n), gzip-compressed or not. Magic numbers,
 * dimensions, lengths and the agreement of the two counts are checked; any problem
 * is an error naming the file and what is wrong (SF_ERR_IO), never a short read.
 * On success *out owns its arrays; release with sf_dataset_free().
 */
SF_API int sf_dataset_load_idx(const char *images_path, const char *labels_path,
                               struct sf_dataset *out);
/** Frees the arrays of a dataset (NULL or an empty struct is accepted). */
SF_API int sf_dataset_free(struct sf_dataset *ds);

/**
 * Copies rows [first, first + rows) of global batch `batch` of `epoch` into x
 * (rows, dim) and y (rows). The order of each epoch is a permutation of the
 * samples drawn from (seed, epoch) alone, so every world size sees the same global
 * batches and each rank takes its slice. An epoch has n / global_batch batches (the
 * remainder is dropped).
 */
SF_API int sf_dataset_batch(const struct sf_dataset *ds, uint64_t seed, int64_t epoch,
                            int64_t batch, int global_batch, int first, int rows, float *x,
                            int32_t *y);

/* ------------------------------------------------------------------------ */
/* Datasets: text, byte by byte (a language model's corpus)                  */
/* ------------------------------------------------------------------------ */

/** The largest text file sf_text_load() reads: 2 GiB. */
#define SF_TEXT_MAX_BYTES ((int64_t)1 << 31)

/** The bytes of a text file: a training head and a held-out validation tail. */
struct sf_text {
	int64_t n;         /**< bytes */
	uint8_t *bytes;    /**< (n), owned: sf_text_free() */
	int64_t train_end; /**< [0, train_end) training, [train_end, n) validation */
	char *path;        /**< the file it was read from (owned; named in messages) */
};

/** The two parts of a text, for sf_text_batch(). */
enum sf_text_split {
	SF_TEXT_TRAIN = 0, /**< bytes [0, train_end) */
	SF_TEXT_VAL = 1    /**< bytes [train_end, n) */
};

/**
 * Reads a whole file as bytes (any content: a byte-level model has 256 tokens, so
 * UTF-8 is simply its bytes) and holds out its last floor(n * val_fraction) bytes for
 * validation: 0 <= val_fraction < 1 (0: no validation part). The file must be a
 * regular, readable, non-empty file of at most SF_TEXT_MAX_BYTES; a missing,
 * unreadable (a directory, no permission, a device), empty or larger file is
 * SF_ERR_IO with a message naming the file and what is wrong, a bad argument
 * SF_ERR_INVALID; *out is then zeroed. On success *out owns its bytes: release them
 * with sf_text_free().
 */
SF_API int sf_text_load(const char *path, double val_fraction, struct sf_text *out);
/** Frees a text's bytes and path (NULL or an empty struct is accepted). */
SF_API int sf_text_free(struct sf_text *t);

/**
 * Rows [first, first + rows) of global batch `index` of a split (enum sf_text_split):
 * row r is a window of T + 1 bytes starting at o_r, and
 *   x[r * T + t] = bytes[o_r + t],  y[r * T + t] = bytes[o_r + t + 1]  (t < T),
 * so y is x shifted by one (the next byte to predict). Windows lie entirely inside
 * their split; o_r is uniform over the split's (length - T) starts, drawn from (seed,
 * split, index, first + r) alone: every world size sees the same global batches and
 * each rank copies its rows. Batches are independent draws (no epochs): index is
 * usually the step. A split shorter than T + 1 bytes is SF_ERR_INVALID with a message
 * naming the file, the split's length and what T needs; so are bad arguments.
 */
SF_API int sf_text_batch(const struct sf_text *t, int split, uint64_t seed, int64_t index,
                         int global_batch, int first, int rows, int T, int32_t *x, int32_t *y);

/* ------------------------------------------------------------------------ */
/* Datasets: token files (BPE ids, as nanoGPT and llm.c write them)          */
/* ------------------------------------------------------------------------ */

/** The formats sf_tokens_load() reads. */
enum sf_tokens_format {
	SF_TOKENS_AUTO = 0, /**< an llm.c shard when the file starts with its magic, else raw;
	                         one that looks like a damaged shard (even, at least a header
	                         long, and its first int32 within 2^16 of the magic, or its
	                         header counting the ids after it, or version 1 then zeros)
	                         is refused: force _RAW or _LLMC for it */
	SF_TOKENS_RAW,      /**< nanoGPT's train.bin / val.bin: little-endian uint16 ids */
	SF_TOKENS_LLMC,     /**< llm.c's shards: 256 little-endian int32 (magic 20240520,
	                         version 1, the token count, then zeros), then the uint16 ids */
	SF_TOKENS_COUNT     /**< the number of values above; not a value */
};

/** The most tokens sf_tokens_load() reads: 2^30 (2 GiB of uint16). */
#define SF_TOKENS_MAX ((int64_t)1 << 30)

/** A split's token ids (a file each: train.bin, val.bin, or one shard). */
struct sf_tokens {
	int64_t n;     /**< tokens */
	uint16_t *ids; /**< (n), owned: sf_tokens_free() */
	int vocab;     /**< every id is below it (checked at load) */
	int format;    /**< enum sf_tokens_format read: SF_TOKENS_RAW or SF_TOKENS_LLMC */
	char *path;    /**< the file (owned; named in messages) */
};

/**
 * Reads a token file whole and checks it: a raw file of an odd size, an llm.c shard
 * whose magic, version or count does not match its size, or an id >= vocab (its
 * position and value named) is SF_ERR_INVALID; the file errors of sf_text_load()
 * (missing, a directory, a device, empty, larger than SF_TOKENS_MAX tokens) are
 * SF_ERR_IO; every message names the file. 2 <= vocab <= 65536. *out is zeroed on
 * failure; on success release it with sf_tokens_free().
 */
SF_API int sf_tokens_load(const char *path, int vocab, int format, struct sf_tokens *out);
/** Frees a token split's ids and path (NULL or an empty struct is accepted). */
SF_API int sf_tokens_free(struct sf_tokens *t);
/**
 * Rows [first, first + rows) of global batch `index`, as sf_text_batch() draws them
 * from bytes: row r is the window of T + 1 ids at o_r, x its first T, y its last T;
 * o_r is uniform over the n - T starts, drawn from (seed, split, index, first + r)
 * alone (split: SF_TEXT_TRAIN or SF_TEXT_VAL, so a validation file draws another
 * stream than the training one). A file shorter than T + 1 tokens is SF_ERR_INVALID
 * naming it.
 */
SF_API int sf_tokens_batch(const struct sf_tokens *t, int split, uint64_t seed, int64_t index,
                           int global_batch, int first, int rows, int T, int32_t *x,
                           int32_t *y);

/**
 * A decode table: the bytes of every token id, to print what a model trained on token
 * files writes. The file is llm.c's tokenizer format (gpt2_tokenizer.bin; what
 * scripts/install-deps.sh writes as gpt2-vocab.bin with tiktoken's GPT-2 encoding):
 * 256 little-endian uint32 (magic 20240328, version 1 or 2, the vocabulary size, and
 * for version 2 the end-of-text id), then per id a length byte (1 to 255) and that
 * many bytes. Decoding only: the ids are concatenated bytes, so a decoded stream is
 * the text a BPE encoded, byte for byte (a UTF-8 character may span two ids).
 */
struct sf_vocab {
	int n;            /**< ids: 0 .. n - 1 */
	int eot;          /**< the end-of-text id (version 2), else -1 */
	uint8_t *bytes;   /**< every id's bytes, concatenated (owned) */
	uint32_t *offset; /**< (n + 1): id i is bytes[offset[i] .. offset[i + 1]) (owned) */
	char *path;       /**< the file (owned; named in messages) */
};

/**
 * Reads a decode table and checks it: a wrong magic or version, a size below 2 or
 * above 65536, a zero length, a truncated or padded file is SF_ERR_INVALID naming the
 * file and what was wrong; the file errors of sf_text_load() are SF_ERR_IO. *out is
 * zeroed on failure; on success release it with sf_vocab_free().
 */
SF_API int sf_vocab_load(const char *path, struct sf_vocab *out);
/** Frees a decode table (NULL or an empty struct is accepted). */
SF_API int sf_vocab_free(struct sf_vocab *v);
/**
 * The bytes of ids[0 .. n) into buf (at most cap bytes, not NUL-terminated); *len
 * (may be NULL) gets the bytes they make, which may exceed cap (then buf holds the
 * first cap). An id outside [0, v->n) is SF_ERR_INVALID naming it and its position.
 */
SF_API int sf_vocab_decode(const struct sf_vocab *v, const int32_t *ids, int64_t n, char *buf,
                           size_t cap, size_t *len);
/**
 * GPT-2's byte-level BPE: the ids of text[0 .. len) into ids (at most cap; *count gets
 * how many the text makes, which may exceed cap), with a decode table whose ids are
 * the merge ranks (GPT-2's, as tools/gpt2-tokens.cjs writes it from tiktoken): the
 * text cut by GPT-2's pattern ('s 't 're 've 'm 'll 'd, ` ?` letters, ` ?` numbers,
 * ` ?` other, whitespace), each piece merged from its bytes by the lowest id first.
 * Letters and numbers are the C.UTF-8 locale's classes (close to Unicode's); the end of
 * text id is never produced. A table without a token for every byte is SF_ERR_INVALID.
 */
SF_API int sf_vocab_encode(const struct sf_vocab *v, const char *text, size_t len,
                           int32_t *ids, int64_t cap, int64_t *count);

/* ------------------------------------------------------------------------ */
/* Checkpoints                                                               */
/* ------------------------------------------------------------------------ */

/** What a checkpoint records beside the model (the caller's training position). */
struct sf_checkpoint_info {
	int64_t step;       /**< steps done (the model's own count is saved too) */
	int64_t epoch;      /**< data order: epoch ... */
	int64_t batch;      /**< ... and the index of the next batch within it (a position in
	                         the data order, not a batch size; the manifest's "batch") */
	uint64_t data_seed; /**< seed of the data order */
};

/** How a model uses a checkpoint directory (sf_checkpoint_lock()). */
enum sf_checkpoint_access {
	SF_CHECKPOINT_WRITE = 0, /**< it saves there: one job at a time (an exclusive lock) */
	SF_CHECKPOINT_READ = 1,  /**< it only loads: readers share it, never with a writer */
};

/**
 * Collective: locks the checkpoint directory `dir` for this model until
 * sf_model_destroy() (or the process's end): rank 0 holds flock(2) on dir/.lock,
 * exclusively for SF_CHECKPOINT_WRITE (recording its pid and host; `dir` is created
 * if needed), shared for SF_CHECKPOINT_READ (given a step directory, on the checkpoint
 * directory above it; a directory that does not exist is not locked). Nothing waits:
 * a lock another job holds — a writer, or for a writer also a reader — is SF_ERR_BUSY
 * at once on every rank, its message naming the directory and the holder's pid and
 * host. sf_checkpoint_save() locks its directory for writing, and sf_checkpoint_load()
 * and sf_checkpoint_latest() theirs for reading, unless the model holds it already; a
 * program calls this to be refused before it trains (a training job locks its
 * directory for writing at start, resuming or not) or to say that it only reads. A
 * model may lock several directories, each held once (locking again is a no-op; a
 * shared lock wanted for writing is converted, SF_ERR_BUSY when another reader holds
 * it); all are released at destroy. Only rank 0 holds the locks: on a network file
 * system they protect as far as its flock(2) does.
 */
SF_API int sf_checkpoint_lock(sf_model *m, const char *dir, enum sf_checkpoint_access access);

/**
 * Collective: writes a sharded checkpoint of the model under `dir` (created if
 * needed) as dir/step-<step>/: every rank writes its shard of every unit's parameters
 * and optimizer state to rank-<r>.bin, then rank 0 writes the manifest (world size,
 * sharding, optimizer, model structure hash, step, `info`, per-file size and CRC-32)
 * with its own CRC-32 in manifest.crc32, and points dir/latest at the step.
 *
 * Crash-safe, re-saves included: the step is written into a fresh staging directory
 * dir/step-<step>.tmp (each file to a temporary name, fsync'ed, renamed, the manifest
 * last), which is renamed to step-<step> only when complete — a step-<step> already
 * there (which latest may name) is first renamed aside and removed only after the
 * switch. A process killed at any moment leaves a checkpoint sf_checkpoint_load(dir)
 * loads: the previous one, or the new one when its manifest was written.
 *
 * The model's first save into `dir` locks it for writing until sf_model_destroy() (see
 * sf_checkpoint_lock()): while another job holds it, the save is SF_ERR_BUSY, with a
 * message naming the directory and the holder, and writes nothing. info->step, epoch
 * and batch must lie in 0..2^53-1. (info may be NULL: step = the model's step count,
 * the rest 0.)
 */
SF_API int sf_checkpoint_save(sf_model *m, const char *dir, const struct sf_checkpoint_info *info);

/**
 * Collective: sf_checkpoint_save() in the background. At the step boundary (now) every
 * rank copies what its file holds into host buffers (allocated at the model's first
 * asynchronous save and kept for the next; the size of its rank file) and rank 0
 * makes the staging directory; a thread per writing rank then writes and commits the
 * file while the caller trains on. The save ends — manifest, switch, latest, in the
 * order and with the crash safety of sf_checkpoint_save() — at the first
 * sf_checkpoint_poll() that finds every rank's file written, or at
 * sf_checkpoint_wait(). The files are bitwise those sf_checkpoint_save() would write
 * now. One save at a time: a save, load or prune (synchronous or not) waits for the
 * pending one first. Errors here are those of the snapshot and of
 * sf_checkpoint_save()'s checks; a failed write is the status of the poll or wait
 * that ends the save. A model destroyed with a save pending abandons it (a warning;
 * its staging directory has no manifest, so loads take the previous step).
 */
SF_API int sf_checkpoint_save_async(sf_model *m, const char *dir,
                                    const struct sf_checkpoint_info *info);

/**
 * Collective, for every step boundary: ends the pending asynchronous save when every
 * rank's writer has finished, else returns at once (one small all-reduce). *pending
 * (may be NULL): 1 while the save is still being written, else 0 (none pending, or
 * ended by this call). The status is the write's or the publication's when the save
 * failed (the same on every rank; the save is then over, its step not written).
 */
SF_API int sf_checkpoint_poll(sf_model *m, int *pending);

/**
 * Collective: waits for the pending asynchronous save and ends it (see
 * sf_checkpoint_poll()); SF_OK at once when none is pending. Call it before the model
 * is destroyed, or the save is abandoned.
 */
SF_API int sf_checkpoint_wait(sf_model *m);

/**
 * Collective: which checkpoint sf_checkpoint_load(m, dir, ...) tries first (it falls
 * back to an older step when that one fails its checks). *found = 1
 * and `path` (`size` bytes; may be NULL) receives its step directory; *found = 0 (and
 * path "") when `dir` holds no checkpoint yet — it does not exist, is empty, or holds
 * only a save killed before its manifest — which is not an error: start from scratch.
 * Every rank gets rank 0's answer. Locks `dir` for reading like sf_checkpoint_load().
 * Errors: an unreadable directory, a damaged latest with no complete step
 * (SF_ERR_IO; with one, that step, and a warning), a path that does not fit,
 * SF_ERR_BUSY.
 */
SF_API int sf_checkpoint_latest(sf_model *m, const char *dir, int *found, char *path, size_t size);

/**
 * Collective: retention, as torchtitan's keep_latest_k: removes dir's checkpoints but
 * the newest `keep` (>= 1) and the one dir/latest names. Each step's manifest goes
 * first, so a prune killed half-way leaves no step a loader would take half (a step
 * without its manifest is no checkpoint: sf_checkpoint_load skips it); a save's
 * staging directory (step-N.tmp) is left alone. Locks dir for writing as
 * sf_checkpoint_save does (SF_ERR_BUSY while another job holds it). *removed (may be
 * NULL): how many steps went, on rank 0 (0 on the other ranks). keep < 1 is
 * SF_ERR_INVALID; an unreadable directory SF_ERR_IO; the status is the same on every
 * rank.
 */
SF_API int sf_checkpoint_prune(sf_model *m, const char *dir, int keep, int *removed);

/**
 * Collective: loads a checkpoint into the model: `dir` itself when it is a step
 * directory holding a manifest, else the step an intact dir/latest names, else — any
 * damage to latest: missing, a directory, empty, garbage, naming a step without a
 * manifest as a save killed before its switch leaves it — the newest complete step
 * directory (a warning names the damage). Parameters, optimizer state
 * and step count are restored whatever world size and sharding saved it (resharding
 * N -> M). The manifest's CRC-32, its fields (counts in 0..2^53-1), structure hash,
 * the files' sizes and checksums are verified before anything of the model is
 * touched: a corrupted, truncated, mismatched or half-written checkpoint is refused
 * (SF_ERR_IO / SF_ERR_INVALID) and the model is unchanged. Given a checkpoint
 * directory, a step that fails these checks as damaged (SF_ERR_IO: a manifest that
 * does not parse or match its CRC-32 or whose counters disagree — info.step against
 * model_steps where the manifest says how they relate — a rank file missing,
 * truncated or corrupted)
 * makes the load try the next older complete step, with a warning naming what was
 * wrong; it is refused only when no step is valid, its message listing each step's
 * fault. Another model's checkpoint (SF_ERR_INVALID) is refused at once, and a step
 * directory given as `dir` loads that step or nothing. A directory holding no
 * checkpoint gives SF_ERR_NOT_FOUND (see sf_checkpoint_latest()). Checkpoints of
 * format version 1 (no manifest.crc32) still load, their fields range-checked.
 * Locks the checkpoint directory for reading when the model holds no lock on it yet
 * (see sf_checkpoint_lock(); SF_ERR_BUSY while a writer holds it). `info` (may be
 * NULL) receives what was saved.
 */
SF_API int sf_checkpoint_load(sf_model *m, const char *dir, struct sf_checkpoint_info *info);

/**
 * Collective: rank 0 writes every parameter to a safetensors file (F32; a linear
 * layer "fc1" gives "fc1.weight" (O, I) and "fc1.bias" (O); other layer types
 * "<name>.params" (P)), written to a temporary name and renamed.
 */
SF_API int sf_model_export_safetensors(sf_model *m, const char *path);

/**
 * Collective: every rank reads the parameters of a safetensors file written by
 * sf_model_export_safetensors() (or any file with the same names, F32 dtype and
 * shapes), on any world size. Optimizer state and the step count are reset (AdamW
 * starts its bias correction anew; older loss tickets become invalid). A missing tensor, another
 * dtype or shape, or a malformed file is refused and the model is unchanged.
 */
SF_API int sf_model_import_safetensors(sf_model *m, const char *path);

/** sf_model_export_safetensors() in layout *l (NULL: the model's own): the tensors it
 *  names written transposed, their shapes in the header too. */
SF_API int sf_model_export_safetensors_layout(sf_model *m, const char *path,
                                              const struct sf_safetensors_layout *l);
/** sf_model_import_safetensors() of a file in layout *l (NULL: the model's own): the
 *  tensors it names are read with their shapes transposed and turned back. */
SF_API int sf_model_import_safetensors_layout(sf_model *m, const char *path,
                                              const struct sf_safetensors_layout *l);

/**
 * Collective: every rank reads the parameters of a Hugging Face model directory dir:
 * "model.safetensors", or "model.safetensors.index.json" and the shard files its
 * "weight_map" names (tensor -> file in dir), in layout *l (NULL: the model's own;
 * transposed tensors are turned back on load). Every tensor of the model must be in
 * its file, F32, with its shape: the first one missing or of another shape is refused
 * naming it and the file, as is a weight_map entry the model lacks. All or nothing, as
 * sf_model_import_safetensors() (whose notes hold); config.json is not read here
 * (sf_gpt_config_check_hf, sf_llama_config_check_hf).
 */
SF_API int sf_model_import_hf(sf_model *m, const char *dir,
                              const struct sf_safetensors_layout *l);

/** Writes n bytes of data to path whole or not at all: path.tmp written and synced,
 *  renamed to path, its directory synced. SF_ERR_IO naming the file. */
SF_API int sf_file_write_atomic(const char *path, const void *data, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* SHARDFLOW_H */
