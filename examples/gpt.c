/*
 * gpt.c — the main job: a GPT (sf_gpt_graph: one FSDP unit per transformer block)
 * trained on bytes of English text over the MPI ranks, with AdamW, warmup and cosine
 * decay, validation on the held-out tail of the text, checkpoints that resume
 * bitwise, and text generated from a prompt at the end.
 *
 *   mpirun -np 2 examples/gpt                       (Jane Austen's novels)
 *   mpirun -np 2 examples/gpt --text FILE           (any text)
 *
 * Every rank loads the text; global batch s is a set of windows of T+1 bytes drawn from
 * (seed, s) alone, so 1 and N ranks train on the same batches, each rank its rows.
 * Rank 0 prints (stable formats, parsed by tests/gpt.sh):
 *
 *   step <s>/<S> loss <mean since last line> lr <lr> tokens/s <x> eta <t>  (and the last)
 *   step <s> val_loss <x> train_loss <mean since last evaluation> time <seconds>
 *   val_loss <x>                             (after the last step)
 *   then "sample <i>:" and the generated text of each sample
 *
 * Exit status: 0 success, 1 an error (data, library, checkpoint), 2 a bad command line.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shardflow.h"
#include "examples/cli.h"
#include "examples/job.h"
#include "examples/metrics.h"

/* examples/gpt, and the installed trainer shardflow-train (Makefile.am builds both
 * from this file) */
#ifndef PROG
#define PROG "gpt"
#endif
#ifndef SF_DATA_DIR
#define SF_DATA_DIR "/opt/shardflow-data"
#endif
#define SF_DEFAULT_TEXT SF_DATA_DIR "/austen.txt"

struct options {
	struct sf_gpt_config model; /* the shape; --arch llama maps it onto llama below */
	int arch;                   /* 0: gpt (sf_gpt_graph), 1: llama (sf_llama_graph) */
	int kv_heads, ffn_dim, tied;
	float rope_theta;
	const char *train_tokens, *val_tokens; /* token files instead of --text */
	const char *vocab_file;                /* their decode table, to print samples */
	int token_format;                      /* --token-format: SF_TOKENS_AUTO, ... */
	int vocab_set;                         /* --vocab was given */
	const char *preset;
	int batch, eval_batches, sample, gen_tokens, top_k;
	float lr, min_lr, weight_decay, temperature, val_fraction, grad_clip, peak_tflops;
	int64_t steps, warmup, eval_every, progress_every, ckpt_every, ckpt_keep, max_steps;
	uint64_t seed;
	const char *text, *prompt, *ckpt_dir, *export_path, *init_path, *export_init_path,
	    *loss_log;
	const char *metrics; /* --metrics: JSON lines, rank 0 */
	int resume, ckpt_async;
	int nanogpt_layout; /* --export-layout nanogpt: GPT-2's weights (O, I) */
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: " PROG " [options]\n"
	        "Trains a GPT on the bytes of a text (or on token files) with AdamW, one FSDP\n"
	        "unit per block, sharded over the MPI ranks, then generates text.\n"
	        "job file:\n"
	        "  --job FILE            read options from FILE, JSON with the sections below\n"
	        "                        (\"preset\": NAME, \"model\": {\"layers\": 12, ...}, ...,\n"
	        "                        \"shardflow\": {SHARDFLOW_* settings}); the command\n"
	        "                        line's options override the file's, the environment's\n"
	        "                        SHARDFLOW_* its settings (docs/training.md, \"Job files\")\n"
	        "preset:\n"
	        "  --preset NAME         a model and data of known size, on GPT-2 tokens of\n"
	        "                        Jane Austen's novels (the files install-deps.sh\n"
	        "                        makes); the other options override its values:\n"
	        "                        gpt2: GPT-2 124M (12 layers, 12 heads, embd 768,\n"
	        "                        context 1024, vocab 50257, tied head);\n"
	        "                        llama-100m: a Llama of 101.5M (10 layers, 12 heads on\n"
	        "                        4 kv heads, dim 768, FFN 2048, context 1024, vocab\n"
	        "                        50257, tied head); both with batch 4, lr 6e-4, weight\n"
	        "                        decay 0.1, --grad-clip 1, a progress line a step,\n"
	        "                        validation every 100 steps on 2 batches, 1 sample of\n"
	        "                        32 tokens\n"
	        "model:\n"
	        "  --arch A              gpt (sf_gpt_graph: GPT-2, nanoGPT's names) or llama\n"
	        "                        (sf_llama_graph: RMSNorm, RoPE, grouped-query\n"
	        "                        attention, SwiGLU; Hugging Face's names) (default gpt)\n"
	        "  --layers N            transformer blocks (default 4)\n"
	        "  --heads N             attention heads (default 4)\n"
	        "  --embd C              embedding width, a multiple of --heads (default 128)\n"
	        "  --context T           sequence length (default 128)\n"
	        "  --untied              gpt (and --preset llama-100m): lm_head gets its own\n"
	        "                        weights (default: tied to wte)\n"
	        "  --tied                llama: lm_head reuses embed_tokens (default: untied)\n"
	        "  --kv-heads N          llama: key/value heads, dividing --heads (default\n"
	        "                        heads / 2 when even, else heads)\n"
	        "  --ffn-dim N           llama: the MLP's width (default Llama's rule: 2/3 of\n"
	        "                        4 embd, up to a multiple of 32)\n"
	        "  --rope-theta X        llama: the rotary embedding's base (default 10000)\n"
	        "training:\n"
	        "  --batch B             global sequences per step, split over the ranks\n"
	        "                        (default 16)\n"
	        "  --steps N             optimizer steps (default 4000)\n"
	        "  --lr X                peak learning rate (default 0.002)\n"
	        "  --min-lr X            final learning rate of the cosine (default lr / 10)\n"
	        "  --warmup N            linear warmup steps (default 100)\n"
	        "  --weight-decay X      AdamW decoupled weight decay, not on biases, layernorms\n"
	        "                        and embeddings (default 0.01)\n"
	        "  --grad-clip X         clip the gradient's global norm to X, 0 for none\n"
	        "                        (default 0; nanoGPT uses 1.0)\n"
	        "  SHARDFLOW_GRAD_ACCUM=K  K micro-batches of --batch sequences a step\n"
	        "                        (default 1; SHARDFLOW_ACCUM_MODE: README)\n"
	        "  --seed S              initialisation, data and sampling seed (default 1)\n"
	        "data:\n"
	        "  --text FILE           the text (default " SF_DEFAULT_TEXT ",\n"
	        "                        made by scripts/install-deps.sh)\n"
	        "  --val-fraction X      the tail held out for validation (default 0.1)\n"
	        "  --train-tokens FILE   train on a token file instead (nanoGPT's uint16 .bin or\n"
	        "                        an llm.c shard), with --val-tokens FILE for validation\n"
	        "  --token-format F      the token files' format: auto (an llm.c shard when it\n"
	        "                        starts with the magic, raw when nothing says shard;\n"
	        "                        a damaged shard is refused), raw, llmc (default auto)\n"
	        "  --vocab-file FILE     the token files' decode table (llm.c's tokenizer file,\n"
	        "                        e.g. " SF_DATA_DIR "/gpt2-vocab.bin), to print\n"
	        "                        samples; its size is the default --vocab\n"
	        "  --vocab V             token ids of the token files are below V (default the\n"
	        "                        decode table's size, else 256; with --text, 256: bytes)\n"
	        "  --eval-every K        validation loss every K steps (default 250)\n"
	        "  --eval-batches N      batches per validation (default 8)\n"
	        "  --progress-every K    a progress line every K steps (default 25): step, loss,\n"
	        "                        lr, tokens/s, the model's TFLOP/s (nanoGPT's 6N +\n"
	        "                        12LCT a token), rank 0's memory, time, eta\n"
	        "  --peak-tflops X       a rank's peak TFLOP/s: the lines give MFU against the\n"
	        "                        ranks' sum (default: no MFU)\n"
	        "checkpoints and weights:\n"
	        "  --checkpoint-dir D    write sharded checkpoints under D\n"
	        "  --checkpoint-every K  ... every K steps (default: at the end only)\n"
	        "  --checkpoint-keep N   keep the newest N checkpoints, removing older ones\n"
	        "                        after each save (default: keep all)\n"
	        "  --checkpoint-async    write checkpoints from a thread while training goes on\n"
	        "                        (the shards copied to host buffers at the step)\n"
	        "  --resume              continue from D's last checkpoint (none: start afresh)\n"
	        "  --max-steps N         stop after N steps in all (counting resumed ones)\n"
	        "  --export FILE         write the final weights as safetensors (Hugging Face's\n"
	        "                        names) and config.json beside it\n"
	        "  --export-layout L     hf: GPT-2's weights as GPT2LMHeadModel's Conv1D keeps\n"
	        "                        them, (in, out); nanogpt: nanoGPT's (out, in); for\n"
	        "                        --export, --export-init and --init FILE (default hf;\n"
	        "                        llama has one layout, Hugging Face's)\n"
	        "  --init PATH           start from these safetensors weights: a file, or a\n"
	        "                        Hugging Face model directory (config.json checked\n"
	        "                        against the model; model.safetensors, or\n"
	        "                        model.safetensors.index.json and its shards)\n"
	        "  --export-init FILE    write the weights before the first step (the starting\n"
	        "                        point of bench/gpt_torch.sh's PyTorch twin)\n"
	        "  --loss-log FILE       write every step's loss, \"<step> <loss>\" with 9\n"
	        "                        digits, one line a step\n"
	        "  --metrics FILE        write every step's figures as a JSON object a line\n"
	        "                        (continued on --resume), and FILE.svg, the loss and\n"
	        "                        tokens/s curves, at each checkpoint and at the end\n"
	        "                        (shardflow-plot FILE draws it on demand)\n"
	        "generation (after training):\n"
	        "  --prompt TEXT         the start of every sample (default \"\\n\"; token files:\n"
	        "                        GPT-2's BPE of TEXT with --vocab-file's ids, default\n"
	        "                        the end-of-text id)\n"
	        "  --sample N            samples to print, 0 for none (default 2, at most the\n"
	        "                        batch)\n"
	        "  --tokens N            bytes (or tokens) to generate per sample (default 300)\n"
	        "  --temperature X       softmax temperature (default 0.8)\n"
	        "  --top-k K             sample among the K likeliest bytes, 0 for all\n"
	        "                        (default 40)\n"
	        "  --help                this text\n");
}

enum opt_key {
	OPT_LAYERS,
	OPT_HEADS,
	OPT_EMBD,
	OPT_CONTEXT,
	OPT_BATCH,
	OPT_STEPS,
	OPT_LR,
	OPT_MIN_LR,
	OPT_WARMUP,
	OPT_WEIGHT_DECAY,
	OPT_GRAD_CLIP,
	OPT_SEED,
	OPT_TEXT,
	OPT_VAL_FRACTION,
	OPT_EVAL_EVERY,
	OPT_EVAL_BATCHES,
	OPT_PROGRESS_EVERY,
	OPT_CHECKPOINT_DIR,
	OPT_CHECKPOINT_EVERY,
	OPT_CHECKPOINT_KEEP,
	OPT_MAX_STEPS,
	OPT_EXPORT,
	OPT_INIT,
	OPT_EXPORT_INIT,
	OPT_LOSS_LOG,
	OPT_METRICS,
	OPT_PROMPT,
	OPT_SAMPLE,
	OPT_TOKENS,
	OPT_TEMPERATURE,
	OPT_TOP_K,
	OPT_ARCH,
	OPT_KV_HEADS,
	OPT_FFN_DIM,
	OPT_ROPE_THETA,
	OPT_TRAIN_TOKENS,
	OPT_VAL_TOKENS,
	OPT_VOCAB,
	OPT_VOCAB_FILE,
	OPT_PRESET,
	OPT_PEAK_TFLOPS,
	OPT_EXPORT_LAYOUT,
	OPT_TOKEN_FORMAT,
	NOPTIONS
};

static const char *const option_names[NOPTIONS] = {
    [OPT_LAYERS] = "--layers",
    [OPT_HEADS] = "--heads",
    [OPT_EMBD] = "--embd",
    [OPT_CONTEXT] = "--context",
    [OPT_BATCH] = "--batch",
    [OPT_STEPS] = "--steps",
    [OPT_LR] = "--lr",
    [OPT_MIN_LR] = "--min-lr",
    [OPT_WARMUP] = "--warmup",
    [OPT_WEIGHT_DECAY] = "--weight-decay",
    [OPT_GRAD_CLIP] = "--grad-clip",
    [OPT_SEED] = "--seed",
    [OPT_TEXT] = "--text",
    [OPT_VAL_FRACTION] = "--val-fraction",
    [OPT_EVAL_EVERY] = "--eval-every",
    [OPT_EVAL_BATCHES] = "--eval-batches",
    [OPT_PROGRESS_EVERY] = "--progress-every",
    [OPT_CHECKPOINT_DIR] = "--checkpoint-dir",
    [OPT_CHECKPOINT_EVERY] = "--checkpoint-every",
    [OPT_CHECKPOINT_KEEP] = "--checkpoint-keep",
    [OPT_MAX_STEPS] = "--max-steps",
    [OPT_EXPORT] = "--export",
    [OPT_INIT] = "--init",
    [OPT_EXPORT_INIT] = "--export-init",
    [OPT_LOSS_LOG] = "--loss-log",
    [OPT_METRICS] = "--metrics",
    [OPT_PROMPT] = "--prompt",
    [OPT_SAMPLE] = "--sample",
    [OPT_TOKENS] = "--tokens",
    [OPT_TEMPERATURE] = "--temperature",
    [OPT_TOP_K] = "--top-k",
    [OPT_ARCH] = "--arch",
    [OPT_KV_HEADS] = "--kv-heads",
    [OPT_FFN_DIM] = "--ffn-dim",
    [OPT_ROPE_THETA] = "--rope-theta",
    [OPT_TRAIN_TOKENS] = "--train-tokens",
    [OPT_VAL_TOKENS] = "--val-tokens",
    [OPT_VOCAB] = "--vocab",
    [OPT_VOCAB_FILE] = "--vocab-file",
    [OPT_PRESET] = "--preset",
    [OPT_PEAK_TFLOPS] = "--peak-tflops",
    [OPT_EXPORT_LAYOUT] = "--export-layout",
    [OPT_TOKEN_FORMAT] = "--token-format",
};

enum { NFLAGS = 4 };
static const char *const flags[NFLAGS] = {"--resume", "--untied", "--tied", "--checkpoint-async"};

/* The job file's sections (examples/job.h), as the usage groups the options: every
 * option and flag in one of them (check_sections) */
static const char *const model_options[] = {"--arch",  "--layers",   "--heads",
                                            "--embd",  "--context",  "--untied",
                                            "--tied",  "--kv-heads", "--ffn-dim",
                                            "--rope-theta", NULL};
static const char *const training_options[] = {"--batch",        "--steps",     "--lr",
                                               "--min-lr",       "--warmup",    "--weight-decay",
                                               "--grad-clip",    "--seed",      NULL};
static const char *const data_options[] = {"--text",         "--val-fraction",   "--train-tokens",
                                           "--val-tokens",   "--vocab-file",     "--vocab",
                                           "--eval-every",   "--eval-batches",   "--progress-every",
                                           "--peak-tflops",  "--token-format", NULL};
static const char *const checkpoint_options[] = {"--checkpoint-dir", "--checkpoint-every",
                                                 "--checkpoint-keep", "--resume",
                                                 "--checkpoint-async",
                                                 "--max-steps",       "--export",
                                                 "--init",            "--export-init",
                                                 "--loss-log",        "--metrics",
                                                 "--export-layout",   NULL};
static const char *const generation_options[] = {"--prompt", "--sample", "--tokens",
                                                 "--temperature", "--top-k", NULL};
static const struct job_section sections[] = {
    {"model", model_options},           {"training", training_options},
    {"data", data_options},             {"checkpoints", checkpoint_options},
    {"generation", generation_options},
};
enum { NSECTIONS = sizeof sections / sizeof sections[0] };

/* Every option but --preset in one job section: 0, or 2 naming the one that is not
 * (a program's bug, found by any run) */
static int check_sections(void)
{
	for (int k = 0; k < NOPTIONS + NFLAGS; k++) {
		const char *name = k < NOPTIONS ? option_names[k] : flags[k - NOPTIONS];
		int found = !strcmp(name, "--preset");
		for (int j = 0; j < NSECTIONS; j++)
			for (const char *const *o = sections[j].options; *o; o++)
				found += !strcmp(*o, name);
		if (found != 1)
			return cli_bad_usage("option %s is in %d job-file sections, not one (a bug)", name,
			                     found);
	}
	return 0;
}

/* A float option in [lo, hi]: 0, or 2 with a message. */
static int opt_float(enum opt_key k, const char *val, float lo, float hi, float *out)
{
	if (cli_parse_float(val, lo, hi, out))
		return cli_bad_usage("%s \"%s\" is invalid: expected a number in [%g, %g]",
		                     option_names[k], val, (double)lo, (double)hi);
	return 0;
}

/* The model and training options: 0 ok, 2 bad usage; -1 not one of them. */
static int parse_training(enum opt_key k, char *val, struct options *o)
{
	const char *n = option_names[k];
	int64_t v;
	switch (k) {
	case OPT_LAYERS: return cli_int(n, val, 1, 1000, &o->model.layers);
	case OPT_HEADS: return cli_int(n, val, 1, 1024, &o->model.heads);
	case OPT_EMBD: return cli_int(n, val, 1, 65536, &o->model.embd);
	case OPT_CONTEXT: return cli_int(n, val, 1, 65536, &o->model.context);
	case OPT_ARCH:
		if (strcmp(val, "gpt") && strcmp(val, "llama"))
			return cli_bad_usage(
			    "--arch \"%s\" is invalid: accepted values are gpt, llama", val);
		o->arch = !strcmp(val, "llama");
		return 0;
	case OPT_KV_HEADS: return cli_int(n, val, 1, 1024, &o->kv_heads);
	case OPT_FFN_DIM: return cli_int(n, val, 1, 1 << 20, &o->ffn_dim);
	case OPT_ROPE_THETA: return opt_float(k, val, 1.0f, 1e9f, &o->rope_theta);
	case OPT_BATCH: return cli_int(n, val, 1, 1 << 20, &o->batch);
	case OPT_STEPS: return cli_steps(n, val, &o->steps);
	case OPT_LR: return opt_float(k, val, 1e-9f, 10.0f, &o->lr);
	case OPT_MIN_LR: return opt_float(k, val, 0.0f, 10.0f, &o->min_lr);
	case OPT_WARMUP:
		if (cli_parse_i64(val, 0, INT64_MAX, &o->warmup))
			return cli_bad_usage("--warmup \"%s\" is invalid: expected a number of "
			                     "steps >= 0",
			                     val);
		return 0;
	case OPT_WEIGHT_DECAY: return opt_float(k, val, 0.0f, 1.0f, &o->weight_decay);
	case OPT_GRAD_CLIP: return opt_float(k, val, 0.0f, 1e6f, &o->grad_clip);
	case OPT_SEED:
		if (cli_parse_i64(val, 0, INT64_MAX, &v))
			return cli_bad_usage("--seed \"%s\" is invalid: expected an integer >= 0",
			                     val);
		o->seed = (uint64_t)v;
		return 0;
	default: return -1;
	}
}

/* The value of option k: 0 ok, 2 bad usage */
static int on_value(int key, char *val, void *ctx)
{
	struct options *o = ctx;
	enum opt_key k = (enum opt_key)key;
	const char *n = option_names[k];
	int rc = parse_training(k, val, o);
	if (rc >= 0)
		return rc;
	switch (k) {
	case OPT_TEXT: o->text = val; return 0;
	case OPT_TRAIN_TOKENS: o->train_tokens = val; return 0;
	case OPT_VAL_TOKENS: o->val_tokens = val; return 0;
	case OPT_VOCAB: o->vocab_set = 1; return cli_int(n, val, 2, 65536, &o->model.vocab);
	case OPT_VOCAB_FILE: o->vocab_file = val; return 0;
	case OPT_TOKEN_FORMAT:
		if (strcmp(val, "auto") && strcmp(val, "raw") && strcmp(val, "llmc"))
			return cli_bad_usage(
			    "--token-format \"%s\" is invalid: accepted values are auto, raw, llmc",
			    val);
		o->token_format = !strcmp(val, "raw")    ? SF_TOKENS_RAW
		                  : !strcmp(val, "llmc") ? SF_TOKENS_LLMC
		                                         : SF_TOKENS_AUTO;
		return 0;
	case OPT_PRESET: return 0; /* applied before the other options (apply_preset) */
	case OPT_PEAK_TFLOPS: return opt_float(k, val, 1e-6f, 1e6f, &o->peak_tflops);
	case OPT_VAL_FRACTION: return opt_float(k, val, 0.001f, 0.5f, &o->val_fraction);
	case OPT_EVAL_EVERY: return cli_steps(n, val, &o->eval_every);
	case OPT_EVAL_BATCHES: return cli_int(n, val, 1, 100000, &o->eval_batches);
	case OPT_PROGRESS_EVERY: return cli_steps(n, val, &o->progress_every);
	case OPT_CHECKPOINT_DIR: o->ckpt_dir = val; return 0;
	case OPT_CHECKPOINT_EVERY: return cli_steps(n, val, &o->ckpt_every);
	case OPT_CHECKPOINT_KEEP: return cli_steps(n, val, &o->ckpt_keep);
	case OPT_MAX_STEPS: return cli_steps(n, val, &o->max_steps);
	case OPT_EXPORT: o->export_path = val; return 0;
	case OPT_EXPORT_LAYOUT:
		if (strcmp(val, "hf") && strcmp(val, "nanogpt"))
			return cli_bad_usage(
			    "--export-layout \"%s\" is invalid: accepted values are hf, nanogpt",
			    val);
		o->nanogpt_layout = !strcmp(val, "nanogpt");
		return 0;
	case OPT_INIT: o->init_path = val; return 0;
	case OPT_EXPORT_INIT: o->export_init_path = val; return 0;
	case OPT_LOSS_LOG: o->loss_log = val; return 0;
	case OPT_METRICS: o->metrics = val; return 0;
	case OPT_PROMPT: o->prompt = val; return 0;
	case OPT_SAMPLE: return cli_int(n, val, 0, 1 << 20, &o->sample);
	case OPT_TOKENS: return cli_int(n, val, 0, 1 << 20, &o->gen_tokens);
	case OPT_TEMPERATURE: return opt_float(k, val, 0.01f, 100.0f, &o->temperature);
	case OPT_TOP_K: return cli_int(n, val, 0, 1 << 24, &o->top_k);
	default: return 0;
	}
}

static int on_flag(int j, void *ctx)
{
	struct options *o = ctx;
	if (j == 0)
		o->resume = 1;
	else if (j == 1)
		o->model.tie_weights = 0, o->tied = 0; /* a llama preset's tied head too */
	else if (j == 2)
		o->tied = 1;
	else
		o->ckpt_async = 1;
	return 0;
}

/* --preset's models: GPT-2 124M and a Llama of 101.5M, on GPT-2 tokens of Austen */
struct preset {
	const char *name;
	int arch, layers, heads, kv_heads, embd, ffn_dim;
};

static const struct preset presets[] = {
    {"gpt2", 0, 12, 12, 0, 768, 0},
    {"llama-100m", 1, 10, 12, 4, 768, 2048},
};

/* The value of --preset (the last one given) in argv, or NULL */
static const char *find_preset(int argc, char **argv)
{
	const char *name = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--preset=", 9))
			name = argv[i] + 9;
		else if (!strcmp(argv[i], "--preset") && i + 1 < argc)
			name = argv[++i];
	}
	return name;
}

/* A preset's values, before the command line's other options: 0, or 2 when unknown */
static int apply_preset(const char *name, struct options *o)
{
	const struct preset *p = NULL;
	for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
		if (!strcmp(presets[i].name, name))
			p = &presets[i];
	if (!p)
		return cli_bad_usage("--preset \"%s\" is invalid: accepted values are gpt2, "
		                     "llama-100m",
		                     name);
	o->preset = p->name;
	o->arch = p->arch;
	o->model.layers = p->layers, o->model.heads = p->heads, o->model.embd = p->embd;
	o->kv_heads = p->kv_heads, o->ffn_dim = p->ffn_dim;
	o->model.context = 1024, o->model.vocab = 50257, o->vocab_set = 1;
	o->model.tie_weights = 1, o->tied = p->arch; /* --tied is llama's flag */
	o->train_tokens = SF_DATA_DIR "/austen-gpt2-train.bin";
	o->val_tokens = SF_DATA_DIR "/austen-gpt2-val.bin";
	o->vocab_file = SF_DATA_DIR "/gpt2-vocab.bin";
	o->batch = 4; /* 2.3 GB of activations a sequence at context 1024 */
	o->lr = 6e-4f, o->weight_decay = 0.1f, o->grad_clip = 1.0f;
	o->eval_every = 100, o->eval_batches = 2, o->progress_every = 1;
	o->sample = 1, o->gen_tokens = 32;
	return 0;
}

/* 0 ok, 1 --help printed, 2 bad usage */
static int parse(int argc, char **argv, struct options *o)
{
	*o = (struct options){.batch = 16,
	                      .eval_batches = 8,
	                      .sample = 2,
	                      .gen_tokens = 300,
	                      .top_k = 40,
	                      .lr = 2e-3f,
	                      .min_lr = -1.0f,
	                      .weight_decay = 0.01f,
	                      .temperature = 0.8f,
	                      .val_fraction = 0.1f,
	                      .steps = 4000,
	                      .warmup = 100,
	                      .eval_every = 250,
	                      .progress_every = 25,
	                      .seed = 1,
	                      .text = SF_DEFAULT_TEXT,
	                      .rope_theta = 10000.0f};
	sf_gpt_config_init(&o->model);
	o->model.context = 128;
	const char *preset = find_preset(argc, argv);
	if (preset && apply_preset(preset, o))
		return 2;
	const struct cli_spec sp = {option_names, NOPTIONS, flags, NFLAGS, on_value, on_flag};
	int rc = cli_parse(argc, argv, &sp, o);
	if (rc)
		return rc;
	if (o->model.embd % o->model.heads)
		return cli_bad_usage("--embd %d must be a multiple of --heads %d", o->model.embd,
		                     o->model.heads);
	if (!o->arch && (o->kv_heads || o->ffn_dim || o->tied || o->rope_theta != 10000.0f))
		return cli_bad_usage(
		    "--kv-heads, --ffn-dim, --rope-theta and --tied need --arch llama");
	if (o->arch && !o->model.tie_weights && !o->preset)
		return cli_bad_usage("--untied is --arch gpt's (llama is untied unless --tied)");
	if (o->arch && !o->kv_heads)
		o->kv_heads = o->model.heads % 2 ? o->model.heads : o->model.heads / 2;
	if (o->arch && o->model.heads % o->kv_heads)
		return cli_bad_usage("--kv-heads %d must divide --heads %d", o->kv_heads,
		                     o->model.heads);
	if (o->arch && (o->model.embd / o->model.heads) % 2)
		return cli_bad_usage("--arch llama needs heads of an even size (rope pairs their "
		                     "features): --embd %d / --heads %d is odd",
		                     o->model.embd, o->model.heads);
	if (o->min_lr < 0)
		o->min_lr = o->lr / 10;
	if (o->min_lr > o->lr)
		return cli_bad_usage("--min-lr %g exceeds --lr %g", (double)o->min_lr,
		                     (double)o->lr);
	if (o->resume && !o->ckpt_dir)
		return cli_bad_usage("--resume needs --checkpoint-dir");
	if (o->ckpt_keep && !o->ckpt_dir)
		return cli_bad_usage("--checkpoint-keep needs --checkpoint-dir");
	if (o->ckpt_every && !o->ckpt_dir)
		return cli_bad_usage("--checkpoint-every needs --checkpoint-dir");
	if (o->ckpt_async && !o->ckpt_dir)
		return cli_bad_usage("--checkpoint-async needs --checkpoint-dir");
	if (o->sample > o->batch)
		return cli_bad_usage("--sample %d exceeds --batch %d (one sample per sequence)",
		                     o->sample, o->batch);
	if (!o->train_tokens != !o->val_tokens)
		return cli_bad_usage("--train-tokens and --val-tokens go together (got only %s)",
		                     o->train_tokens ? "--train-tokens" : "--val-tokens");
	if (!o->train_tokens && o->model.vocab != 256)
		return cli_bad_usage("--vocab %d with --text: a text's tokens are its bytes (256)",
		                     o->model.vocab);
	if (o->vocab_file && !o->train_tokens)
		return cli_bad_usage("--vocab-file goes with --train-tokens (a text's tokens are "
		                     "its bytes)");
	if (o->train_tokens && o->sample && !o->vocab_file)
		return cli_bad_usage("--sample %d with token files: printing samples needs their "
		                     "decode table, --vocab-file FILE (" SF_DATA_DIR
		                     "/gpt2-vocab.bin for GPT-2's tokens); or add --sample 0",
		                     o->sample);
	if (!o->prompt || !*o->prompt) /* token files: the end-of-text id */
		o->prompt = o->train_tokens ? NULL : "\n";
	return 0;
}


struct run {
	struct options o;
	const char *job;  /* --job FILE, or NULL */
	int argc;         /* the options the run was given: the job file's, then the */
	char **argv;      /* command line's (job_load) */
	sf_context *ctx;
	sf_model *m;
	struct sf_text text;
	struct sf_tokens tokens[2]; /* --train-tokens, --val-tokens */
	struct sf_vocab vocab;      /* --vocab-file */
	int rank, size, first, rows, T, V;
	int accum; /* SHARDFLOW_GRAD_ACCUM: micro-batches a step */
	int tp;    /* SHARDFLOW_TP: the ranks of a TP group (consecutive) hold the same rows */
	int pp;    /* SHARDFLOW_PP: stage s the ranks [s dp, (s+1) dp); a dp place's S ranks
	              hold the same rows (sf_model_predict returns them on each) */
	int cp, cp_rank; /* SHARDFLOW_CP: the K ranks of a CP group are given the same
	                    samples (each computes 2 of their 2K chunks; sf_model_predict
	                    returns the whole samples on each) */
	char trace[512]; /* SHARDFLOW_TRACE's prefix, "" when off: said at the end */
	double flops_token; /* the model's FLOPs a token (nanoGPT's 6N + 12LCT), for the lines */
	struct sf_llama_config lc; /* --arch llama's, for the exports' config.json */
	int32_t *x, *y;
	float *logits;
	FILE *loss_log; /* --loss-log, rank 0 */
	int metrics_fd; /* --metrics, rank 0; -1 when none */
	int64_t step;   /* steps done */
	int64_t saved;  /* the step of the checkpoint loaded or written, or -1 */
	int64_t async_step;          /* --checkpoint-async: the step being written, or -1 */
	double async_t0, async_held; /* when it began; what the step boundary spent on it */
	int agreed;     /* the failure is every rank's at once (restore's): no MPI_Abort */
	uint64_t rss0;  /* resident set before sf_model_create */
	uint64_t peak1; /* peak resident set when it returned */
	/* the host's work in this run's training steps after the first, evaluation left
	 * out (the host line; bench/sim_validate.sh calibrates the simulation by it) */
	int host_steps;
	double host_main_ms; /* this (the main) thread's CPU */
	double host_comm[4]; /* comm seconds, comm CPU seconds, comm worker CPU seconds, bytes */
};

/* Warmup from lr/warmup to lr, then a cosine from lr to min_lr at the last step. */
static float lr_at(const struct options *o, int64_t step)
{
	if (step < o->warmup)
		return o->lr * (float)(step + 1) / (float)o->warmup;
	double span = (double)(o->steps - o->warmup);
	double p = span > 0 ? (double)(step - o->warmup) / span : 1.0;
	if (p > 1)
		p = 1;
	return o->min_lr + (float)(0.5 * (1.0 + cos(M_PI * p))) * (o->lr - o->min_lr);
}

/* The summed cross-entropy (nats per byte) over this rank's rows of (rows*T, V) logits. */
static double local_loss_sum(const struct run *r)
{
	double sum = 0;
	for (int i = 0; i < r->rows * r->T; i++) {
		const float *z = r->logits + (size_t)i * (size_t)r->V;
		int32_t y = r->y[i];
		float mx = z[0];
		for (int c = 1; c < r->V; c++)
			mx = z[c] > mx ? z[c] : mx;
		double se = 0;
		for (int c = 0; c < r->V; c++)
			se += exp((double)(z[c] - mx));
		sum += log(se) + mx - z[y];
	}
	return sum;
}

/* This rank's rows of batch `index` of a split (SF_TEXT_TRAIN, SF_TEXT_VAL) into r->x,
 * r->y: the text's windows, or the token files' (the same draws) */
static int draw(struct run *r, int split, int64_t index)
{
	if (r->o.train_tokens)
		return sf_tokens_batch(&r->tokens[split], split, r->o.seed, index, r->o.batch,
		                       r->first, r->rows, r->T, r->x, r->y);
	return sf_text_batch(&r->text, split, r->o.seed, index, r->o.batch, r->first, r->rows, r->T,
	                     r->x, r->y);
}

/* Whether this rank's rows count once: a TP group's first rank, with a pipeline the
 * first stage's (every stage's rank of a dp place holds the same rows), and a CP
 * group's first rank (its K ranks are given the same samples) */
static int counts_rows(const struct run *r)
{
	return r->rank % r->tp == 0 && r->rank < r->size / r->pp && r->cp_rank == 0;
}

/* Validation: the mean loss over --eval-batches fixed batches of the held-out tail. */
static int evaluate(struct run *r, double *loss)
{
	int rc = SF_OK;
	double sum = 0;
	for (int b = 0; b < r->o.eval_batches; b++) {
		rc = draw(r, SF_TEXT_VAL, b);
		const int32_t *ids[1] = {r->x};
		struct sf_batch batch = {.nint_inputs = 1, .int_inputs = ids};
		if (rc < 0 || (rc = sf_model_predict(r->m, &batch, r->logits)) < 0)
			return rc;
		sum += local_loss_sum(r);
	}
	if (!counts_rows(r)) /* its TP (CP) group's or dp place's first rank counts their rows */
		sum = 0;
	MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	*loss = sum / ((double)r->o.eval_batches * r->o.batch * r->T);
	return rc;
}

/* The text, and the options checked against it. */
static int load_data(struct run *r)
{
	int status = -1;
	if (r->o.vocab_file) {
		CLI_CHECK_GOTO(sf_vocab_load(r->o.vocab_file, &r->vocab), done);
		if (!r->o.vocab_set)
			r->o.model.vocab = r->vocab.n;
		if (r->o.model.vocab < r->vocab.n) {
			if (r->rank == 0)
				fprintf(stderr,
				        PROG ": --vocab %d is below the %d ids of --vocab-file %s\n",
				        r->o.model.vocab, r->vocab.n, r->o.vocab_file);
			goto done;
		}
	}
	if (r->o.train_tokens) {
		CLI_CHECK_GOTO(sf_tokens_load(r->o.train_tokens, r->o.model.vocab, r->o.token_format,
		                     &r->tokens[SF_TEXT_TRAIN]), done);
		CLI_CHECK_GOTO(sf_tokens_load(r->o.val_tokens, r->o.model.vocab, r->o.token_format,
		                     &r->tokens[SF_TEXT_VAL]), done);
	} else
		CLI_CHECK_GOTO(sf_text_load(r->o.text, r->o.val_fraction, &r->text), done);
	if (r->o.batch < r->size) {
		if (r->rank == 0)
			fprintf(stderr, PROG ": --batch %d is smaller than the %d ranks\n",
			        r->o.batch, r->size);
		goto done;
	}
	status = 0;
done:
	return status;
}

/* SHARDFLOW_VOCAB_PARALLEL under SHARDFLOW_TP > 1: the embedding and the head
 * vocabulary-parallel (auto: where it applies: the tied head at any vocabulary, padded
 * where K does not divide it, an untied head (a linear_col) at a vocabulary that
 * divides by K; on: always, the library refusing where it cannot apply). Without TP,
 * a tied head's unit vocabulary-parallel over the dp data-parallel ranks
 * (scheduler/vocabdp.c: never gathered): on always, auto where it sends fewer bytes
 * than the matrix's gathers (sf_vocab_parallel_pays, of a rank's rows a pass; full and
 * grad_op sharding; not on NCCL's GPU ranks, where the embedding and the loss would
 * run on CPU workers; the library falls back to gathering where it cannot apply). */
static int vocab_parallel(const struct sf_config *cfg, int V, int tied, int C, int dp,
                          size_t rows)
{
	if (cfg->vocab_parallel == SF_VOCAB_PARALLEL_OFF)
		return 0;
	if (cfg->tp < 2)
		return tied && (cfg->vocab_parallel == SF_VOCAB_PARALLEL_ON ||
		                ((cfg->sharding == SF_SHARD_FULL || cfg->sharding == SF_SHARD_GRAD_OP) &&
		                 cfg->comm != SF_COMM_NCCL && sf_vocab_parallel_pays(V, C, dp, rows)));
	return cfg->vocab_parallel == SF_VOCAB_PARALLEL_ON || tied || V % cfg->tp == 0;
}

/* The GPT trained with AdamW, and this rank's batch buffers. */
static int build_model(struct run *r)
{
	const struct options *o = &r->o;
	sf_graph *g = NULL;
	int status = -1;
	r->T = o->model.context, r->V = o->model.vocab;
	struct sf_config cfg;
	CLI_CHECK_GOTO(sf_context_config(r->ctx, &cfg), done);
	r->accum = cfg.grad_accum;
	r->tp = cfg.tp;
	r->pp = cfg.pp > 1 ? cfg.pp : 1;
	r->cp = cfg.cp > 1 ? cfg.cp : 1;
	r->cp_rank = (r->rank / r->tp) % r->cp; /* world = dp x cp x tp (include/shardflow.h) */
	snprintf(r->trace, sizeof r->trace, "%s", cfg.trace);
	/* the data-parallel ranks and a rank's rows a pass (SHARDFLOW_VOCAB_PARALLEL) */
	int dp = r->size / r->tp / r->pp / r->cp;
	size_t rows = (size_t)(o->batch / (dp > 0 ? dp : 1)) * (size_t)r->T;
	if (o->arch) {
		struct sf_llama_config lc;
		sf_llama_config_init(&lc);
		lc.vocab = o->model.vocab, lc.context = o->model.context, lc.dim = o->model.embd;
		lc.layers = o->model.layers, lc.heads = o->model.heads, lc.kv_heads = o->kv_heads;
		lc.ffn_dim = o->ffn_dim, lc.rope_theta = o->rope_theta, lc.tie_weights = o->tied;
		lc.tensor_parallel = cfg.tp > 1; /* Megatron's split of each block (SHARDFLOW_TP) */
		lc.vocab_parallel = vocab_parallel(&cfg, lc.vocab, lc.tie_weights, lc.dim, dp, rows);
		r->lc = lc;
		CLI_CHECK_GOTO(sf_llama_graph(&lc, &g), done);
	} else {
		struct sf_gpt_config gc = o->model;
		gc.tensor_parallel = cfg.tp > 1; /* Megatron's split of each block (SHARDFLOW_TP) */
		gc.vocab_parallel = vocab_parallel(&cfg, gc.vocab, gc.tie_weights, gc.embd, dp, rows);
		CLI_CHECK_GOTO(sf_gpt_graph(&gc, &g), done);
	}
	struct sf_model_options mo;
	sf_model_options_init(&mo);
	mo.batch = o->batch;
	mo.seed = o->seed;
	mo.optimizer = SF_OPT_ADAMW;
	mo.lr = o->lr;
	mo.weight_decay = o->weight_decay;
	mo.beta2 = 0.99f; /* nanoGPT's choice for small models: faster adaptation */
	mo.max_grad_norm = o->grad_clip;
	struct sf_memory_info mi;
	CLI_CHECK_GOTO(sf_memory_info(&mi), done);
	r->rss0 = mi.rss;
	CLI_CHECK_GOTO(sf_model_create(r->ctx, g, &mo, &r->m), done);
	CLI_CHECK_GOTO(sf_memory_info(&mi), done);
	r->peak1 = mi.peak_rss;
	{ /* nanoGPT's FLOPs a token: 6 N (N without the position table) + 12 L C T */
		size_t np = 0;
		CLI_CHECK_GOTO(sf_model_param_count(r->m, &np), done);
		double C = o->model.embd, T = o->model.context, L = o->model.layers;
		double n = (double)np - (o->arch ? 0.0 : T * C);
		r->flops_token = 6.0 * n + 12.0 * L * C * T;
	}
	CLI_CHECK_GOTO(sf_model_local_rows(r->m, &r->first, &r->rows), done);
	size_t n = (size_t)r->rows * (size_t)r->T;
	r->x = malloc(n * sizeof(int32_t));
	r->y = malloc(n * sizeof(int32_t));
	r->logits = malloc(n * (size_t)r->V * sizeof(float));
	if (!r->x || !r->y || !r->logits) {
		fprintf(stderr, PROG ": out of memory\n");
		goto done;
	}
	status = 0;
done:
	sf_graph_destroy(g);
	return status;
}

/* A checkpoint's position checked against this run: its data seed, and info.* as
 * save() writes them (epoch 0: batches are drawn by index, batch = step, the index of
 * the next training batch; a step within --steps). A manifest's CRC-32 proves that it
 * is intact, not that it belongs to this run. Every rank gets the same info: rank 0
 * prints the refusal naming the field, its value and what is accepted. */
static int check_position(const struct run *r, const struct sf_checkpoint_info *info)
{
	const struct options *o = &r->o;
	char why[256] = "";
	if (info->data_seed != o->seed)
		snprintf(why, sizeof why, "the checkpoint was trained with --seed %llu, not %llu",
		         (unsigned long long)info->data_seed, (unsigned long long)o->seed);
	else if (info->step > o->steps)
		snprintf(why, sizeof why, "info.step is %lld, accepted 0..%lld (--steps)",
		         (long long)info->step, (long long)o->steps);
	else if (info->epoch != 0)
		snprintf(why, sizeof why,
		         "info.epoch is %lld, accepted 0..0 (batches are drawn by index, there "
		         "are no epochs)",
		         (long long)info->epoch);
	else if (info->batch != info->step)
		snprintf(why, sizeof why,
		         "info.batch is %lld, accepted %lld..%lld (info.step: the next batch's "
		         "index)",
		         (long long)info->batch, (long long)info->step, (long long)info->step);
	if (!*why)
		return 0;
	if (r->rank == 0)
		fprintf(stderr, PROG ": %s: %s\n", o->ckpt_dir, why);
	return -1;
}

/* GPT-2's layout of --export-layout (NULL: the model's own, nanoGPT's) into *l */
static const struct sf_safetensors_layout *weights_layout(const struct run *r,
                                                          struct sf_safetensors_layout *l)
{
	if (r->o.arch || r->o.nanogpt_layout || sf_gpt_hf_layout(l) < 0)
		return NULL;
	return l;
}

/* --init: a safetensors file in --export-layout's layout, or a Hugging Face directory
 * (its config.json checked against the model first; GPT-2 in Conv1D's layout) */
static int init_weights(struct run *r)
{
	const char *p = r->o.init_path;
	struct sf_safetensors_layout l, hf;
	struct stat st;
	char cfg[4096];
	int status = -1;
	if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
		CLI_CHECK_GOTO(sf_model_import_safetensors_layout(r->m, p, weights_layout(r, &l)), done);
		return 0;
	}
	snprintf(cfg, sizeof cfg, "%s/config.json", p);
	if (r->o.arch)
		CLI_CHECK_GOTO(sf_llama_config_check_hf(&r->lc, cfg), done);
	else
		CLI_CHECK_GOTO(sf_gpt_config_check_hf(&r->o.model, cfg), done);
	CLI_CHECK_GOTO(sf_model_import_hf(r->m, p, r->o.arch ? NULL : (sf_gpt_hf_layout(&hf), &hf)), done);
	status = 0;
done:
	return status;
}

/* The --checkpoint-dir locked for this job (a second job on it is refused here,
 * before it trains), then --init's weights, then --resume's checkpoint and step. Every
 * failure here is every rank's (each call is collective and agrees on its status, and
 * every rank checks the same info), so the job ends without MPI_Abort. */
static int restore(struct run *r)
{
	const struct options *o = &r->o;
	int status = -1;
	if (o->ckpt_dir)
		CLI_CHECK_GOTO(sf_checkpoint_lock(r->m, o->ckpt_dir, SF_CHECKPOINT_WRITE), done);
	if (o->init_path && init_weights(r) < 0)
		goto done;
	if (o->resume) {
		struct sf_checkpoint_info info;
		int found = 0;
		CLI_CHECK_GOTO(sf_checkpoint_latest(r->m, o->ckpt_dir, &found, NULL, 0), done);
		if (!found) {
			if (r->rank == 0)
				fprintf(stderr,
				        PROG ": no checkpoint in %s yet: starting from scratch\n",
				        o->ckpt_dir);
			status = 0;
			goto done;
		}
		CLI_CHECK_GOTO(sf_checkpoint_load(r->m, o->ckpt_dir, &info), done);
		if (check_position(r, &info) < 0)
			goto done;
		r->step = r->saved = info.step;
		if (r->rank == 0)
			fprintf(stderr, PROG ": resumed from %s at step %lld\n", o->ckpt_dir,
			        (long long)r->step);
	}
	status = 0;
done:
	return status;
}

/* The layout as the lines and job.json say it: "dp 2 x tp 1", with a pipeline's
 * stages before ("pp 2 x dp 1 x tp 1") and the CP degree when K > 1 ("dp 1 x cp 2 x tp
 * 1"): the world is pp x dp x cp x tp. */
static void layout_of(const struct run *r, char *buf, size_t n)
{
	char pps[32] = "", cps[32] = "";
	if (r->pp > 1)
		snprintf(pps, sizeof pps, "pp %d x ", r->pp);
	if (r->cp > 1)
		snprintf(cps, sizeof cps, "cp %d x ", r->cp);
	snprintf(buf, n, "%sdp %d x %stp %d", pps, r->size / r->tp / r->pp / r->cp, cps, r->tp);
}

/* The run's effective job (examples/job.h) beside its records: <checkpoint-dir>/job.json,
 * <metrics>.job.json and <trace prefix>.job.json, what it was given and every
 * SHARDFLOW_* setting it has. Rank 0; a failure is said and the run goes on (the record
 * is not the run). */
static void write_effective_job(const struct run *r, const struct sf_config *cfg,
                                const char *settings)
{
	char path[4096], layout[96];
	layout_of(r, layout, sizeof layout);
	for (int k = 0; k < 3; k++) {
		const char *base = k == 0 ? r->o.ckpt_dir : k == 1 ? r->o.metrics : cfg->trace;
		if (!base || !base[0])
			continue;
		if (k == 0 && mkdir(base, 0777) != 0 && errno != EEXIST) {
			fprintf(stderr, PROG ": cannot create %s: %s\n", base, strerror(errno));
			continue;
		}
		if (snprintf(path, sizeof path, k == 0 ? "%s/job.json" : "%s.job.json", base) >=
		        (int)sizeof path ||
		    job_write_effective(path, r->argc, r->argv, sections, NSECTIONS, flags, NFLAGS,
		                        settings, layout) != 0)
			fprintf(stderr, PROG ": cannot write the run's job to %s: %s\n", path,
			        strerror(errno));
	}
}

static void print_banner(const struct run *r)
{
	size_t np = 0;
	sf_model_param_count(r->m, &np);
	const struct sf_gpt_config *c = &r->o.model;
	if (r->rank == 0)
		fprintf(
		    stderr,
		    PROG ": %d rank(s), %zu parameters (%s: %d layers, %d heads%s%.0d, embd %d, "
		         "context %d, vocab %d, %s head), %s: %lld %s for training, %lld for "
		         "validation; batch %d x %d tokens x %d micro-batch(es), %lld steps\n",
		    r->size, np, r->o.arch ? "llama" : "gpt", c->layers, c->heads,
		    r->o.arch ? " on kv heads " : "", r->o.arch ? r->o.kv_heads : 0, c->embd,
		    c->context, c->vocab,
		    (r->o.arch ? r->o.tied : c->tie_weights) ? "tied" : "untied",
		    r->o.train_tokens ? r->o.train_tokens : r->o.text,
		    (long long)(r->o.train_tokens ? r->tokens[0].n : r->text.train_end),
		    r->o.train_tokens ? "tokens" : "bytes",
		    (long long)(r->o.train_tokens ? r->tokens[1].n : r->text.n - r->text.train_end),
		    r->o.batch, r->T, r->accum, (long long)r->o.steps);
	/* the effective settings, once (issue 46: the layout, depth, sharding and dtypes
	 * were said nowhere): the knobs' values as sf_config_set reads them */
	struct sf_config cfg;
	char settings[2048];
	if (r->rank == 0 && sf_context_config(r->ctx, &cfg) == SF_OK &&
	    sf_config_describe(&cfg, 1, settings, sizeof settings) == SF_OK)
	{
		char layout[96];
		layout_of(r, layout, sizeof layout);
		fprintf(stderr, PROG ": layout %s; settings: %s%s%s\n", layout, settings,
		        r->job ? "; job file " : "", r->job ? r->job : "");
		write_effective_job(r, &cfg, settings);
	}
	struct sf_model_stats st;
	if (sf_model_stats(r->m, &st) == SF_OK && r->rank == 0) {
		const double mib = 1024.0 * 1024.0;
		char cps[64] = ""; /* CP: a rank's rows of each */
		if (r->cp > 1)
			snprintf(cps, sizeof cps, ", %d of their %d positions each", r->T / r->cp,
			         r->T);
		fprintf(stderr,
		        PROG ": memory per rank: parameters %.1f MiB (the shards and %d ring "
		             "slots, each sized by the largest unit it holds; the largest has %zu "
		             "parameters), gradients %.1f MiB, "
		             "optimizer %.1f MiB, activations %.1f MiB (outputs, their gradients "
		             "and saved buffers of %d sequences%s)\n",
		        (double)st.param_bytes / mib, st.ring_slots, st.largest_unit,
		        (double)st.grad_bytes / mib, (double)st.optimizer_bytes / mib,
		        (double)st.activation_bytes / mib, r->rows, cps);
	}
}

/* Every rank's peak resident set against sf_model_stats's plan: rank 0 prints a line
 * per rank (tests/memory_limit.sh reads them):
 *   memory: rank <r> peak RSS <p> MiB: <d> MiB above the <s> MiB before
 *   sf_model_create; predicted <m> MiB (model) + <b> MiB (this program's batch and
 *   logits): measured / predicted <ratio>; sf_model_create's peak <c> MiB above the
 *   start (one unit's parameters: <u> MiB)
 * and what it sent (sf_model_stats):
 *   comm: rank <r> sent <x> MiB in the steps' collectives, <y> MiB of them to another
 *   node, <z> MiB in TP all-reduces; activations <a> MiB
 * and what rank 0's host did a training step (the first, the evaluations and the
 * checkpoints left out):
 *   host: rank 0, a step (the last <n>; evaluations and checkpoints left out):
 *   main thread <m> ms CPU; comm worker <c> ms CPU in <t> ms of collectives, <o> ms CPU
 *   outside them; <b> MB sent */
static int report_memory(const struct run *r)
{
	const double mib = 1024.0 * 1024.0;
	struct sf_memory_info mi;
	struct sf_model_stats st;
	int status = -1;
	CLI_CHECK_GOTO(sf_memory_info(&mi), done);
	CLI_CHECK_GOTO(sf_model_stats(r->m, &st), done);
	double mine[10] = {(double)mi.peak_rss,
	                   (double)r->rss0,
	                   (double)(st.param_bytes + st.grad_bytes + st.optimizer_bytes +
	                            st.activation_bytes + st.buffer_bytes),
	                   (double)r->rows * r->T *
	                       (2 * sizeof(int32_t) + (size_t)r->V * sizeof(float)),
	                   (double)r->peak1,
	                   (double)st.largest_unit * sizeof(float),
	                   st.comm_bytes,
	                   st.comm_bytes_inter,
	                   st.tp_comm_bytes,
	                   (double)st.activation_bytes};
	double *all = r->rank == 0 ? malloc((size_t)r->size * sizeof mine) : NULL;
	if (r->rank == 0 && !all) {
		fprintf(stderr, PROG ": out of memory\n");
		goto done;
	}
	MPI_Gather(mine, 10, MPI_DOUBLE, all, 10, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	for (int i = 0; r->rank == 0 && i < r->size; i++) {
		const double *v = all + 10 * i;
		fprintf(stderr,
		        PROG ": memory: rank %d peak RSS %.1f MiB: %.1f MiB above the %.1f MiB "
		             "before sf_model_create; predicted %.1f MiB (model) + %.1f MiB (this "
		             "program's batch and logits): measured / predicted %.3f; "
		             "sf_model_create's peak %.1f MiB above the start (one unit's "
		             "parameters: %.1f MiB)\n",
		        i, v[0] / mib, (v[0] - v[1]) / mib, v[1] / mib, v[2] / mib, v[3] / mib,
		        (v[0] - v[1]) / (v[2] + v[3]), (v[4] - v[1]) / mib, v[5] / mib);
		fprintf(stderr,
		        PROG ": comm: rank %d sent %.1f MiB in the steps' collectives, %.1f MiB of "
		             "them to another node, %.1f MiB in TP all-reduces; activations %.1f "
		             "MiB\n",
		        i, v[6] / mib, v[7] / mib, v[8] / mib, v[9] / mib);
	}
	if (r->rank == 0 && r->host_steps > 0) {
		double n = r->host_steps;
		const double *c = r->host_comm;
		fprintf(stderr,
		        PROG ": host: rank 0, a step (the last %d; evaluations and checkpoints "
		             "left out): main "
		             "thread %.3f ms CPU; comm worker %.3f ms CPU in %.3f ms of "
		             "collectives, %.3f ms CPU outside them; %.3f MB sent\n",
		        r->host_steps, r->host_main_ms / n, 1e3 * c[1] / n, 1e3 * c[0] / n,
		        1e3 * (c[2] - c[1]) / n, 1e-6 * c[3] / n);
	}
	free(all);
	status = 0;
done:
	return status;
}

/* A safetensors export at path in --export-layout's layout, and Hugging Face's
 * config.json beside it (rank 0): with the default layout the directory loads in
 * transformers' GPT2LMHeadModel (or LlamaForCausalLM) as it is. */
static int export_weights(struct run *r, const char *path)
{
	int status = -1;
	struct sf_safetensors_layout l;
	CLI_CHECK_GOTO(sf_model_export_safetensors_layout(r->m, path, weights_layout(r, &l)), done);
	if (r->rank == 0) {
		char cfg[4096];
		const char *slash = strrchr(path, '/');
		int dl = slash ? (int)(slash - path) : 1;
		snprintf(cfg, sizeof cfg, "%.*s/config.json", dl, slash ? path : ".");
		if (r->o.arch)
			CLI_CHECK_GOTO(sf_llama_config_write_hf(&r->lc, cfg), done);
		else
			CLI_CHECK_GOTO(sf_gpt_config_write_hf(&r->o.model, cfg), done);
	}
	status = 0;
done:
	return status;
}

/* The bytes of the files in directory path (a checkpoint's step); -1 if unreadable */
static double dir_bytes(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -1;
	double total = 0;
	char f[4096];
	for (struct dirent *e; (e = readdir(d));) {
		struct stat st;
		if (snprintf(f, sizeof f, "%s/%s", path, e->d_name) >= (int)sizeof f)
			continue;
		if (stat(f, &st) == 0 && S_ISREG(st.st_mode))
			total += (double)st.st_size;
	}
	closedir(d);
	return total;
}

/* The line of a finished save (rank 0): where it went, its size and what it took
 * (held: the seconds the steps waited for it, asynchronous saves), and
 * --checkpoint-keep's older ones removed. */
static int saved_line(struct run *r, int64_t step, double seconds, double held)
{
	int status = -1, removed = 0;
	if (r->o.ckpt_keep)
		CLI_CHECK_GOTO(sf_checkpoint_prune(r->m, r->o.ckpt_dir, (int)r->o.ckpt_keep, &removed), done);
	if (r->rank == 0) {
		char step_dir[4096];
		snprintf(step_dir, sizeof step_dir, "%s/step-%09lld", r->o.ckpt_dir,
		         (long long)step);
		double mib = dir_bytes(step_dir) / (1024.0 * 1024.0);
		fprintf(stderr, PROG ": checkpoint of step %lld saved in %s (%.1f MiB, %.1f s",
		        (long long)step, r->o.ckpt_dir, mib, seconds);
		if (held >= 0)
			fprintf(stderr, ", asynchronous: %.3f s at the step", held);
		fprintf(stderr, ")");
		if (removed)
			fprintf(stderr, "; %d older one%s removed (--checkpoint-keep %lld)",
			        removed, removed == 1 ? "" : "s", (long long)r->o.ckpt_keep);
		fprintf(stderr, "\n");
		if (r->metrics_fd >= 0) /* the curves so far; a failure costs no training */
			(void)metrics_plot(r->o.metrics, PROG);
	}
	status = 0;
done:
	return status;
}

/* --checkpoint-async: ends the save being written once every rank's file is (block:
 * waits for it), then says so; a failed write fails the run here. */
static int async_finish(struct run *r, int block)
{
	int status = -1, pending = 0;
	if (r->async_step < 0)
		return 0;
	if (block)
		CLI_CHECK_GOTO(sf_checkpoint_wait(r->m), done);
	else
		CLI_CHECK_GOTO(sf_checkpoint_poll(r->m, &pending), done);
	if (!pending) {
		int64_t step = r->async_step;
		r->async_step = -1;
		if (saved_line(r, step, cli_now() - r->async_t0, r->async_held) < 0)
			goto done;
	}
	status = 0;
done:
	return status;
}

/* A checkpoint of this step, unless it is the one loaded or last written (with
 * --checkpoint-async begun here and ended by async_finish at a later step). */
static int save(struct run *r)
{
	int status = -1;
	if (r->step != r->saved) {
		struct sf_checkpoint_info info = {r->step, 0, r->step, r->o.seed};
		double t0 = cli_now();
		if (r->o.ckpt_async) {
			if (async_finish(r, 1) < 0) /* one at a time */
				goto done;
			CLI_CHECK_GOTO(sf_checkpoint_save_async(r->m, r->o.ckpt_dir, &info), done);
			r->async_step = r->step, r->async_t0 = t0, r->async_held = cli_now() - t0;
		} else {
			CLI_CHECK_GOTO(sf_checkpoint_save(r->m, r->o.ckpt_dir, &info), done);
			if (saved_line(r, r->step, cli_now() - t0, -1) < 0)
				goto done;
		}
		r->saved = r->step;
	}
	status = 0;
done:
	return status;
}

struct meter {
	double t_start, t_eval;
	double since_loss, eval_loss, since_norm; /* sums since the last progress line /
	                                              evaluation */
	int64_t since_n, eval_n;
	int64_t done_here;   /* steps submitted by this process */
	int64_t read_here;   /* ... and those of them whose loss is read */
	int64_t prev_ticket; /* the micro-batch whose loss is not read yet, or -1 */
	int64_t prev_step;   /* its step (1-based) */
	double part;         /* the sum of the losses read of that step's micro-batches */
	int part_n;
};

static int64_t last_step(const struct options *o)
{
	return o->max_steps && o->max_steps < o->steps ? o->max_steps : o->steps;
}

/* What a progress line and a --metrics line say of the steps read so far: seconds
 * since training started in this process, tokens/s (the tokens of the steps read over
 * that time), the model's TFLOP/s, MFU (NAN without --peak-tflops), rank 0's resident
 * GiB. */
struct figures {
	double el, rate, tflops, mfu, mem_gib;
};

static void figures_now(const struct run *r, const struct meter *mt, struct figures *f)
{
	double per_step = (double)r->o.batch * r->T * r->accum; /* tokens */
	struct sf_memory_info mi = {0};
	f->el = cli_now() - mt->t_start;
	f->rate = (double)mt->read_here * per_step / f->el;
	f->tflops = f->rate * r->flops_token / 1e12; /* the job's model FLOP/s */
	f->mfu = r->o.peak_tflops > 0 ? f->tflops / ((double)r->o.peak_tflops * r->size) : NAN;
	sf_memory_info(&mi);
	f->mem_gib = (double)mi.rss / (1024.0 * 1024.0 * 1024.0);
}

/* Rank 0, when step `step` (1-based) is a progress step and its loss was just read:
 * its line. The loss is read a step late (a step stays in flight), so the line comes
 * then, under the step the loss belongs to. */
static void print_progress(const struct run *r, struct meter *mt, int64_t step)
{
	if ((step % r->o.progress_every != 0 && step != last_step(&r->o)) || r->rank != 0 ||
	    !mt->since_n)
		return;
	struct figures f;
	figures_now(r, mt, &f);
	char eta[32], took[32], norm[48] = "", mfu[32] = "";
	cli_fmt_eta((double)(last_step(&r->o) - step) * r->o.batch * r->T * r->accum / f.rate, eta,
	            sizeof eta);
	cli_fmt_eta(f.el, took, sizeof took);
	if (r->o.grad_clip > 0)
		snprintf(norm, sizeof norm, " grad_norm %.3f",
		         mt->since_norm / (double)mt->since_n);
	if (r->o.peak_tflops > 0)
		snprintf(mfu, sizeof mfu, " mfu %.3f", f.mfu);
	printf("step %lld/%lld loss %.4f lr %.2e%s tokens/s %.0f tflops %.3g%s mem %.2fGiB "
	       "time %s eta %s\n",
	       (long long)step, (long long)r->o.steps, mt->since_loss / (double)mt->since_n,
	       (double)lr_at(&r->o, step - 1), norm, f.rate, f.tflops, mfu, f.mem_gib, took, eta);
	fflush(stdout);
	mt->since_loss = 0, mt->since_n = 0, mt->since_norm = 0;
}

/* Rank 0 with --metrics: step `step`'s line, its own loss and gradient norm (not the
 * progress line's means) and the figures its progress line would give. */
static int metrics_step(const struct run *r, const struct meter *mt, int64_t step, double loss,
                        double norm)
{
	if (r->metrics_fd < 0)
		return 0;
	struct figures f;
	struct metrics_line l;
	figures_now(r, mt, &f);
	metrics_begin(&l);
	metrics_num(&l, "step", "%.0f", (double)step);
	metrics_num(&l, "loss", "%.9g", loss);
	metrics_num(&l, "lr", "%.9g", (double)lr_at(&r->o, step - 1));
	if (r->o.grad_clip > 0)
		metrics_num(&l, "grad_norm", "%.6g", norm);
	metrics_num(&l, "tokens", "%.0f", (double)step * r->o.batch * r->T * r->accum);
	metrics_num(&l, "tokens_per_s", "%.6g", f.rate);
	metrics_num(&l, "tflops", "%.6g", f.tflops);
	if (r->o.peak_tflops > 0)
		metrics_num(&l, "mfu", "%.6g", f.mfu);
	metrics_num(&l, "mem_gib", "%.4f", f.mem_gib);
	metrics_num(&l, "time_s", "%.3f", f.el);
	return metrics_write(&l, r->metrics_fd, PROG, r->o.metrics);
}

/* Reads the loss of the micro-batch in flight (one behind the newest: the model keeps
 * the 16 most recent); the step's last one completes its mean of the micro-batches
 * and, with --grad-clip, its gradient norm, and prints that step's progress line. */
static int take_loss(struct run *r, struct meter *mt)
{
	int status = -1;
	if (mt->prev_ticket >= 0) {
		double l, norm = 0;
		CLI_CHECK_GOTO(sf_model_loss(r->m, mt->prev_ticket, &l), done);
		mt->part += l, mt->part_n++;
		if (mt->part_n == r->accum) {
			if (r->o.grad_clip > 0)
				CLI_CHECK_GOTO(sf_model_grad_norm(r->m, mt->prev_ticket, &norm), done);
			l = mt->part / r->accum;
			mt->part = 0, mt->part_n = 0;
			mt->since_loss += l, mt->since_n++, mt->eval_loss += l, mt->eval_n++;
			mt->since_norm += norm;
			if (r->loss_log &&
			    fprintf(r->loss_log, "%lld %.9g\n", (long long)mt->prev_step, l) < 0) {
				fprintf(stderr, PROG ": cannot write --loss-log %s\n",
				        r->o.loss_log);
				goto done;
			}
			mt->read_here++;
			if (metrics_step(r, mt, mt->prev_step, l, norm) < 0)
				goto done;
			print_progress(r, mt, mt->prev_step);
		}
		mt->prev_ticket = -1;
	}
	status = 0;
done:
	return status;
}

/* Every --eval-every steps: the validation loss (the step's own loss read first). */
/* sf_model_stats's comm figures, as struct run's host_comm counts them */
static int comm_figures(const struct run *r, double v[4])
{
	struct sf_model_stats st;
	int rc = sf_model_stats(r->m, &st);
	if (rc < 0)
		return rc;
	v[0] = st.comm_seconds, v[1] = st.comm_cpu_seconds;
	v[2] = st.comm_worker_cpu_seconds, v[3] = st.comm_bytes;
	return 0;
}

/* act(r, arg), a checkpoint or an evaluation between steps (act reports its own
 * failure), with what its collectives cost added to outside (as host_comm counts it) */
static int outside_steps(struct run *r, int (*act)(struct run *, void *), void *arg,
                         double outside[4])
{
	int status = -1;
	double a[4], b[4];
	CLI_CHECK_GOTO(comm_figures(r, a), done);
	if (act(r, arg) < 0)
		goto done;
	CLI_CHECK_GOTO(comm_figures(r, b), done);
	for (int i = 0; i < 4; i++)
		outside[i] += b[i] - a[i];
	status = 0;
done:
	return status;
}

static int save_act(struct run *r, void *unused)
{
	(void)unused;
	return save(r);
}

static int evaluate_act(struct run *r, void *vl)
{
	int status = -1;
	CLI_CHECK_GOTO(evaluate(r, vl), done);
	status = 0;
done:
	return status;
}

/* The evaluation, when this step has one */
static int maybe_evaluate(struct run *r, struct meter *mt, double *vl, double outside[4])
{
	int status = -1;
	if (r->step % r->o.eval_every != 0 && r->step != last_step(&r->o))
		return 0;
	if (take_loss(r, mt) < 0)
		goto done;
	if (outside_steps(r, evaluate_act, vl, outside) < 0)
		goto done;
	if (r->rank == 0) {
		printf("step %lld val_loss %.4f train_loss %.4f time %.1f\n", (long long)r->step,
		       *vl, mt->eval_n ? mt->eval_loss / (double)mt->eval_n : 0.0,
		       cli_now() - mt->t_start);
		fflush(stdout);
		if (r->metrics_fd >= 0) {
			struct metrics_line l;
			metrics_begin(&l);
			metrics_word(&l, "kind", "eval");
			metrics_num(&l, "step", "%.0f", (double)r->step);
			metrics_num(&l, "val_loss", "%.9g", *vl);
			metrics_num(&l, "train_loss", "%.9g",
			            mt->eval_n ? mt->eval_loss / (double)mt->eval_n : NAN);
			metrics_num(&l, "time_s", "%.3f", cli_now() - mt->t_start);
			if (metrics_write(&l, r->metrics_fd, PROG, r->o.metrics) < 0)
				goto done;
		}
	}
	mt->eval_loss = 0, mt->eval_n = 0;
	status = 0;
done:
	return status;
}

/* The steps from r->step to --steps (or --max-steps). One step stays in flight while
 * the next is submitted: its loss, and so its progress line, comes once the next is
 * submitted, or before a checkpoint or an evaluation, or after the last step. */
static int train(struct run *r, double *vl)
{
	const struct options *o = &r->o;
	struct meter mt = {.t_start = cli_now(), .prev_ticket = -1};
	int status = -1;
	int64_t end = last_step(o);
	double first[4] = {0}, last[4], outside[4] = {0};
	while (r->step < end) {
		double cpu0 = cli_thread_cpu_ms();
		float lr = lr_at(o, r->step);
		CLI_CHECK_GOTO(sf_model_set_lr(r->m, lr), done);
		const int32_t *ids[1] = {r->x};
		struct sf_batch batch = {.nint_inputs = 1, .int_inputs = ids, .labels = r->y};
		int64_t ticket;
		/* micro-batch j of step s is training batch s K + j: K = 1 is the plain run */
		for (int j = 0; j < r->accum; j++) {
			CLI_CHECK_GOTO(draw(r, SF_TEXT_TRAIN, r->step * r->accum + j), done);
			if (j + 1 < r->accum)
				CLI_CHECK_GOTO(sf_model_accumulate(r->m, &batch, &ticket), done);
			else
				CLI_CHECK_GOTO(sf_model_step(r->m, &batch, &ticket), done);
			if (take_loss(r, &mt) < 0)
				goto done;
			mt.prev_ticket = ticket;
			mt.prev_step = r->step + 1;
		}
		r->step++, mt.done_here++;
		if (mt.done_here == 1) { /* the host line's window starts after the first step */
			CLI_CHECK_GOTO(comm_figures(r, first), done);
			memset(outside, 0, sizeof outside);
		} else {
			r->host_main_ms += cli_thread_cpu_ms() - cpu0;
			r->host_steps++;
		}
		/* checkpoints and evaluations stay out of the host line; they wait for the step,
		 * so its loss is read (and its line printed) first at no cost */
		if (async_finish(r, 0) < 0)
			goto done;
		if (o->ckpt_every && r->step % o->ckpt_every == 0 &&
		    (take_loss(r, &mt) < 0 || outside_steps(r, save_act, NULL, outside) < 0))
			goto done;
		if (maybe_evaluate(r, &mt, vl, outside) < 0)
			goto done;
	}
	if (take_loss(r, &mt) < 0)
		goto done;
	if (r->host_steps > 0) {
		CLI_CHECK_GOTO(comm_figures(r, last), done);
		for (int i = 0; i < 4; i++)
			r->host_comm[i] = last[i] - first[i] - outside[i];
	}
	if (o->ckpt_dir && (save(r) < 0 || async_finish(r, 1) < 0))
		goto done;
	status = 0;
done:
	return status;
}

/* SplitMix64: the sampling stream of one sample, from (seed, sample). */
static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int desc(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* One id from logits z (V) at temperature t among the top k (0: all); p and sorted
 * are V scratch values. */
static int sample_byte(const float *z, int V, float t, int k, uint64_t *rng, double *p,
                       float *sorted)
{
	memcpy(sorted, z, (size_t)V * sizeof *sorted);
	qsort(sorted, (size_t)V, sizeof *sorted, desc);
	float kth = k > 0 && k < V ? sorted[k - 1] : -INFINITY; /* smaller logits are out */
	double mx = sorted[0], sum = 0;
	for (int c = 0; c < V; c++) {
		p[c] = z[c] >= kth ? exp(((double)z[c] - mx) / t) : 0.0;
		sum += p[c];
	}
	double u = (double)(mix(rng) >> 11) * 0x1.0p-53 * sum;
	for (int c = 0; c < V; c++) {
		u -= p[c];
		if (u < 0)
			return c;
	}
	return V - 1;
}

/* Rank 0's --sample sequences of L ids each, printed as text: bytes, or the decode
 * table's bytes of each id */
static int print_samples(const struct run *r, const int32_t *all, int L)
{
	char *text = NULL;
	size_t cap = 0, len = (size_t)L;
	int status = -1;
	if (r->o.train_tokens) {
		cap = (size_t)L * 256; /* at most 255 bytes an id */
		text = malloc(cap);
	} else
		text = malloc((size_t)L);
	if (!text) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	for (int i = 0; i < r->o.sample; i++) {
		const int32_t *ids = all + (size_t)i * L;
		if (r->o.train_tokens)
			CLI_CHECK_GOTO(sf_vocab_decode(&r->vocab, ids, L, text, cap, &len), done);
		else
			for (int k = 0; k < L; k++)
				text[k] = (char)ids[k];
		printf("sample %d:\n", i + 1);
		fwrite(text, 1, len, stdout);
		printf("\n");
	}
	fflush(stdout);
	status = 0;
done:
	free(text);
	return status;
}

/* --prompt as GPT-2's BPE ids of the decode table (token files): *ids (P of them,
 * freed by the caller) */
static int prompt_ids(const struct run *r, int32_t **ids, int *P)
{
	size_t n = strlen(r->o.prompt);
	int64_t count = 0;
	int status = -1;
	*ids = malloc((n + 1) * sizeof **ids); /* at most one id a byte */
	if (!*ids) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	CLI_CHECK_GOTO(sf_vocab_encode(&r->vocab, r->o.prompt, n, *ids, (int64_t)n + 1, &count), done);
	*P = (int)count;
	status = 0;
done:
	if (status) {
		free(*ids);
		*ids = NULL;
	}
	return status;
}

/* Every rank's sequences continue the prompt (bytes; with token files the decode
 * table's end-of-text id) for --tokens ids (a window of the last T is fed each time;
 * the forward runs on the whole batch, as sf_model_predict does); rank 0 prints the
 * first --sample of them. Ids are drawn among the decode table's (--vocab may be
 * larger, padded). */
static int generate(struct run *r)
{
	const struct options *o = &r->o;
	int tokens = o->train_tokens != NULL;
	int32_t *prompt = NULL;
	int status = -1, P = tokens ? 1 : (int)strlen(o->prompt), L;
	if (tokens && o->prompt && prompt_ids(r, &prompt, &P) < 0)
		return -1;
	L = P + o->gen_tokens;
	int V = tokens ? r->vocab.n : r->V;
	int32_t *seq = calloc((size_t)r->rows * (size_t)L + 1, sizeof *seq);
	uint64_t *rng = calloc((size_t)r->rows + 1, sizeof *rng);
	double *p = malloc((size_t)V * sizeof *p);
	float *sorted = malloc((size_t)V * sizeof *sorted);
	int32_t *all = NULL;
	if (!seq || !rng || !p || !sorted) {
		fprintf(stderr, PROG ": out of memory\n");
		goto done;
	}
	for (int i = 0; i < r->rows; i++) {
		for (int k = 0; k < P; k++)
			seq[(size_t)i * L + k] = prompt   ? prompt[k]
			                         : tokens ? (r->vocab.eot >= 0 ? r->vocab.eot : 0)
			                                  : (uint8_t)o->prompt[k];
		rng[i] = o->seed * 0x100000001b3ull + (uint64_t)(r->first + i);
	}
	for (int len = P; len < L; len++) {
		int start = len > r->T ? len - r->T : 0, n = len - start;
		memset(r->x, 0, (size_t)r->rows * r->T * sizeof(int32_t));
		for (int i = 0; i < r->rows; i++)
			memcpy(r->x + (size_t)i * r->T, seq + (size_t)i * L + start,
			       (size_t)n * sizeof *seq);
		const int32_t *ids[1] = {r->x};
		struct sf_batch batch = {.nint_inputs = 1, .int_inputs = ids};
		CLI_CHECK_GOTO(sf_model_predict(r->m, &batch, r->logits), done);
		for (int i = 0; i < r->rows; i++) {
			const float *z = r->logits + ((size_t)i * r->T + (size_t)(n - 1)) * r->V;
			seq[(size_t)i * L + len] =
			    sample_byte(z, V, o->temperature, o->top_k, &rng[i], p, sorted);
		}
	}
	/* rank 0 gathers every rank's sequences (ranks hold rows / N each; with TP, the
	 * first rank of each TP group its group's; with CP, of each CP group) */
	int *counts = calloc((size_t)r->size, sizeof(int)),
	    *displs = calloc((size_t)r->size, sizeof(int));
	int mine = counts_rows(r) ? r->rows * L : 0; /* a TP (CP) group's, dp place's rows once */
	if (!counts || !displs) {
		free(counts);
		free(displs);
		goto done;
	}
	MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
	for (int i = 1; i < r->size; i++)
		displs[i] = displs[i - 1] + counts[i - 1];
	if (r->rank == 0)
		all = malloc(((size_t)r->o.batch * (size_t)L + 1) * sizeof *all);
	MPI_Gatherv(seq, mine, MPI_INT32_T, all, counts, displs, MPI_INT32_T, 0,
	            MPI_COMM_WORLD);
	free(counts);
	free(displs);
	if (r->rank == 0 && all && print_samples(r, all, L) < 0)
		goto done;
	status = 0;
done:
	free(seq);
	free(rng);
	free(p);
	free(sorted);
	free(all);
	free(prompt);
	return status;
}

int main(int argc, char **argv)
{
	struct run r = {.saved = -1, .metrics_fd = -1, .async_step = -1, .cp = 1};
	int status = 1;
	double vl = NAN;
	cli_prog = PROG;
	cli_usage = usage;
	if (check_sections())
		return 2;
	/* a job file's options first, the command line's after them (a later one wins) */
	const char *job = job_path(argc, argv);
	if (!job && argc > 1 && !strcmp(argv[argc - 1], "--job"))
		return cli_bad_usage("option --job needs a value");
	if (job && job_load(job, argc, argv, sections, NSECTIONS, flags, NFLAGS, &argc, &argv))
		return 2;
	r.job = job, r.argc = argc, r.argv = argv;
	int prc = parse(argc, argv, &r.o);
	if (prc)
		return prc == 1 ? 0 : 2;

	CLI_CHECK_ALIKE_GOTO(sf_init(&argc, &argv, &r.ctx), done);
	CLI_CHECK_GOTO(sf_context_world(r.ctx, &r.rank, &r.size), done);
	if (load_data(&r) < 0 || build_model(&r) < 0)
		goto done;
	if (restore(&r) < 0) {
		r.agreed = 1;
		goto done;
	}
	print_banner(&r);
	if (r.o.export_init_path && export_weights(&r, r.o.export_init_path) < 0)
		goto done;
	if (r.o.loss_log && r.rank == 0 && !(r.loss_log = fopen(r.o.loss_log, "w"))) {
		fprintf(stderr, PROG ": cannot write --loss-log %s: %s\n", r.o.loss_log,
		        strerror(errno));
		goto done;
	}
	if (r.o.metrics && r.rank == 0 && metrics_open(r.o.metrics, r.step, &r.metrics_fd, PROG) < 0)
		goto done;
	if (train(&r, &vl) < 0)
		goto done;
	if (r.metrics_fd >= 0) /* the curves of the whole file, resumed runs' steps too */
		(void)metrics_plot(r.o.metrics, PROG);
	if (r.loss_log) {
		int bad = fclose(r.loss_log);
		r.loss_log = NULL;
		if (bad) {
			fprintf(stderr, PROG ": cannot write --loss-log %s\n", r.o.loss_log);
			goto done;
		}
	}
	if (isnan(vl) && evaluate(&r, &vl) < 0) /* nothing left to train: resumed at the end */
		goto done;
	if (r.rank == 0) {
		printf("val_loss %.4f\n", vl);
		fflush(stdout);
	}
	if (report_memory(&r) < 0)
		goto done;
	if (r.o.export_path && export_weights(&r, r.o.export_path) < 0)
		goto done;
	if (r.o.sample > 0 && r.o.gen_tokens > 0 && generate(&r) < 0)
		goto done;
	status = 0;
done:
	free(r.x);
	free(r.y);
	free(r.logits);
	if (r.loss_log)
		fclose(r.loss_log);
	if (r.metrics_fd >= 0)
		close(r.metrics_fd);
	sf_text_free(&r.text);
	sf_tokens_free(&r.tokens[0]);
	sf_tokens_free(&r.tokens[1]);
	sf_vocab_free(&r.vocab);
	if (r.m && sf_model_destroy(r.m) < 0)
		status = 1;
	else if (r.m && r.rank == 0 && r.trace[0]) /* destroy wrote the trace */
		fprintf(stderr,
		        PROG ": trace: %s.rank<r>.json (Perfetto, chrome://tracing), the overlap "
		        "report %s.overlap.txt, the timeline %s.timeline.svg\n",
		        r.trace, r.trace, r.trace);
	if (r.ctx && status != 0 && r.size > 1 && !r.agreed) {
		fprintf(stderr, PROG ": rank %d failed; aborting the job\n", r.rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (r.ctx)
		sf_finalize(r.ctx);
	return status;
}
