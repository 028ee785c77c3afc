package testenv

// ChildProcesses lets the external tests see which processes the control
// plane runs.
var ChildProcesses = childProcesses
