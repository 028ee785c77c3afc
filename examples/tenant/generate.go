package tenant

//go:generate go tool controller-gen crd rbac:roleName=tenant-manager paths=./... output:crd:dir=config/crd output:rbac:dir=config/rbac
