package node

import (
	"fmt"

	"github.com/bringup-tool/bringup/ingest/stackdump"
	"github.com/bringup-tool/bringup/record"
)

// Rank sources, in the order they are tried.
const (
	FromRANK   = "RANK"         // torchrun and most launchers: RANK/WORLD_SIZE
	FromTitle  = "title"        // VLLM::Worker_TP3, sglang::scheduler_TP3
	FromSlurm  = "SLURM_PROCID" // a task of an srun step
	FromNobody = ""
)

// ResolveRanks names each process's rank from its hints, first hit wins:
// RANK from the environment; the rank in an engine's process title; the
// Slurm task id (SLURM_PROCID) of a step, but only where no process of
// the same step on this node carries RANK: under `srun torchrun` the task
// id is the agent's, not a torch rank. A process of the batch step (no
// SLURM_STEP_ID) is not a task of a step and gets no rank from Slurm.
func ResolveRanks(procs []Process) {
	withRANK := map[string]bool{} // job.step → some process carries RANK
	for _, p := range procs {
		if p.Hints.Rank != nil && p.Hints.SlurmJobID != "" {
			withRANK[p.Hints.SlurmJobID+"."+p.Hints.SlurmStepID] = true
		}
	}
	for i := range procs {
		p := &procs[i]
		h := p.Hints
		switch {
		case h.Rank != nil:
			r := record.NoRank
			r.Global = *h.Rank
			p.RankInfo, p.Rank, p.RankFrom = r, r.Key(), FromRANK
			if h.WorldSize != nil {
				p.World = *h.WorldSize
			}
		case p.Rank != "" && p.Rank == stackdump.RankFromTitle(p.Name).Key():
			// stacks/live read it from the title.
			p.RankFrom = FromTitle
		case h.SlurmProcID != nil && h.SlurmStepID != "" && !withRANK[h.SlurmJobID+"."+h.SlurmStepID]:
			r := record.NoRank
			r.Global = *h.SlurmProcID
			p.RankInfo, p.Rank, p.RankFrom = r, r.Key(), FromSlurm
			if h.SlurmStepTasks != nil {
				p.World = *h.SlurmStepTasks
			}
		default:
			// A rank stacks/live took from the environment (PMI_RANK,
			// which srun sets, is the task id of a torchrun agent too) is
			// not one: the hints above are this package's reading of it.
			if p.Rank != "" {
				t := stackdump.RankFromTitle(p.Name)
				if t == (record.Rank{}) {
					t = record.NoRank
				}
				p.RankInfo, p.Rank = t, t.Key()
			}
			p.RankFrom = FromNobody
		}
	}
}

// Describe is the hints of a process in one line, for a report:
// "RANK=2 LOCAL_RANK=0 WORLD_SIZE=4 SLURM_PROCID=1".
func (h Hints) Describe() string {
	s := ""
	add := func(k string, v *int) {
		if v != nil {
			if s != "" {
				s += " "
			}
			s += fmt.Sprintf("%s=%d", k, *v)
		}
	}
	add("RANK", h.Rank)
	add("LOCAL_RANK", h.LocalRank)
	add("WORLD_SIZE", h.WorldSize)
	add("SLURM_PROCID", h.SlurmProcID)
	add("SLURM_LOCALID", h.SlurmLocalID)
	add("LWS_WORKER_INDEX", h.LWSWorkerIndex)
	return s
}
