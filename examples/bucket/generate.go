package bucket

//go:generate go tool controller-gen crd rbac:roleName=bucket-manager paths=./... output:crd:dir=config/crd output:rbac:dir=config/rbac
