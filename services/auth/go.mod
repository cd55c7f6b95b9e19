module quarters.dev/services/auth

go 1.26.7

require (
	quarters.dev/pkg v0.0.0
	quarters.dev/proto-events v0.0.0
)

replace (
	quarters.dev/pkg => ../../pkg
	quarters.dev/proto-events => ../../proto-events
	quarters.dev/tools/devstack => ../../tools/devstack
)
