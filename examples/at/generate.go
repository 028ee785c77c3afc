package at

//go:generate go tool controller-gen crd rbac:roleName=at-manager paths=./... output:crd:dir=config/crd output:rbac:dir=config/rbac
