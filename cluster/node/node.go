// Package node is the collector that runs on one node of a multi-node
// boot: it finds every Python process there, reads their stacks with
// stacks/live, their rank hints from /proc/PID/environ and process titles,
// and the node's identity, and writes all of it as one JSON document
// (bringup.node-stacks/v1) on stdout. It opens no port and keeps nothing.
// The fan-out in package cluster runs it through the cluster's launcher
// and merges the documents.
package node

import (
	"time"

	"github.com/bringup-tool/bringup/record"
)

// Schema is the id of the collector's JSON document.
const Schema = "bringup.node-stacks/v1"

// Doc is what the collector reports for one node.
type Doc struct {
	Schema    string    `json:"schema"`
	Node      Identity  `json:"node"`
	Scope     Scope     `json:"scope"`
	Processes []Process `json:"processes"`
	// Failures are the Python processes in scope that could not be read.
	Failures []Failure `json:"failures"`
}

// Identity says which machine (or container) answered, and when.
type Identity struct {
	Hostname string `json:"hostname"`
	// BootID is /proc/sys/kernel/random/boot_id: two documents with the
	// same boot id and pid namespace come from the same process table.
	BootID string `json:"boot_id"`
	// PIDNamespace is the inode of /proc/self/ns/pid; pids are only
	// unique within one (node, pid namespace).
	PIDNamespace uint64 `json:"pid_namespace"`
	// CapturedAt is when the capture started, FinishedAt when it ended
	// (UTC, this node's clock).
	CapturedAt time.Time `json:"captured_at"`
	FinishedAt time.Time `json:"finished_at"`
	// LauncherName is the name the fan-out reached this node by (the
	// Slurm node name, the ssh host, the pod); SlurmNode is SLURMD_NODENAME
	// when the collector runs in a Slurm step.
	LauncherName string `json:"launcher_name,omitempty"`
	SlurmNode    string `json:"slurm_node,omitempty"`
	UID          int    `json:"uid"`
	Version      string `json:"bringup_version"`
}

// Scope is which processes were looked at.
type Scope struct {
	// SlurmJob and SlurmStep, when set, keep only processes of that job
	// (and step); SkippedStep is the collector's own step, left out.
	SlurmJob    string `json:"slurm_job,omitempty"`
	SlurmStep   string `json:"slurm_step,omitempty"`
	SkippedStep string `json:"skipped_step,omitempty"`
	// Python is how many Python processes were found in scope.
	Python int `json:"python_processes"`
	// Unreadable counts Python processes whose environment could not be
	// read (another user's), so whether they belong to the job is unknown;
	// they are left out when a job is given.
	Unreadable int `json:"unreadable_environ,omitempty"`
}

// Process is one captured process with its rank hints. The embedded
// record.Process is exactly what `stacks --pid` captures.
type Process struct {
	record.Process
	Hints Hints `json:"hints"`
	// RankFrom says which hint named Rank: "RANK", "title",
	// "SLURM_PROCID", or empty when unranked.
	RankFrom string `json:"rank_from,omitempty"`
	// World is the number of ranks the process's launcher started
	// (WORLD_SIZE, or SLURM_STEP_NUM_TASKS for a Slurm task); 0 unknown.
	World int `json:"world,omitempty"`
}

// Hints are the identity variables of one process as its initial
// environment (/proc/PID/environ, fixed at exec) holds them. Nothing
// else of the environment is kept.
type Hints struct {
	Rank           *int   `json:"rank,omitempty"`
	LocalRank      *int   `json:"local_rank,omitempty"`
	WorldSize      *int   `json:"world_size,omitempty"`
	LocalWorldSize *int   `json:"local_world_size,omitempty"`
	GroupRank      *int   `json:"group_rank,omitempty"`
	SlurmJobID     string `json:"slurm_job_id,omitempty"`
	SlurmStepID    string `json:"slurm_step_id,omitempty"`
	SlurmProcID    *int   `json:"slurm_procid,omitempty"`
	SlurmLocalID   *int   `json:"slurm_localid,omitempty"`
	SlurmNodeID    *int   `json:"slurm_nodeid,omitempty"`
	SlurmStepTasks *int   `json:"slurm_step_num_tasks,omitempty"`
	LWSWorkerIndex *int   `json:"lws_worker_index,omitempty"`
	JobIndex       *int   `json:"job_completion_index,omitempty"`
	// EnvironError is why /proc/PID/environ could not be read.
	EnvironError string `json:"environ_error,omitempty"`
}

// Failure is a Python process in scope that could not be captured.
type Failure struct {
	PID  int    `json:"pid"`
	Name string `json:"name,omitempty"`
	// Kind: "permission" (no ptrace access: the fix is in Error),
	// "unsupported" (a CPython pyproc has no layout for, and no py-spy),
	// or "error".
	Kind  string `json:"kind"`
	Error string `json:"error"`
}

// Failure kinds.
const (
	FailPermission  = "permission"
	FailUnsupported = "unsupported"
	FailError       = "error"
)
