// Package stacks is the model of Python stack dumps taken from one or many
// ranks, and the analysis bringup runs over them: recursion collapse,
// bucketing at a similarity level (after maruel/panicparse), the path all
// ranks share and where they diverge, outlier ranks, idle auxiliary threads,
// stuck versus slow across snapshots, and the signature rules that name a
// hang. It never parses text (ingest/stackdump does) and never prints
// (report/stacks does).
package stacks

import "github.com/bringup-tool/bringup/record"

// The stack model is the shared vocabulary's (record): ingest/stackdump and
// live captures build it below this package.
type (
	Process = record.Process
	Thread  = record.Thread
	Warning = record.Warning
)

// Source says where a process's stacks came from.
const (
	SourceFile = record.SourceFile
	SourceLive = record.SourceLive
)
