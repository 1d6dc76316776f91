/*
 * sync.c — sf_model_sync: wait until every task submitted so far has run.
 *
 * A file of its own because it sits below everything that waits before reading the
 * model's buffers: model.c (sf_model_stats), model_access.c (sf_model_params_get),
 * trace_write.c (before collecting the records) and io/ (checkpoints, safetensors).
 * model.c calls trace_write.c (sf_model_destroy writes a trace not yet written), so
 * the wait cannot live in model.c without the two calling each other.
 */
#include "scheduler/model.h"

SF_API int sf_model_sync(sf_model *m)
{
	if (!m)
		return SF_ERR(SF_ERR_INVALID, "sf_model_sync: model is NULL");
	int ret = starpu_task_wait_for_all();
	if (ret != 0)
		return SF_ERR(SF_ERR_STARPU, "starpu_task_wait_for_all failed (%d)", ret);
	return SF_OK;
}
