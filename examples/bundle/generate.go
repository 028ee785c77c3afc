package bundle

//go:generate go tool controller-gen crd rbac:roleName=bundle-manager paths=./... output:crd:dir=config/crd output:rbac:dir=config/rbac
