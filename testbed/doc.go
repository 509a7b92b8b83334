// Package testbed holds the tests that check what bringup makes of real
// torch.compile runs: the artifacts recorded by scripts/testbed (under
// testdata/, see testdata/MANIFEST.md), and, when the testbed's venv is
// installed, the scenarios run live under bringup watch and bringup stacks.
//
// The package has no code of its own; its tests drive the built bringup
// binary and read its --json output, as a user would.
package testbed
