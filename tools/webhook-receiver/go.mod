module quarters.dev/tools/webhook-receiver

go 1.26.0

require quarters.dev/pkg v0.0.0

replace quarters.dev/pkg => ../../pkg
