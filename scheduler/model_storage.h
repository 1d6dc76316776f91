/*
 * model_storage.h — a model's storage (scheduler/model_storage.c): the buffers and
 * StarPU handles of its units, nodes and shared state, allocated from two tables (a
 * unit's vectors, the model's shared buffers), the memory plan checked before, and
 * the floats sf_model_stats counts. Built on the layout (model_layout.h).
 */
#ifndef SF_SCHEDULER_MODEL_STORAGE_H
#define SF_SCHEDULER_MODEL_STORAGE_H

#include "scheduler/model.h"

/* n floats, 64-byte aligned and zeroed (in a simulation, SMPI's folded memory), into
 * *p; SF_ERR_NOMEM naming `what`. Released with _sf_free_floats (NULL is fine). */
int _sf_alloc_floats(float **p, size_t n, const char *what);
void _sf_free_floats(float *p);
/* n floats that only tasks read and write (a node's activations, their gradients, its
 * saved buffer): _sf_alloc_floats's, but in a simulation bare address space that no
 * page backs, shared by the buffers of one size class (nothing is written: no task body
 * runs). Released with _sf_free_task_only (NULL is fine), never _sf_free_floats. */
int _sf_alloc_task_only(float **p, size_t n, const char *what);
void _sf_free_task_only(float *p);

/* starpu_data_acquire(h, mode) with its result checked: SF_OK, or SF_ERR_STARPU (then
 * nothing is acquired and the caller releases nothing). A success is undone with
 * starpu_data_release(h). */
int _sf_data_acquire(starpu_data_handle_t h, enum starpu_data_access_mode mode);

/* The handle of each unit's squared gradient sums (h_sq); after _sf_size_units. */
int _sf_sq_register(struct sf_model *m);
/* SHARDFLOW_MEMORY_CHECK: what this rank will hold, planned before any allocation,
 * against the limit the kernel enforces; SF_ERR_NOMEM saying what to change. */
int _sf_check_memory(const struct sf_model *m);
/* Floats of node n's buffers that a pipeline's micro-batch has one set of (what this
 * rank keeps of its activation, its gradient and saved buffer, by m->nodes[n].hold;
 * an integer input's ids count as floats). */
size_t _sf_node_set_floats(const struct sf_model *m, int n);
/* The nodes' activations, their gradients and saved buffers, and the buffers that
 * recomputed nodes share (SHARDFLOW_RECOMPUTE=units). */
int _sf_alloc_nodes(struct sf_model *m);
/* Every unit's vectors, then its initial parameters (identical on every rank and
 * world size; none in simulated time), then its optimizer runs. */
int _sf_build_units(struct sf_model *m);
/* The local-mode sums of gradient accumulation (P floats a unit) and, for replicated
 * units (sharding none), the reduced gradient the optimizer reads after a sum
 * (gshard, P floats): made by sf_model_create when SHARDFLOW_GRAD_ACCUM > 1, else at
 * the first sf_model_accumulate (a model that never accumulates never pays them). */
int _sf_model_accum_buffers(struct sf_model *m);
/* The model's shared buffers (gather ring, gradient slots, the collectives' scratch)
 * and the collectives' arguments on them, comm order, labels, losses, clipping. */
int _sf_build_buffers(struct sf_model *m);

/* The floats of the unit vectors and shared buffers allocated now, by what
 * struct sf_model_stats counts them as. */
struct _sf_held_floats {
	size_t params, grads, optim, buffers;
};
void _sf_model_held_floats(const struct sf_model *m, struct _sf_held_floats *h);

/* Unregisters and frees every buffer and handle above (what is not made yet is
 * skipped); before _sf_layout_release, which frees the tables it reads. */
void _sf_storage_release(struct sf_model *m);

#endif
