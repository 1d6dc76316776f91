/*
 * fxt.h — the end of a run traced with FxT: the ranks' FxT files merged by StarPU's
 * starpu_fxt_tool, and the overlap report of the merged trace (scheduler/fxt.c).
 *
 * Recording is set up by sf_init (scheduler/runtime.c: STARPU_FXT_* and the ranks'
 * clock alignment event); this is what sf_finalize runs once every rank's file is
 * complete. Kept apart from the runtime because it is a post-processing job of its
 * own: it spawns a tool and reads and writes files, and none of it touches StarPU's
 * or the communicator's state.
 */
#ifndef SF_SCHEDULER_FXT_H
#define SF_SCHEDULER_FXT_H

/* Rank 0, after StarPU has shut down on every rank and the communicator is gone:
 * merges <prefix>.fxt/prof_file_<user>_<rank> (rank 0 .. nranks-1) into
 * <prefix>.fxt/tasks.rec (starpu_fxt_tool's other files beside it, its output in
 * starpu_fxt_tool.log) and writes that trace's overlap report as
 * <prefix>.fxt.overlap.txt, .overlap.json and .timeline.svg. 0 or a negative status
 * (a rank's file missing, the tool failing, a file not written); SF_OK at once in a
 * build without FxT. */
int _sf_fxt_merge(const char *prefix, int nranks);

#endif
