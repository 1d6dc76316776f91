/*
 * manifest.h — a checkpoint's manifest.json, parsed and checked without a model: the
 * part of sf_checkpoint_load() that reads untrusted text, kept apart so that a fuzz
 * target (fuzz/fuzz_manifest.c) drives exactly what a load runs. checkpoint_load.c
 * fills the expectations from the model; the format itself is described in
 * checkpoint.h.
 */
#ifndef SF_IO_MANIFEST_H
#define SF_IO_MANIFEST_H

#include "common/error.h"
#include "io/st_header.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SF_CKPT_FORMAT "shardflow-checkpoint"
#define SF_CKPT_VERSION 3 /* 3: a pipeline's files, a stage's units each (pp); 2:
                            * manifest.crc32 covers the manifest; 1 had none */
#define SF_CKPT_HEADER 24 /* bytes of a rank file's header */
/* steps, epochs and batches stay below 2^53: the planner's step + 1, a caller's
 * epoch * steps_per_epoch or a double holding them cannot overflow or round */
#define SF_CKPT_COUNT_MAX (((int64_t)1 << 53) - 1)
#define SF_CKPT_WORLD_MAX (1 << 24)

/* The names of the vectors of a unit, in file order: param, m, v (a checkpoint keeps a
 * prefix of them: the optimizer's). */
extern const char *const _sf_ckpt_vec_names[];
#define SF_CKPT_VECTORS_MAX 3

/* What the loading model expects a manifest to say. */
struct _sf_manifest_expect {
	char structure_hash[17];        /* the model's (16 hex digits) */
	char structure_hash_legacy[17]; /* and its older form (io/checkpoint.h), or "" */
	const char *const *shardings;  /* the sharding names a manifest may give ... */
	int nshardings;                /* ... (any of them loads: resharding) */
	const char *const *optimizers; /* the optimizer names ... */
	int noptimizers;               /* ... */
	int optimizer;                 /* the index of the model's one */
	const char *const *vectors;    /* the vectors per unit the model keeps, in order */
	int nvectors;
	int nunits;
	const char *const *unit_names; /* nunits */
	const size_t *unit_P;          /* nunits: parameters per unit */
};

/* A unit as a manifest records it. */
struct _sf_manifest_unit {
	const char *name;
	uint64_t P; /* parameters (the whole model's layout) */
	int stage;  /* the pipeline stage whose files hold it (0 without a pipeline) */
};

/* Everything a manifest says, validated. The strings point into the parsed text,
 * which *mf keeps until _sf_manifest_free. */
struct _sf_manifest {
	int world_size; /* the saving ranks: one file each */
	int ranks, tp;  /* the writer's whole world and its TP degree (0 and 1
	                   when not recorded: checkpoints before 2026-11-28) */
	int pp;         /* the writer's pipeline stages (1: none, or not recorded): stage
	                   s's units are in files [s n, (s+1) n), n = world_size / pp */
	const char *sharding, *optimizer, *structure_hash, *dtype;
	int64_t model_steps;
	int64_t steps_per_update; /* info.step = model_steps x this; 0: not recorded */
	struct sf_checkpoint_info info;
	int nvectors; /* a prefix of _sf_ckpt_vec_names */
	int nunits;
	struct _sf_manifest_unit *units; /* nunits */
	uint64_t nparams;                /* the units' P summed: the model's parameters */
	struct _sf_st_tensor *tensors;   /* ntensors, each in the units' parameters laid
	                                    end to end; NULL when not recorded */
	int ntensors;
	uint64_t *sizes; /* world_size: bytes of each rank file */
	uint32_t *crcs;  /* world_size: CRC-32 of each rank file */
	void *json;      /* the parsed text (jansson), owning the strings */
};

/* Floats per rank of a unit of P parameters saved by nranks ranks. */
static inline size_t _sf_ckpt_shard(size_t P, int nranks)
{
	return (P + (size_t)nranks - 1) / (size_t)nranks;
}

/* Files per pipeline stage of a manifest (world_size without a pipeline): unit u is
 * cut in that many slices, in files [stage n, (stage + 1) n). */
static inline int _sf_ckpt_stage_files(const struct _sf_manifest *mf)
{
	return mf->world_size / mf->pp;
}

/* The name of rank r's file in a step directory (rank-<5 digits>.bin). */
void _sf_ckpt_rank_name(char *name, size_t size, int r);

/* Parses len bytes of manifest text (has_crc: manifest.crc32 was present and matched)
 * and checks every field against *e: format and version, world size, sharding, dtype,
 * structure hash, optimizer, counts in 0..2^53-1 (info.step against model_steps where
 * info_steps_per_update says how they relate), vectors, units (names and sizes),
 * one file per saving rank with the size the layout implies and a CRC-32. With e NULL
 * (no model: tools/shardflow-ckpt) the same checks but those naming the model, and the
 * tensors too, which a loader (having its model's) does not read. `where` names
 * the file in messages. On success *mf owns its arrays (_sf_manifest_free); on failure
 * nothing is left allocated. Errors: SF_ERR_IO (malformed), SF_ERR_INVALID (another
 * model's checkpoint), SF_ERR_NOMEM. */
int _sf_manifest_parse(const struct _sf_manifest_expect *e, const char *text, size_t len,
                       const char *where, bool has_crc, struct _sf_manifest *mf);
void _sf_manifest_free(struct _sf_manifest *mf);

#endif
