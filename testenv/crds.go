package testenv

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// InstallCRDs installs CRDs into the running control plane and returns once
// the API server serves them and, with [WithControllerManager], once the
// garbage collector knows their kinds.
//
// The garbage collector discovers new kinds only on its own resync, every
// 30 seconds, and then has to start watching them: children of a CRD
// installed after Start were seen collected up to 41 seconds after their
// owner went. So InstallCRDs restarts the controller manager, whose garbage
// collector discovers every served kind and syncs them all before it acts;
// its readiness check (a child collected, a namespace deleted) passes only
// after that.
func (e *Environment) InstallCRDs(ctx context.Context, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.started {
		return fmt.Errorf("testenv: InstallCRDs needs a started environment")
	}
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{CRDs: crds, Scheme: e.Scheme}); err != nil {
		return fmt.Errorf("testenv: installing CRDs: %w", err)
	}
	return e.restartControllerManager(ctx)
}
