module quarters.dev/services/catalog

go 1.26.7

require quarters.dev/pkg v0.0.0

replace (
	quarters.dev/pkg => ../../pkg
	quarters.dev/tools/devstack => ../../tools/devstack
)
