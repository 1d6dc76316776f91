/*
 * fuzz_manifest.c — the checkpoint manifest parser of sf_checkpoint_load (io/manifest.c)
 * on arbitrary text.
 *
 * Input: one flags byte, then the text of manifest.json. Flags bit 2: parsed without a
 * model's expectations (tools/shardflow-ckpt). Flags bit 0: manifest.crc32 was
 * present (a version-2 manifest needs it); bit 1: the loading model uses AdamW (three
 * vectors per unit) rather than SGD (two). The model expects structure hash
 * 0123456789abcdef and three units "fc1" (12 parameters), "fc2" (5) and "head" (7) —
 * the seeds (fuzz/make_corpus.py) match it. Any result but a crash is fine; a success
 * must describe a checkpoint a load can use: counts in range, one file per saving rank
 * with the size the layout implies.
 */
#include "fuzz/common.h"
#include "io/manifest.h"
#include "tasks/optimizers/list.h"

/* the names sf_checkpoint_load accepts, as scheduler/config.c's tables (public as
 * sf_sharding_name and sf_optimizer_name), because this target links io/manifest.c
 * alone, not the library: the shardings' a copy, one per value of the public enum, so
 * that a new sharding fails this build until named here too; the optimizers' from
 * their files' list, as config.c's */
static const char *const shardings[] = {"full", "grad_op", "none", "hybrid"};
#define OPT_NAME(name, NAME) [SF_OPT_##NAME] = #name,
static const char *const optimizers[] = {SF_OPTIMIZER_LIST(OPT_NAME)};
_Static_assert(sizeof shardings / sizeof *shardings == SF_SHARD_COUNT, "one name per sharding");
_Static_assert(sizeof optimizers / sizeof *optimizers == SF_OPT_COUNT, "one name per optimizer");
static const char *const vectors[] = {"param", "m", "v"};
static const char *const units[] = {"fc1", "fc2", "head"};
static const size_t unit_P[] = {12, 5, 7};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init) {
		fuzz_quiet();
		init = 1;
	}
	if (size < 1)
		return 0;
	int flags = data[0];
	struct _sf_manifest_expect e = {
	    .structure_hash = "0123456789abcdef",
	    .shardings = shardings,
	    .nshardings = SF_SHARD_COUNT,
	    .optimizers = optimizers,
	    .noptimizers = SF_OPT_COUNT,
	    .optimizer = (flags & 2) ? SF_OPT_ADAMW : SF_OPT_SGD,
	    .vectors = vectors,
	    .nvectors = (flags & 2) ? 3 : 2,
	    .nunits = 3,
	    .unit_names = units,
	    .unit_P = unit_P,
	};
	/* a copy of exactly the text: ASan catches a read past its end */
	char *text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	struct _sf_manifest mf;
	/* flags bit 2: no model's expectations, as tools/shardflow-ckpt parses (the
	 * tensors read too) */
	const struct _sf_manifest_expect *ep = (flags & 4) ? NULL : &e;
	if (_sf_manifest_parse(ep, text, size - 1, "fuzz/manifest.json", flags & 1, &mf) == SF_OK) {
		if (mf.world_size < 1 || mf.world_size > SF_CKPT_WORLD_MAX || !mf.sizes || !mf.crcs ||
		    mf.model_steps < 0 || mf.model_steps > SF_CKPT_COUNT_MAX || mf.info.step < 0 ||
		    mf.info.step > SF_CKPT_COUNT_MAX || mf.info.epoch < 0 ||
		    mf.info.epoch > SF_CKPT_COUNT_MAX || mf.info.batch < 0 ||
		    mf.info.batch > SF_CKPT_COUNT_MAX)
			abort();
		uint64_t want = SF_CKPT_HEADER, P = 0;
		if (mf.nvectors < 1 || mf.nvectors > SF_CKPT_VECTORS_MAX || (ep && mf.nunits != 3))
			abort();
		for (int u = 0; u < mf.nunits; u++) {
			want +=
			    _sf_ckpt_shard(mf.units[u].P, mf.world_size) * (size_t)mf.nvectors * 4;
			P += mf.units[u].P;
			if (!mf.units[u].name || (ep && mf.units[u].P != unit_P[u]))
				abort();
		}
		if (P != mf.nparams || P > SF_CKPT_COUNT_MAX)
			abort();
		for (int i = 0; i < mf.ntensors; i++) /* every tensor inside the parameters */
			if (!mf.tensors[i].name || mf.tensors[i].off > P ||
			    mf.tensors[i].count > P - mf.tensors[i].off)
				abort();
		for (int r = 0; r < mf.world_size; r++)
			if (mf.sizes[r] != want || mf.crcs[r] > UINT32_MAX)
				abort();
		_sf_manifest_free(&mf);
	} else if (mf.sizes || mf.crcs || mf.units || mf.tensors || mf.json) {
		abort(); /* a failure leaves nothing allocated */
	}
	free(text);
	return 0;
}
