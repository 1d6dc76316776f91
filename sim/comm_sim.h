/*
 * comm_sim.h — what the rest of a simulation build asks of the simulated MPI backend
 * (sim/comm_sim.c, docs/scale.md). The backend itself plugs into comm/'s table
 * (_sf_comm_backend_plug) before the program's main runs, so nothing calls it by name.
 */
#ifndef SF_SIM_COMM_SIM_H
#define SF_SIM_COMM_SIM_H

#include <stdbool.h>

/* true when the step's collectives go by NCCL's cost model (SHARDFLOW_SIM_NCCL, read
 * by the simulated backend's init, sim_init): then they move no byte of the model's
 * buffers */
bool _sf_comm_sim_modelled(void);

#endif
