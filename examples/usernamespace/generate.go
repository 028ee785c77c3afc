package usernamespace

//go:generate go tool controller-gen crd rbac:roleName=usernamespace-manager paths=./... output:crd:dir=config/crd output:rbac:dir=config/rbac
