//go:build race

package docs_test

// The go commands of TestCodeBlocks build with -race, as this test binary
// was built: they reuse the race-compiled packages of make test's vet and
// test builds instead of compiling the whole dependency tree a second time
// without it (on a cold build cache that took longer than the test's
// timeout, with the other suites beside it).
func init() { goBuildFlags = []string{"-race"} }
